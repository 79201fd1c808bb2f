/**
 * An agent node: an LLM step (llm-step.ts) over the node's inputs, with the
 * workflow's eager skills and the lazy ones near enough to the inputs (seed 004
 * §6), and the evaluator's critique when the run came back here from a failed
 * judgement (§9). The answer is written to `output`; with `stream`, the model's
 * text goes to that named stream as it is produced.
 */
import { mapInputs, readPath, writePath } from '../../../../contract/workflow/blackboard.js';
import type { StreamPacket } from '../../../../contract/workflow/stream-packets.js';
import { nextOf, type AgentNode } from '../../../../contract/workflow/workflow-schema.js';
import { queryText } from '../../skill-index.js';
import { askModel, componentSpec, inlineSpec } from './llm-step.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export async function runAgentNode(id: string, node: AgentNode, ctx: NodeContext): Promise<NodeOutcome> {
  const board = ctx.state.blackboard;
  const inputs = node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : (board['input'] ?? null);
  // The feedback is read once: the next visit of this node has none unless the evaluator fails it again.
  const feedbackPath = ctx.state.feedback[id];
  const feedback = feedbackPath !== undefined ? readPath(board, feedbackPath) : undefined;
  delete ctx.state.feedback[id];
  const selection = await ctx.llm.skills.select(ctx.workflowId, ctx.workflow.skills, queryText(inputs), ctx.workflow.skill_threshold, ctx.scope);

  const spec = node.component !== undefined ? componentSpec(ctx, node.component) : inlineSpec(node);
  const output = await askModel(ctx, spec, node.component ?? id, inputs, {
    extra: [
      ...selection.loaded.map((skill) => `[skill ${skill.id}]\n${skill.content}`),
      ...(feedback !== undefined && feedback !== null ? [`Feedback on your previous answer (revise it accordingly):\n${typeof feedback === 'string' ? feedback : JSON.stringify(feedback)}`] : []),
    ],
    ...(node.stream !== undefined ? { stream: { id: node.stream, node: id, ...(node.content_type !== undefined ? { contentType: node.content_type } : {}) } } : {}),
  });
  if (node.output !== undefined) writePath(board, node.output, output);
  return {
    next: nextOf(node),
    thought: `agent ${node.component ?? node.prompt}: ${selection.loaded.length} skill(s) loaded${feedback !== undefined ? ', with the evaluator feedback' : ''}`,
    action: { type: 'agent', ...(node.component !== undefined ? { component: node.component } : { prompt: node.prompt }), ...(node.output !== undefined ? { output: node.output } : {}) },
    observation: { skills: selection.loaded.map((skill) => ({ id: skill.id, score: skill.score })), skillScores: selection.scores, embeddingModel: selection.model, feedback: feedback !== undefined },
    output,
    ...(node.stream !== undefined ? { emit: [{ type: 'STREAM_END', stream_id: node.stream } satisfies StreamPacket] } : {}),
  };
}
