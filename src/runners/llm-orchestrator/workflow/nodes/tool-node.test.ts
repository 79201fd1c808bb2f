import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../../test/helpers/fake-tools.js';
import { nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { ToolNode } from '../../../../contract/workflow/workflow-schema.js';
import { ToolCallError } from '../../../kit/tools-client.js';
import { runToolNode } from './tool-node.js';

const workflow = workflowOf(`
start: get
nodes:
  get: { type: tool, tool: core.kv.get, args: { key: fixed, scope: app }, inputs_map: { key: input.key }, output: found.value, next: done }
  done: { type: end }
`);
const get = workflow.nodes['get'] as ToolNode;

describe('a tool node', () => {
  it('calls its tool with the fixed args and the inputs (inputs win), and writes the answer to output', async () => {
    const tools = new FakeTools({ tools: { 'core.kv.get': (args) => ({ value: `v:${String(args['key'])}` }) } });
    const ctx = nodeContext({ workflow, tools, blackboard: { input: { key: 'ctr:a' } } });
    const outcome = await runToolNode(get, ctx);
    expect(tools.callsOf('core.kv.get')).toEqual([{ key: 'ctr:a', scope: 'app' }]);
    expect(ctx.state.blackboard['found']).toEqual({ value: { value: 'v:ctr:a' } });
    expect(outcome).toEqual({
      next: ['done'],
      thought: 'call the tool core.kv.get',
      action: { type: 'tool', tool: 'core.kv.get', args: { key: 'ctr:a', scope: 'app' } },
      observation: { value: 'v:ctr:a' },
      output: { value: 'v:ctr:a' },
    });
  });

  it("fails with the core's refusal as it came, writing nothing", async () => {
    const refusal = new ToolCallError('UHLP_CAPABILITY_DENIED', 'kv key ctr:a is outside the allowed prefixes', 403, { capability: 'kv' });
    const tools = new FakeTools({ tools: { 'core.kv.get': () => Promise.reject(refusal) } });
    const ctx = nodeContext({ workflow, tools, blackboard: { input: { key: 'ctr:a' } } });
    await expect(runToolNode(get, ctx)).rejects.toBe(refusal);
    expect(ctx.state.blackboard['found']).toBeUndefined();
  });
});
