/**
 * An end node: the run completes with its result, the blackboard value at
 * `output`, an object of names to blackboard values, or the whole blackboard.
 */
import { readPath } from '../../../../contract/workflow/blackboard.js';
import type { EndNode } from '../../../../contract/workflow/workflow-schema.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export function runEndNode(node: EndNode, ctx: NodeContext): NodeOutcome {
  const board = ctx.state.blackboard;
  let result: unknown;
  if (node.output === undefined) result = board;
  else if (typeof node.output === 'string') result = readPath(board, node.output) ?? null;
  else result = Object.fromEntries(Object.entries(node.output).map(([name, path]) => [name, readPath(board, path) ?? null]));
  return { next: [], thought: 'the run ends', action: { type: 'end' }, observation: null, output: result, end: { result } };
}
