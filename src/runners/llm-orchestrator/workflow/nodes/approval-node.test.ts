import { describe, expect, it } from 'vitest';
import { nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { ApprovalNode } from '../../../../contract/workflow/workflow-schema.js';
import { WorkflowRejectedError } from '../../../../shared/workflow-errors.js';
import { runApprovalNode } from './approval-node.js';

const workflow = workflowOf(`
start: check
nodes:
  check: { type: approval, prompt: Refund 40 EUR?, next: pay, reject_route: sorry, grants: [payments.refund] }
  strict: { type: approval, prompt: Ship it?, next: pay }
  pay: { type: end }
  sorry: { type: end }
`);
const check = workflow.nodes['check'] as ApprovalNode;
const strict = workflow.nodes['strict'] as ApprovalNode;
const at = '2026-01-02T03:04:05.000Z';

describe('an approval node', () => {
  it('pauses the run with its prompt while there is no decision', () => {
    expect(runApprovalNode('check', check, nodeContext({ workflow }))).toEqual({ next: [], thought: 'wait for an approver', action: { type: 'approval' }, observation: null, pause: { prompt: 'Refund 40 EUR?' } });
  });

  it('goes on to next on an approval, reporting who approved and what it granted', () => {
    const decision = { approved: true, by: 'ada', at };
    const outcome = runApprovalNode('check', check, nodeContext({ workflow, approvals: { check: decision } }));
    expect(outcome).toEqual({ next: ['pay'], thought: 'approved', action: { type: 'approval', approved: true, by: 'ada', grants: ['payments.refund'] }, observation: decision });
  });

  it('goes to reject_route on a rejection, granting nothing', () => {
    const decision = { approved: false, comment: 'too much', at };
    const outcome = runApprovalNode('check', check, nodeContext({ workflow, approvals: { check: decision } }));
    expect(outcome).toEqual({ next: ['sorry'], thought: 'rejected: reject_route', action: { type: 'approval', approved: false, grants: [] }, observation: decision });
  });

  it('fails the run with 409 UHLP_WORKFLOW_REJECTED on a rejection without reject_route', () => {
    const run = (): unknown => runApprovalNode('strict', strict, nodeContext({ workflow, approvals: { strict: { approved: false, comment: 'not today', at } } }));
    expect(run).toThrow(WorkflowRejectedError);
    expect(run).toThrow(expect.objectContaining({ code: 'UHLP_WORKFLOW_REJECTED', statusCode: 409, message: 'the approver rejected the run at strict: not today', details: { node: 'strict' } }));
  });

  it('reads the decision of its own node only', () => {
    const outcome = runApprovalNode('strict', strict, nodeContext({ workflow, approvals: { check: { approved: true, at } } }));
    expect(outcome.pause).toEqual({ prompt: 'Ship it?' });
  });
});
