/**
 * `taskDetails.llm` as the orchestrator runs it: the component's llm block,
 * checked against the AppDefinition's own schema (LlmComponentSpec, the single
 * source) with its defaults filled in where the core left them out. The core
 * sends the block it validated; one that is not is refused as a bad request
 * rather than guessed at.
 *
 * A component sends the same block on every turn, so what a block reads as is
 * kept by its JSON text (a bounded memo): cloning, filling defaults and checking
 * took more of a turn than rendering its prompt. A kept spec is frozen, since
 * every turn of the component shares it.
 */
import { Value } from '@sinclair/typebox/value';
import { firstViolation } from '../../contract/execute-contract.js';
import { LlmComponentSpec } from '../../contract/llm-component-schema.js';

export type LlmTaskSpec = LlmComponentSpec;

type Read = { spec: LlmTaskSpec } | { problem: string };

/** Blocks kept at most: an orchestrator serves one app's components; past this the memo starts again. */
const MAX_KEPT = 256;
const kept = new Map<string, Read>();

/** The task, or why it is not one. */
export function readLlmTaskSpec(raw: unknown): Read {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { problem: 'taskDetails.llm must be an object' };
  const key = JSON.stringify(raw);
  const known = kept.get(key);
  if (known !== undefined) return known;
  const read = readUncached(raw);
  if (kept.size >= MAX_KEPT) kept.clear();
  kept.set(key, deepFreeze(read));
  return read;
}

function readUncached(raw: object): Read {
  const spec = Value.Default(LlmComponentSpec, structuredClone(raw));
  const violation = firstViolation(LlmComponentSpec, spec);
  if (violation) return { problem: `taskDetails.llm${violation.path === '/' ? '' : violation.path}: ${violation.message}` };
  return { spec: spec as LlmTaskSpec };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key]);
  }
  return value;
}
