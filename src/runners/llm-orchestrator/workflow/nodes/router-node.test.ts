import { describe, expect, it } from 'vitest';
import { nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { RouterNode } from '../../../../contract/workflow/workflow-schema.js';
import { runRouterNode } from './router-node.js';

const workflow = workflowOf(`
start: route
nodes:
  route: { type: router, input_key: triage.category, routes: { bug: fix, "42": answer, "true": yes, toString: odd }, default_route: other }
  fix: { type: end }
  answer: { type: end }
  yes: { type: end }
  odd: { type: end }
  other: { type: end }
`);
const route = workflow.nodes['route'] as RouterNode;

describe('a router node', () => {
  it.each<[string, unknown, string, string | null]>([
    ['a string equal to a key', 'bug', 'fix', 'bug'],
    ['a number whose text is a key', 42, 'answer', '42'],
    ['a boolean whose text is a key', true, 'yes', 'true'],
    ['a key of its own that is also an Object method name', 'toString', 'odd', 'toString'],
    ['a string matching no key', 'feature', 'other', null],
    ['a key only in another case', 'BUG', 'other', null],
    ['an object', { category: 'bug' }, 'other', null],
    ['null', null, 'other', null],
  ])('routes %s', (_name, value, next, routeKey) => {
    const ctx = nodeContext({ workflow, blackboard: { triage: { category: value } } });
    const outcome = runRouterNode(route, ctx);
    expect(outcome.next).toEqual([next]);
    expect(outcome.action).toEqual({ type: 'router', input_key: 'triage.category', route: routeKey, next });
    expect(outcome.observation).toEqual(value);
  });

  it('takes the default route when the value is missing, and says so', () => {
    const outcome = runRouterNode(route, nodeContext({ workflow, blackboard: {} }));
    expect(outcome).toMatchObject({ next: ['other'], thought: 'triage.category is missing: no route matches, default_route', observation: null });
  });

  it('does not take a route a key only inherits', () => {
    const inherited = workflowOf(`
start: route
nodes:
  route: { type: router, input_key: v, routes: { a: done }, default_route: done2 }
  done: { type: end }
  done2: { type: end }
`);
    const outcome = runRouterNode(inherited.nodes['route'] as RouterNode, nodeContext({ workflow: inherited, blackboard: { v: 'hasOwnProperty' } }));
    expect(outcome.next).toEqual(['done2']);
  });
});
