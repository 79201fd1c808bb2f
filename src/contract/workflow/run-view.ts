/**
 * What the llm-orchestrator and the core exchange about a workflow run: the
 * view the engine loads (`core.workflow.load`), the state it checkpoints after
 * every node, the steps of its trace, and the bound on each step's values that
 * both apply. The core's record of a run (workflow-runs/run-record.ts) holds
 * these and more.
 */
import type { UhlpError } from '../../shared/errors.js';
import type { RunStatus } from './run-summary.js';

export { RUN_STATUSES, type RunStatus } from './run-summary.js';

/** Where a run is: the nodes due to run (branches in parallel mode), and what each join has seen arrive. */
export interface RunPosition {
  readonly frontier: readonly string[];
  /** join node -> the nodes that have led to it so far. */
  readonly arrived: Readonly<Record<string, readonly string[]>>;
}

/** Everything the engine needs to go on from a checkpoint. */
export interface EngineState {
  readonly position: RunPosition;
  readonly blackboard: Record<string, unknown>;
  /** node -> failed attempts retried so far (policy max_retries). */
  readonly retries: Readonly<Record<string, number>>;
  /** evaluator node -> fails so far (its max_retries). */
  readonly loops: Readonly<Record<string, number>>;
  /** node -> the blackboard path of feedback to append to its prompt when it next runs. */
  readonly feedback: Readonly<Record<string, string>>;
  /** Nodes completed over the whole run. */
  readonly nodesRun: number;
}

/**
 * One state transition (seed 004 §8): what the engine thought, did and saw,
 * and the blackboard after it. It is also a `workflowStep` result of the
 * /execute contract (`workflowId`, `stepId`, `status`, `output`, `error`).
 */
export interface SimulationStep {
  readonly index: number;
  readonly at: string;
  readonly workflowId: string;
  readonly stepId: string;
  readonly node: string;
  readonly type: string;
  readonly status: 'completed' | 'failed';
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly snapshot: unknown;
  readonly output?: unknown;
  readonly error?: RunError;
  readonly durationMs: number;
  /** A replayed or forked run's step that was not run again: the parent's step, copied from its trace. */
  readonly takenFrom?: { readonly runId: string; readonly index: number };
}

export interface RunError {
  readonly code: string;
  readonly message: string;
  readonly status: number;
  readonly details?: unknown;
}

/** A registry error as a run keeps it: its code and the registry's status for it. */
export function toRunError(error: UhlpError): RunError {
  return { code: error.code, message: error.message, status: error.statusCode, ...(error.details !== undefined ? { details: error.details } : {}) };
}

export interface Approval {
  readonly approved: boolean;
  readonly comment?: string;
  readonly by?: string;
  readonly at: string;
}

/** What `core.workflow.load` answers the orchestrator. */
export interface RunView {
  readonly id: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly status: RunStatus;
  readonly state: EngineState;
  readonly approvals: Readonly<Record<string, Approval>>;
  /** Time left to run, ms; the orchestrator stops at it (and the core a little after). */
  readonly remainingMs: number;
  /** The index the next trace step gets. */
  readonly nextStep: number;
  /** True before the first node ran: the workflow's own requirements are checked. */
  readonly fresh: boolean;
}

/** Largest JSON of one step's snapshot or observation; a larger one is replaced by a note of its size. */
export const MAX_STEP_VALUE_BYTES = 16 * 1024;

/** `value`, or `{truncated: true, bytes}` when its JSON is over `limit`. */
export function bounded(value: unknown, limit: number = MAX_STEP_VALUE_BYTES): unknown {
  if (value === undefined) return null;
  const json = JSON.stringify(value);
  if (json === undefined) return null;
  return noteIfOver(json, limit) ?? value;
}

/**
 * `bounded(value)` as a copy that later changes of `value` do not reach: the
 * JSON that measures it is parsed back, so measuring and copying are one pass
 * (and the copy is what a checkpoint's JSON carries anyway).
 */
export function boundedCopy(value: unknown, limit: number = MAX_STEP_VALUE_BYTES): unknown {
  if (value === undefined) return null;
  const json = JSON.stringify(value);
  if (json === undefined) return null;
  return noteIfOver(json, limit) ?? JSON.parse(json);
}

/** The note that stands for a value whose JSON is over `limit`; undefined within it. */
function noteIfOver(json: string, limit: number): { truncated: true; bytes: number; preview: string } | undefined {
  const bytes = Buffer.byteLength(json);
  return bytes > limit ? { truncated: true, bytes, preview: json.slice(0, 512) } : undefined;
}
