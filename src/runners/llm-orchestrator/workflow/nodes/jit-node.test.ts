import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../../test/helpers/fake-tools.js';
import { FakeCheckpoints, nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { JitNode } from '../../../../contract/workflow/workflow-schema.js';
import { INVOKE_TOOL } from '../engine-tools.js';
import { runJitNode } from './jit-node.js';

const components = { ticket: { handler: 'JIT' as const } };
const workflow = workflowOf(
  `
start: file
nodes:
  file: { type: jit, component: ticket, inputs_map: { title: input.title }, output: ticket, next: done }
  shout: { type: jit, component: ticket, stream: default, next: done }
  typed: { type: jit, component: ticket, stream: raw, content_type: application/x-ndjson, next: done }
  done: { type: end }
`,
  components,
);
const node = (id: string): JitNode => workflow.nodes[id] as JitNode;
const answering = (data: unknown): FakeTools => new FakeTools({ tools: { [INVOKE_TOOL]: () => ({ resultType: 'generic', data }) } });

describe('a JIT node', () => {
  it('has the core run its component with the inputs, and writes the result to output', async () => {
    const tools = answering({ id: 7 });
    const ctx = nodeContext({ workflow, tools, components, blackboard: { input: { title: 'crash', other: 1 } } });
    const outcome = await runJitNode('file', node('file'), ctx);
    expect(tools.callsOf(INVOKE_TOOL)).toEqual([{ component: 'ticket', input: { title: 'crash' }, node: 'file' }]);
    expect(ctx.state.blackboard['ticket']).toEqual({ id: 7 });
    expect(outcome).toEqual({
      next: ['done'],
      thought: 'run the JIT component ticket',
      action: { type: 'jit', component: 'ticket', output: 'ticket' },
      observation: { resultType: 'generic' },
      output: { id: 7 },
    });
  });

  it('carries the pending checkpoint on its call, so the core applies it before the component runs', async () => {
    const tools = answering('ok');
    const pending = { state: { nodesRun: 1 }, steps: [{ index: 0 }] };
    const checkpoints = new FakeCheckpoints(tools, pending);
    await runJitNode('file', node('file'), nodeContext({ workflow, tools, components, checkpoints, blackboard: { input: { title: 't' } } }));
    expect(checkpoints.sent).toEqual([{ tool: INVOKE_TOOL, args: { component: 'ticket', input: { title: 't' }, node: 'file', checkpoint: pending } }]);
    // Taken: the next call carries none.
    expect(checkpoints.take()).toBeUndefined();
  });

  it('gives the whole input without inputs_map, and null for no input', async () => {
    const tools = answering(null);
    await runJitNode('shout', node('shout'), nodeContext({ workflow, tools, components, blackboard: { input: 'loud' } }));
    await runJitNode('shout', node('shout'), nodeContext({ workflow, tools, components, blackboard: {} }));
    expect(tools.callsOf(INVOKE_TOOL).map((call) => call['input'])).toEqual(['loud', null]);
  });

  it.each<[string, string, unknown, string, string]>([
    ['a text result as text/plain', 'shout', 'HELLO', 'text/plain', 'HELLO'],
    ['a JSON result as application/json', 'shout', { a: [1] }, 'application/json', '{"a":[1]}'],
    ['a result with the content_type the node names', 'typed', { a: 1 }, 'application/x-ndjson', '{"a":1}'],
  ])('streams %s in one chunk', async (_name, id, data, contentType, chunk) => {
    const stream = id === 'typed' ? 'raw' : 'default';
    const outcome = await runJitNode(id, node(id), nodeContext({ workflow, tools: answering(data), components }));
    expect(outcome.emit).toEqual([
      { type: 'STREAM_START', stream_id: stream, content_type: contentType },
      { type: 'NODE_STREAM', stream_id: stream, node: id, chunk },
      { type: 'STREAM_END', stream_id: stream },
    ]);
  });

  it('cuts a streamed result at 64 KiB', async () => {
    const outcome = await runJitNode('shout', node('shout'), nodeContext({ workflow, tools: answering('x'.repeat(70_000)), components }));
    expect((outcome.emit![1] as { chunk: string }).chunk).toHaveLength(64 * 1024);
  });
});
