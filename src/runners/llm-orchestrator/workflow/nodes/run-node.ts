/** Runs one node of a workflow by its kind: one module per kind. */
import type { WorkflowNode } from '../../../../contract/workflow/workflow-schema.js';
import { runAgentNode } from './agent-node.js';
import { runApprovalNode } from './approval-node.js';
import { runEndNode } from './end-node.js';
import { runEvaluatorNode } from './evaluator-node.js';
import { runJitNode } from './jit-node.js';
import type { NodeContext, NodeOutcome } from './node-context.js';
import { runRouterNode } from './router-node.js';
import { runToolNode } from './tool-node.js';

export async function runNode(id: string, node: WorkflowNode, ctx: NodeContext): Promise<NodeOutcome> {
  switch (node.type) {
    case 'agent':
      return runAgentNode(id, node, ctx);
    case 'jit':
      return runJitNode(id, node, ctx);
    case 'tool':
      return runToolNode(node, ctx);
    case 'router':
      return runRouterNode(node, ctx);
    case 'evaluator':
      return runEvaluatorNode(id, node, ctx);
    case 'approval':
      return runApprovalNode(id, node, ctx);
    case 'end':
      return runEndNode(node, ctx);
  }
}
