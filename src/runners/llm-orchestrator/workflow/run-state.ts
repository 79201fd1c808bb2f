/**
 * The run's state as the engine changes it between checkpoints: the contract's
 * EngineState (run-view.ts) made writable, so that nodes write the blackboard,
 * the retries, the evaluator loops and the feedback in place.
 */
import { bounded, type EngineState } from '../../../contract/workflow/run-view.js';
import type { Blackboard } from '../../../contract/workflow/blackboard.js';

export type RunState = { -readonly [K in keyof EngineState]: EngineState[K] } & {
  position: { frontier: string[]; arrived: Record<string, string[]> };
  blackboard: Blackboard;
  retries: Record<string, number>;
  loops: Record<string, number>;
  feedback: Record<string, string>;
};

/** A step's copy of the blackboard, or the note of its size that the core would keep instead (run-record.ts `bounded`). */
export function snapshotOf(board: Blackboard): unknown {
  const kept = bounded(board);
  return kept === board ? structuredClone(board) : kept;
}
