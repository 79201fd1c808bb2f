/**
 * A tool node: one MCP tool of the core called with the node's fixed `args`
 * and its inputs (inputs win), the answer written to `output`.
 */
import { mapInputs, writePath } from '../../../../contract/workflow/blackboard.js';
import { nextOf, type ToolNode } from '../../../../contract/workflow/workflow-schema.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export async function runToolNode(node: ToolNode, ctx: NodeContext): Promise<NodeOutcome> {
  const board = ctx.state.blackboard;
  const args = { ...(node.args ?? {}), ...(node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : {}) };
  const answer = await ctx.tools.call(node.tool, args);
  if (node.output !== undefined) writePath(board, node.output, answer);
  return { next: nextOf(node), thought: `call the tool ${node.tool}`, action: { type: 'tool', tool: node.tool, args }, observation: answer, output: answer };
}
