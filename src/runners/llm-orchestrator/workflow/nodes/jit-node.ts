/**
 * A JIT node: the app's JIT component run by the core (`core.component.invoke`)
 * through its pool, with the node's inputs; the result is written to `output`.
 * The call carries the run's pending checkpoint, which the core applies before
 * it runs the component, so the component never runs ahead of the run's state.
 * With `stream`, the result goes to that named stream as one chunk.
 */
import { mapInputs, writePath } from '../../../../contract/workflow/blackboard.js';
import type { StreamPacket } from '../../../../contract/workflow/stream-packets.js';
import { nextOf, type JitNode } from '../../../../contract/workflow/workflow-schema.js';
import { INVOKE_TOOL } from '../engine-tools.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

/** Longest NODE_STREAM chunk a JIT node's result is sent as. */
const MAX_CHUNK_CHARS = 64 * 1024;

export async function runJitNode(id: string, node: JitNode, ctx: NodeContext): Promise<NodeOutcome> {
  const board = ctx.state.blackboard;
  const input = node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : (board['input'] ?? null);
  const checkpoint = ctx.checkpoints.take();
  const call = { component: node.component, input, node: id };
  const answer = checkpoint !== undefined ? await ctx.checkpoints.send(INVOKE_TOOL, { ...call, checkpoint }) : await ctx.tools.call(INVOKE_TOOL, call);
  const data = answer['data'] ?? null;
  if (node.output !== undefined) writePath(board, node.output, data);
  const emit: StreamPacket[] = [];
  if (node.stream !== undefined) {
    const chunk = (typeof data === 'string' ? data : JSON.stringify(data)).slice(0, MAX_CHUNK_CHARS);
    emit.push(
      { type: 'STREAM_START', stream_id: node.stream, content_type: node.content_type ?? (typeof data === 'string' ? 'text/plain' : 'application/json') },
      { type: 'NODE_STREAM', stream_id: node.stream, node: id, chunk },
      { type: 'STREAM_END', stream_id: node.stream },
    );
  }
  return {
    next: nextOf(node),
    thought: `run the JIT component ${node.component}`,
    action: { type: 'jit', component: node.component, ...(node.output !== undefined ? { output: node.output } : {}) },
    observation: { resultType: answer['resultType'] ?? null },
    output: data,
    ...(emit.length > 0 ? { emit } : {}),
  };
}
