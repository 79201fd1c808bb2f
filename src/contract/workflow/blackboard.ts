/**
 * The blackboard (seed 004 §7): the run's shared state, a JSON object that
 * nodes read by path (`input.text`) and write their outputs to. Paths walk own
 * properties only and never a prototype key (the schema refuses them too), so
 * a value from a client cannot reach anything but plain data.
 */

export type Blackboard = Record<string, unknown>;

const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

function segments(path: string): string[] {
  const parts = path.split('.');
  for (const part of parts) if (part === '' || FORBIDDEN.has(part)) throw new TypeError(`"${path}" is not a blackboard path`);
  return parts;
}

/** The value at `path`; undefined when any step of it is missing. Lists are indexed by number (`items.0`). */
export function readPath(board: unknown, path: string): unknown {
  let value: unknown = board;
  for (const part of segments(path)) {
    if (typeof value !== 'object' || value === null) return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** Writes `value` at `path`, making the objects on the way; a step through a non-object replaces it. */
export function writePath(board: Blackboard, path: string, value: unknown): void {
  const parts = segments(path);
  let target: Record<string, unknown> = board;
  for (const part of parts.slice(0, -1)) {
    const next = Object.prototype.hasOwnProperty.call(target, part) ? target[part] : undefined;
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      const made: Record<string, unknown> = {};
      target[part] = made;
      target = made;
    } else target = next as Record<string, unknown>;
  }
  target[parts.at(-1)!] = value;
}

/** `name -> path` read from the board: a step's inputs. */
export function mapInputs(board: unknown, inputsMap: Readonly<Record<string, string>>): Record<string, unknown> {
  const inputs: Record<string, unknown> = {};
  for (const [name, path] of Object.entries(inputsMap)) inputs[name] = readPath(board, path) ?? null;
  return inputs;
}
