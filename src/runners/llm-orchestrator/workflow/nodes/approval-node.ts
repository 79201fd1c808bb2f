/**
 * An approval node: with no decision for it yet the run pauses here (the core
 * keeps it paused until a resume); an approval goes on to `next` (the core
 * granted the node's critical tools to the rest of the run when it recorded
 * the decision; the trace only reports them); a rejection goes to
 * reject_route, or fails the run (UHLP_WORKFLOW_REJECTED) when it has none.
 */
import { nextOf, type ApprovalNode } from '../../../../contract/workflow/workflow-schema.js';
import { WorkflowRejectedError } from '../../../../shared/workflow-errors.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export function runApprovalNode(id: string, node: ApprovalNode, ctx: NodeContext): NodeOutcome {
  const decision = ctx.approvals[id];
  if (decision === undefined) return { next: [], thought: 'wait for an approver', action: { type: 'approval' }, observation: null, pause: { prompt: node.prompt } };
  const action = { type: 'approval', approved: decision.approved, ...(decision.by !== undefined ? { by: decision.by } : {}), grants: decision.approved ? node.grants : [] };
  if (decision.approved) return { next: nextOf(node), thought: 'approved', action, observation: decision };
  if (node.reject_route !== undefined) return { next: [node.reject_route], thought: 'rejected: reject_route', action, observation: decision };
  throw new WorkflowRejectedError(`the approver rejected the run at ${id}${decision.comment !== undefined ? `: ${decision.comment}` : ''}`, { node: id });
}
