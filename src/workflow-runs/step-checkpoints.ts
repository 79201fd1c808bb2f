/**
 * The engine state before a step, kept per step for a replay or a fork from it
 * (run-replays.ts). A trace step's `snapshot` is the blackboard after it, cut
 * past 16 KiB, and holds nothing of the engine's position, retries, loops or
 * feedback: it cannot be gone on from. What can is the state the run had when
 * the checkpoint bringing the step arrived, which is the state before that
 * checkpoint's first step.
 *
 * So a step has a checkpoint when it is the first step of a checkpoint the
 * orchestrator sent: every agent, evaluator and JIT step of a sequential run
 * is; a router, approval or end step that rode along with the step before it
 * (run-checkpoints.ts in the orchestrator defers those), and the second and
 * later steps of a parallel wave, are not: nothing recorded the state between.
 *
 * Bounds: a checkpoint whose JSON is over MAX_CHECKPOINT_BYTES is kept as a
 * note of its size (`cut`); all of a run's checkpoints together stay under
 * MAX_CHECKPOINTS_BYTES, the oldest dropped first, and those of steps the trace
 * dropped go with them. A run record over its size cap sheds its checkpoints
 * (to notes) before the run fails for its size. A replay from a step without a
 * whole checkpoint answers UHLP_WORKFLOW_CHECKPOINT_UNAVAILABLE.
 */
import type { EngineState, SimulationStep } from '../contract/workflow/run-view.js';
import type { RunRecord } from './run-record.js';

/** Largest JSON of one step's checkpoint; a larger one is kept as a note of its size. */
export const MAX_CHECKPOINT_BYTES = 16 * 1024;
/** Largest JSON of all of a run's checkpoints; the oldest go first past it. */
export const MAX_CHECKPOINTS_BYTES = 256 * 1024;

/** The state before a step, with its JSON's size, or the note of one that was too large (or shed). */
export type StepCheckpoint = { readonly state: EngineState; readonly bytes: number } | { readonly cut: true; readonly bytes: number };

/** Keeps the run's state now as the checkpoint of the first of `steps` (a checkpoint about to be applied); call before the state changes. */
export function keepCheckpoint(record: RunRecord, steps: readonly SimulationStep[]): void {
  const first = steps[0];
  if (first === undefined) return;
  const json = JSON.stringify(record.state);
  const bytes = Buffer.byteLength(json);
  const checkpoints = (record.checkpoints ??= {});
  // A copy: the record's state is replaced by the next checkpoint, never changed in place, but a copy costs little under the bound.
  checkpoints[String(first.index)] = bytes > MAX_CHECKPOINT_BYTES ? { cut: true, bytes } : { state: JSON.parse(json) as EngineState, bytes };
  pruneCheckpoints(record);
}

/** Drops the checkpoints of steps the trace dropped, then the oldest past MAX_CHECKPOINTS_BYTES. */
export function pruneCheckpoints(record: RunRecord): void {
  const checkpoints = record.checkpoints;
  if (checkpoints === undefined) return;
  const indexes = Object.keys(checkpoints)
    .map(Number)
    .sort((a, b) => a - b);
  let total = 0;
  for (const index of indexes) total += checkpoints[String(index)]!.bytes;
  for (const index of indexes) {
    if (index >= record.droppedSteps && total <= MAX_CHECKPOINTS_BYTES) break;
    total -= checkpoints[String(index)]!.bytes;
    delete checkpoints[String(index)];
  }
}

/** Replaces every kept state by the note of its size (a record over its size cap); false when there was none to shed. */
export function shedCheckpoints(record: RunRecord): boolean {
  const checkpoints = record.checkpoints;
  if (checkpoints === undefined) return false;
  let shed = false;
  for (const [index, checkpoint] of Object.entries(checkpoints)) {
    if ('cut' in checkpoint) continue;
    checkpoints[index] = { cut: true, bytes: checkpoint.bytes };
    shed = true;
  }
  return shed;
}

/** The indexes of steps a replay may start from (a whole checkpoint kept), in order. */
export function checkpointedSteps(record: Pick<RunRecord, 'checkpoints'>): number[] {
  return Object.entries(record.checkpoints ?? {})
    .filter(([, checkpoint]) => 'state' in checkpoint)
    .map(([index]) => Number(index))
    .sort((a, b) => a - b);
}
