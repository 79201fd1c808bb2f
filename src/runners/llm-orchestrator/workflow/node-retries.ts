/**
 * A node run under the workflow's policy (seed 004 §4): its own requirements
 * first, then the node; a failure that may pass (status 429 or 5xx) is run
 * again after a backoff, up to the node's max_retries (the policy's when the
 * node names none). The retries are counted in the run's state, so a run
 * resumed elsewhere does not get them afresh.
 */
import type { ErrorCode } from '../../../shared/errors.js';
import { backoffDelay } from '../../../shared/backoff.js';
import type { NodeContext, NodeOutcome } from './nodes/node-context.js';
import { runNode } from './nodes/run-node.js';
import { requirementsFailure } from './requirements.js';
import { asRunError } from './run-errors.js';

/** Codes a step is never retried on: retrying cannot change them. */
const FINAL_CODES: ReadonlySet<string> = new Set<ErrorCode>([
  'UHLP_WORKFLOW_TIMEOUT',
  'UHLP_WORKFLOW_STATE_TOO_LARGE',
  'UHLP_WORKFLOW_RUN_CONFLICT',
  'UHLP_WORKFLOW_EVALUATION_FAILED',
  'UHLP_WORKFLOW_PREFLIGHT_FAILED',
  'UHLP_WORKFLOW_INVALID',
  'UHLP_TOOL_APPROVAL_REQUIRED',
  'UHLP_CAPABILITY_DENIED',
]);
/** The longest wait between two runs of a step, unless the policy's first wait is longer. */
const MAX_BACKOFF_MS = 30_000;

/** Runs node `id`, again after a failure that may pass, with backoff; `sleep` waits between runs. */
export async function runWithRetries(id: string, ctx: NodeContext, sleep: (ms: number) => Promise<void>): Promise<NodeOutcome> {
  const node = ctx.workflow.nodes[id]!;
  if (node.requirements !== undefined) {
    const failed = requirementsFailure(node.requirements, ctx.state.blackboard, id);
    if (failed !== undefined) throw failed;
  }
  // An evaluator's max_retries counts its judgements (evaluator-node.ts), not failed runs of it.
  const allowed = ('max_retries' in node && node.type !== 'evaluator' ? node.max_retries : undefined) ?? ctx.workflow.policy.max_retries;
  for (;;) {
    try {
      return await runNode(id, node, ctx);
    } catch (error) {
      const failure = asRunError(error);
      const retries = ctx.state.retries[id] ?? 0;
      if (FINAL_CODES.has(failure.code) || !(failure.status === 429 || failure.status >= 500) || retries >= allowed) throw error;
      ctx.state.retries[id] = retries + 1;
      const initialMs = ctx.workflow.policy.retry_backoff_ms;
      await sleep(backoffDelay(retries, { initialMs, maxMs: Math.max(initialMs, MAX_BACKOFF_MS) }));
    }
  }
}
