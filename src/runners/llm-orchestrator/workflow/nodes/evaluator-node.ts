/**
 * An evaluator node, the evaluator-optimizer loop (seed 004 §9): an LLM
 * component judges `target_variable`; the score, on the judge's scale
 * (`score_range`), is normalized to 0-1. At or above `pass_threshold` the run
 * goes to pass_route; below it the critique is written to `feedback_variable`
 * for the fail_route node's next prompt and the run goes back there, until the
 * target has failed more than `max_retries` times
 * (UHLP_WORKFLOW_EVALUATION_FAILED).
 */
import { readPath, writePath } from '../../../../contract/workflow/blackboard.js';
import type { EvaluatorNode } from '../../../../contract/workflow/workflow-schema.js';
import { LlmOutputInvalidError } from '../../../../shared/runner-errors.js';
import { WorkflowEvaluationFailedError } from '../../../../shared/workflow-errors.js';
import { answerJson } from '../../answer-judge.js';
import { askModel, componentSpec } from './llm-step.js';
import type { NodeContext, NodeOutcome } from './node-context.js';

export async function runEvaluatorNode(id: string, node: EvaluatorNode, ctx: NodeContext): Promise<NodeOutcome> {
  const board = ctx.state.blackboard;
  const target = readPath(board, node.target_variable) ?? null;
  const verdict = await askModel(ctx, componentSpec(ctx, node.evaluator_agent_ref), node.evaluator_agent_ref, { target, variable: node.target_variable }, { extra: [] });
  const { score: raw, critique } = readVerdict(verdict);
  const [low, high] = node.score_range ?? [0, 1];
  const score = Math.min(1, Math.max(0, (raw - low) / (high - low)));
  const passed = score >= node.pass_threshold;
  const action = { type: 'evaluator', judge: node.evaluator_agent_ref, score, pass_threshold: node.pass_threshold, passed };
  if (passed) {
    delete ctx.state.loops[id];
    return { next: [node.pass_route], thought: `score ${score} >= ${node.pass_threshold}: pass`, action, observation: { score, raw, critique } };
  }
  const fails = (ctx.state.loops[id] ?? 0) + 1;
  ctx.state.loops[id] = fails;
  if (fails > node.max_retries) {
    throw new WorkflowEvaluationFailedError(`${node.target_variable} failed the judge ${fails} times (max_retries ${node.max_retries})`, { node: id, score, critique });
  }
  if (node.feedback_variable !== undefined) {
    writePath(board, node.feedback_variable, critique);
    ctx.state.feedback[node.fail_route] = node.feedback_variable;
  }
  return { next: [node.fail_route], thought: `score ${score} < ${node.pass_threshold}: fail ${fails} of ${node.max_retries} allowed, back to ${node.fail_route}`, action, observation: { score, raw, critique } };
}

/** `{score, critique}` of a judge's answer: an object with a numeric score, or a text holding JSON or a number. */
export function readVerdict(verdict: unknown): { score: number; critique: string } {
  let value = verdict;
  if (typeof value === 'string') {
    const parsed = answerJson(value);
    value = 'value' in parsed ? parsed.value : value;
  }
  if (typeof value === 'number') return { score: value, critique: '' };
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const score = typeof record['score'] === 'number' ? record['score'] : Number(record['score']);
    if (Number.isFinite(score)) {
      const critique = record['critique'] ?? record['feedback'] ?? '';
      return { score, critique: typeof critique === 'string' ? critique : JSON.stringify(critique) };
    }
  }
  if (typeof value === 'string') {
    const match = /-?\d+(\.\d+)?/.exec(value);
    if (match !== null) return { score: Number(match[0]), critique: value };
  }
  throw new LlmOutputInvalidError('the judge answered no score', { answer: typeof verdict === 'string' ? verdict.slice(0, 512) : verdict });
}
