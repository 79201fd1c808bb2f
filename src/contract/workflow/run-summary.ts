/**
 * A workflow run as lists show it: the core's run index answers these, and the
 * console's pages read them (console/src/types.ts imports this file, so it uses
 * nothing of Node's).
 */
export type RunStatus = 'running' | 'paused' | 'completed' | 'failed' | 'timed_out';
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'paused', 'completed', 'failed', 'timed_out'];

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
  /** The error code of a run that failed or timed out. */
  readonly errorCode?: string;
}
