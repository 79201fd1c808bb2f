/**
 * The body of a replay or a fork (the console's routes, `uhlp runs replay|fork`):
 *
 * - replay: `{"fromStep": N, "currentRevision"?: boolean}`
 * - fork: the same and exactly one of `"set"` (a JSON merge patch of the
 *   blackboard, RFC 7396) or `"blackboard"` (a whole one, a JSON object).
 *
 * Anything else is UHLP_WORKFLOW_REPLAY_INVALID naming the field at fault.
 */
import { WorkflowReplayInvalidError } from '../shared/workflow-errors.js';
import type { ReplayRequest } from './run-replays.js';

/** Largest body of a replay or fork, bytes (a fork's whole blackboard included). */
export const MAX_REPLAY_BODY_BYTES = 256 * 1024;
/** Largest step index a body may name (a trace never holds more). */
const MAX_STEP = 1_000_000_000;

/** The request in `body` (a Buffer, or what fastify parsed), asked by `by`. */
export function replayRequestOf(body: unknown, kind: ReplayRequest['kind'], by: string): ReplayRequest {
  const bad = (field: string, reason: string): never => {
    throw new WorkflowReplayInvalidError(`${field}: ${reason}`, { field });
  };
  let value: unknown = body;
  if (Buffer.isBuffer(body)) {
    if (body.length > MAX_REPLAY_BODY_BYTES) bad('body', `is over ${MAX_REPLAY_BODY_BYTES} bytes`);
    try {
      value = JSON.parse(body.toString('utf8'));
    } catch {
      bad('body', 'is not JSON');
    }
  }
  const shape = kind === 'fork' ? '{"fromStep": N, "set": <merge patch> | "blackboard": {...}, "currentRevision"?}' : '{"fromStep": N, "currentRevision"?}';
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('body', `must be a JSON object ${shape}`);
  const record = value as Record<string, unknown>;
  const fields = kind === 'fork' ? ['fromStep', 'currentRevision', 'set', 'blackboard'] : ['fromStep', 'currentRevision'];
  for (const key of Object.keys(record)) if (!fields.includes(key)) bad(key.slice(0, 64), `is not a field of a ${kind}`);
  const fromStep = record['fromStep'];
  if (typeof fromStep !== 'number' || !Number.isInteger(fromStep) || fromStep < 0 || fromStep > MAX_STEP) bad('fromStep', 'must be the index of a step of the run, an integer from 0');
  const currentRevision = record['currentRevision'];
  if (currentRevision !== undefined && typeof currentRevision !== 'boolean') bad('currentRevision', 'must be true or false');
  const base = { kind, fromStep: fromStep as number, by, ...(currentRevision === true ? { currentRevision: true } : {}) };
  if (kind === 'replay') return base;
  const hasSet = Object.hasOwn(record, 'set');
  const hasWhole = Object.hasOwn(record, 'blackboard');
  if (hasSet === hasWhole) bad(hasSet ? 'blackboard' : 'set', 'a fork edits the blackboard with exactly one of "set" (a JSON merge patch) or "blackboard" (a whole one)');
  if (hasSet) return { ...base, edit: { set: record['set'] } };
  const whole = record['blackboard'];
  if (typeof whole !== 'object' || whole === null || Array.isArray(whole)) bad('blackboard', 'must be a JSON object');
  return { ...base, edit: { blackboard: whole as Record<string, unknown> } };
}
