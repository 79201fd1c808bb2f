import { describe, expect, it } from 'vitest';
import { FakeTools } from '../../../../../test/helpers/fake-tools.js';
import { FakeModel, nodeContext, workflowOf } from '../../../../../test/helpers/workflow-fakes.js';
import type { AgentNode } from '../../../../contract/workflow/workflow-schema.js';
import { PromptTemplateFailedError } from '../../../../shared/runner-errors.js';
import { WorkflowInvalidError } from '../../../../shared/workflow-errors.js';
import { ToolCallError } from '../../../kit/tools-client.js';
import { runAgentNode } from './agent-node.js';

const components = { triage: { handler: 'LLM' as const, llm: { prompt: 'prompts/triage.njk', system: 'prompts/system.njk', model: 'small', temperature: 0 } } };
const workflow = workflowOf(
  `
skills: [{ id: tone, content: skills/tone.md }]
start: classify
nodes:
  classify: { type: agent, component: triage, inputs_map: { text: input.text }, output: triage, next: done }
  inline: { type: agent, prompt: prompts/inline.njk, output_schema: { type: object, required: [label], properties: { label: { type: string } } }, output: labelled, stream: default, content_type: text/markdown, next: done }
  broken: { type: agent, component: missing, next: done }
  done: { type: end }
`,
  { ...components, missing: { handler: 'LLM' } },
);
const node = (id: string): AgentNode => workflow.nodes[id] as AgentNode;
const files = {
  'prompts/triage.njk': 'Classify: {{ body.text }} ({{ config.tone }}, {{ blackboard.input.text }})',
  'prompts/system.njk': 'You triage.',
  'prompts/inline.njk': 'Label {{ inputs }}',
  'skills/tone.md': 'Be brief.',
};

describe('an agent node', () => {
  it('renders its component prompt with the inputs as body, appends the skills, asks the model and writes the answer', async () => {
    const model = new FakeModel('a bug');
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model, components, blackboard: { input: { text: 'it crashes' } } });
    const outcome = await runAgentNode('classify', node('classify'), ctx);
    expect(model.asked).toEqual([
      {
        model: 'small',
        temperature: 0,
        messages: [
          { role: 'system', content: 'You triage.' },
          { role: 'user', content: 'Classify: it crashes (brief, it crashes)\n\n[skill tone]\nBe brief.' },
        ],
      },
    ]);
    expect(ctx.state.blackboard['triage']).toBe('a bug');
    expect(outcome).toEqual({
      next: ['done'],
      thought: 'agent triage: 1 skill(s) loaded',
      action: { type: 'agent', component: 'triage', output: 'triage' },
      observation: { skills: [{ id: 'tone', score: null }], skillScores: {}, embeddingModel: null, feedback: false },
      output: 'a bug',
    });
  });

  it("appends the evaluator's feedback once, and reads it no more", async () => {
    const model = new FakeModel('better');
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model, components, blackboard: { input: { text: 't' }, critique: 'too long' }, state: { feedback: { classify: 'critique' } } });
    const first = await runAgentNode('classify', node('classify'), ctx);
    await runAgentNode('classify', node('classify'), ctx);
    expect(model.userMessage(0)).toMatch(/\n\nFeedback on your previous answer \(revise it accordingly\):\ntoo long$/);
    expect(model.userMessage(1)).not.toMatch(/Feedback/);
    expect(first.thought).toBe('agent triage: 1 skill(s) loaded, with the evaluator feedback');
    expect(ctx.state.feedback).toEqual({});
  });

  it('asks an inline prompt with its schema, streams the text, and writes the judged JSON', async () => {
    const model = new FakeModel('{"label":"bug"}');
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model, blackboard: { input: 'x' } });
    const outcome = await runAgentNode('inline', node('inline'), ctx);
    expect(model.asked[0]).toMatchObject({
      responseSchema: { name: 'inline', schema: { type: 'object', required: ['label'] } },
      stream: { id: 'default', node: 'inline', contentType: 'text/markdown' },
      messages: [{ role: 'user', content: 'Label x\n\n[skill tone]\nBe brief.' }],
    });
    expect(ctx.state.blackboard['labelled']).toEqual({ label: 'bug' });
    expect(outcome).toMatchObject({ action: { type: 'agent', prompt: 'prompts/inline.njk', output: 'labelled' }, emit: [{ type: 'STREAM_END', stream_id: 'default' }] });
  });

  it('fails UHLP_LLM_OUTPUT_INVALID (502) when the answers keep failing the schema', async () => {
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model: new FakeModel('not json'), blackboard: { input: 'x' } });
    await expect(runAgentNode('inline', node('inline'), ctx)).rejects.toMatchObject({ code: 'UHLP_LLM_OUTPUT_INVALID', statusCode: 502 });
  });

  it('fails UHLP_WORKFLOW_INVALID for a component whose llm block cannot be read', async () => {
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), components: { missing: { handler: 'LLM' } } });
    await expect(runAgentNode('broken', node('broken'), ctx)).rejects.toThrow(WorkflowInvalidError);
    await expect(runAgentNode('broken', node('broken'), ctx)).rejects.toMatchObject({ statusCode: 500, message: 'component missing: taskDetails.llm must be an object' });
  });

  it('fails UHLP_PROMPT_TEMPLATE_ERROR naming the file when its template cannot be read', async () => {
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files: { 'skills/tone.md': 'x' } }), components });
    const failure = runAgentNode('classify', node('classify'), ctx);
    await expect(failure).rejects.toThrow(PromptTemplateFailedError);
    await expect(failure).rejects.toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_ERROR', statusCode: 500, message: expect.stringMatching(/^prompt template /), details: { file: expect.any(String) } });
  });

  it("fails with core.llm.generate's error as it came", async () => {
    const refusal = new ToolCallError('UHLP_LLM_BUDGET_EXCEEDED', 'the app spent its tokens', 429, { retryAfterSeconds: 60 });
    const ctx = nodeContext({ workflow, tools: new FakeTools({ files }), model: new FakeModel(refusal), components, blackboard: { input: { text: 't' } } });
    await expect(runAgentNode('classify', node('classify'), ctx)).rejects.toBe(refusal);
    expect(ctx.state.blackboard['triage']).toBeUndefined();
  });
});
