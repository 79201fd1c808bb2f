/**
 * A workflow run as lists show it: the core's run index answers these, and the
 * console's pages read them (console/src/types.ts imports this file, so it uses
 * nothing of Node's).
 */
export type RunStatus = 'running' | 'paused' | 'completed' | 'failed' | 'timed_out' | 'cancelled';
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'paused', 'completed', 'failed', 'timed_out', 'cancelled'];
/** Statuses after which a run never changes again. */
export const FINAL_RUN_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'timed_out', 'cancelled'];

/**
 * Who asked for a run's cancellation, when, and through what (`http`: a client holding the run id, the `uhlp runs cancel` command included; `console`: an operator;
 * `interrupt` and `rollback`: a new request of the run's session, by its workflow component's doubleTexting).
 */
export interface RunCancellation {
  readonly by: string;
  readonly at: string;
  readonly via: 'http' | 'console' | 'mcp' | 'interrupt' | 'rollback';
}

/**
 * Where a replayed or forked run comes from (docs/workflows.md "Replay and
 * fork"): the run it was made from, the step it starts at (the steps before it
 * are the parent's, taken from its trace), replay or fork, and who asked when.
 */
export interface RunParent {
  readonly runId: string;
  readonly step: number;
  readonly kind: 'replay' | 'fork';
  readonly by: string;
  readonly at: string;
}

/** A run made from this one by a replay or a fork: the other side of RunParent. */
export interface RunChild {
  readonly runId: string;
  readonly step: number;
  readonly kind: 'replay' | 'fork';
  readonly by: string;
  readonly at: string;
}

/** What the list shows of one run. */
export interface RunSummary {
  readonly id: string;
  readonly app: string;
  readonly component: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly status: RunStatus;
  /** ISO times. */
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Steps the run has taken (dropped ones included). */
  readonly steps: number;
  readonly attempts: number;
  /** The approval node a paused run waits at, and its prompt. */
  readonly paused?: { readonly node: string; readonly prompt: string; readonly since: string };
  /** Who cancelled the run, or asked to (a running run is cancelled once its step is cut). */
  readonly cancellation?: RunCancellation;
  /** The error code of a run that failed or timed out. */
  readonly errorCode?: string;
  /** The run this one was replayed or forked from. */
  readonly parent?: RunParent;
}
