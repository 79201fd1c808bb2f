import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../../test/helpers/fake-tools.js';
import { FakeModel, nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { EvaluatorNode } from '../../../../contract/workflow/workflow-schema.js';
import { LlmOutputInvalidError } from '../../../../shared/runner-errors.js';
import { WorkflowEvaluationFailedError } from '../../../../shared/workflow-errors.js';
import { readVerdict, runEvaluatorNode } from './evaluator-node.js';

const components = { writer: { handler: 'LLM' as const, llm: { prompt: 'prompts/write.njk' } }, critic: { handler: 'LLM' as const, llm: { prompt: 'prompts/judge.njk' } } };
const workflow = workflowOf(
  `
start: write
nodes:
  write: { type: agent, component: writer, output: draft, next: judge }
  judge: { type: evaluator, evaluator_agent_ref: critic, target_variable: draft, pass_threshold: 0.7, score_range: [0, 10], pass_route: done, fail_route: write, feedback_variable: critique, max_retries: 2 }
  done: { type: end }
`,
  components,
);
const judge = workflow.nodes['judge'] as EvaluatorNode;
const files = { 'prompts/judge.njk': 'Judge {{ body.variable }}: {{ body.target }}' };

function judged(model: FakeModel, state: { loops?: Record<string, number> } = {}) {
  const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model, components, blackboard: { draft: 'a draft' }, state });
  return { ctx, outcome: runEvaluatorNode('judge', judge, ctx) };
}

describe('an evaluator node', () => {
  it('asks its judge about the target and passes a normalized score at or above the threshold', async () => {
    const model = new FakeModel('{"score": 7, "critique": "fine"}');
    const { ctx, outcome } = judged(model, { loops: { judge: 1 } });
    expect(await outcome).toEqual({
      next: ['done'],
      thought: 'score 0.7 >= 0.7: pass',
      action: { type: 'evaluator', judge: 'critic', score: 0.7, pass_threshold: 0.7, passed: true },
      observation: { score: 0.7, raw: 7, critique: 'fine' },
    });
    expect(model.userMessage()).toBe('Judge draft: a draft');
    // A pass ends the loop: a later visit counts its fails afresh.
    expect(ctx.state.loops).toEqual({});
  });

  it('fails back to fail_route with the critique written for its next prompt, counting the fail', async () => {
    const { ctx, outcome } = judged(new FakeModel('{"score": 3, "critique": "too vague"}'));
    expect(await outcome).toMatchObject({ next: ['write'], thought: 'score 0.3 < 0.7: fail 1 of 2 allowed, back to write', action: { passed: false, score: 0.3 } });
    expect(ctx.state.blackboard['critique']).toBe('too vague');
    expect(ctx.state.feedback).toEqual({ write: 'critique' });
    expect(ctx.state.loops).toEqual({ judge: 1 });
  });

  it('fails the run with 502 UHLP_WORKFLOW_EVALUATION_FAILED once the target failed more than max_retries times', async () => {
    const { ctx, outcome } = judged(new FakeModel('{"score": 1, "critique": "no"}'), { loops: { judge: 2 } });
    await expect(outcome).rejects.toThrow(WorkflowEvaluationFailedError);
    await expect(outcome).rejects.toMatchObject({ statusCode: 502, message: 'draft failed the judge 3 times (max_retries 2)', details: { node: 'judge', score: 0.1, critique: 'no' } });
    expect(ctx.state.loops).toEqual({ judge: 3 });
  });

  it('clamps a score off the judge scale to 0-1', async () => {
    expect(await judged(new FakeModel('{"score": 42}')).outcome).toMatchObject({ action: { score: 1, passed: true } });
    expect(await judged(new FakeModel('{"score": -3}')).outcome).toMatchObject({ action: { score: 0, passed: false } });
  });

  it('fails UHLP_LLM_OUTPUT_INVALID (502) when the judge answers no score', async () => {
    await expect(judged(new FakeModel('I cannot say')).outcome).rejects.toThrow(LlmOutputInvalidError);
  });
});

describe("a judge's verdict", () => {
  it.each<[string, unknown, { score: number; critique: string }]>([
    ['an object', { score: 0.5, critique: 'ok' }, { score: 0.5, critique: 'ok' }],
    ['an object with feedback for critique', { score: '0.5', feedback: { why: 'short' } }, { score: 0.5, critique: '{"why":"short"}' }],
    ['a number', 0.25, { score: 0.25, critique: '' }],
    ['JSON text', '{"score": 8, "critique": "good"}', { score: 8, critique: 'good' }],
    ['a fenced JSON block', 'Here:\n```json\n{"score": 2}\n```', { score: 2, critique: '' }],
    ['text with a number', 'I would say 6.5 out of 10', { score: 6.5, critique: 'I would say 6.5 out of 10' }],
  ])('reads %s', (_name, verdict, expected) => {
    expect(readVerdict(verdict)).toEqual(expected);
  });

  it.each<[string, unknown]>([
    ['text without a number', 'no idea'],
    ['an object without a score', { critique: 'hm' }],
    ['null', null],
  ])('refuses %s', (_name, verdict) => {
    expect(() => readVerdict(verdict)).toThrow(expect.objectContaining({ code: 'UHLP_LLM_OUTPUT_INVALID', statusCode: 502, message: 'the judge answered no score' }));
  });
});
