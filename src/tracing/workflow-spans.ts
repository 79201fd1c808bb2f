/**
 * Workflow runs in a trace: each node the orchestrator checkpoints is a span
 * `uhlp.workflow.step <node>` under the execution that ran it (timed by the
 * orchestrator: it ended at the step's `at`, after `durationMs`); a run that
 * pauses at an approval is an event on that execution; an approver's decision
 * is a turn of its own (`uhlp.workflow.resume`) whose child span is the wait,
 * from the pause to the decision.
 */
import { ROOT_CONTEXT, SpanKind, context, recordSpan, startTurnSpan, trace, endingSpan, type Context } from './spans.js';
import { tracingActive } from './tracing-active.js';

export interface CheckpointedStep {
  readonly node: string;
  readonly type: string;
  readonly status: string;
  readonly at: string;
  readonly durationMs: number;
}

export function recordWorkflowSteps(parent: Context | undefined, runId: string, steps: readonly CheckpointedStep[], paused: { readonly node: string } | undefined): void {
  if (!tracingActive() || parent === undefined) return;
  for (const step of steps) {
    const ended = Date.parse(step.at);
    const end = Number.isFinite(ended) ? ended : Date.now();
    recordSpan(
      `uhlp.workflow.step ${step.node}`,
      end - step.durationMs,
      end,
      { 'uhlp.workflow.run_id': runId, 'uhlp.workflow.node': step.node, 'uhlp.workflow.node_type': step.type, 'uhlp.workflow.step_status': step.status },
      { parent, ...(step.status === 'failed' ? { error: 'step_failed' } : {}) },
    );
  }
  if (paused !== undefined) trace.getSpan(parent)?.addEvent('uhlp.workflow.approval_requested', { 'uhlp.workflow.run_id': runId, 'uhlp.workflow.node': paused.node });
}

/** An approver's decision on a paused run, as a turn's span; the wait since the pause is its child. */
export async function inResumeSpan<T>(runId: string, paused: { readonly node: string; readonly since: string } | undefined, approved: boolean, run: () => Promise<T>): Promise<T> {
  if (!tracingActive()) return run();
  const { span, ctx } = startTurnSpan('uhlp.workflow.resume', {
    kind: SpanKind.INTERNAL,
    parent: ROOT_CONTEXT,
    attributes: { 'uhlp.workflow.run_id': runId, 'uhlp.workflow.approved': approved, ...(paused !== undefined ? { 'uhlp.workflow.node': paused.node } : {}) },
  });
  if (paused !== undefined) {
    const since = Date.parse(paused.since);
    if (Number.isFinite(since)) recordSpan(`uhlp.workflow.approval ${paused.node}`, since, Date.now(), { 'uhlp.workflow.run_id': runId, 'uhlp.workflow.approved': approved }, { parent: ctx });
  }
  return endingSpan(span, () => context.with(ctx, run));
}
