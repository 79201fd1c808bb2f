/**
 * A router node (seed 004 §7): the run goes to the route whose key the
 * blackboard value matches strictly (a string equal to the key, or a number or
 * boolean whose text is), else to default_route. It touches nothing outside
 * the blackboard.
 */
import { readPath } from '../../../../contract/workflow/blackboard.js';
import type { RouterNode } from '../../../../contract/workflow/workflow-schema.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export function runRouterNode(node: RouterNode, ctx: NodeContext): NodeOutcome {
  const value = readPath(ctx.state.blackboard, node.input_key);
  const key = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
  const matched = key !== undefined && Object.prototype.hasOwnProperty.call(node.routes, key) ? node.routes[key] : undefined;
  const target = matched ?? node.default_route;
  return {
    next: [target],
    thought: matched !== undefined ? `${node.input_key} is ${JSON.stringify(value)}: route ${JSON.stringify(key)}` : `${node.input_key} is ${JSON.stringify(value) ?? 'missing'}: no route matches, default_route`,
    action: { type: 'router', input_key: node.input_key, route: matched !== undefined ? key : null, next: target },
    observation: value ?? null,
  };
}
