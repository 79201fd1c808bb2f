/**
 * One LLM task inside a run, as agent and evaluator nodes ask it: the spec's
 * templates rendered with the step's inputs as `body` (and `inputs`,
 * `blackboard`), skills and feedback appended to the user message, a
 * conversation with the model through core.llm.generate (conversation.ts), the
 * answer judged against the spec's schema. A schema-less answer is its text.
 */
import type { LlmComponentSpec } from '../../../../contract/llm-component-schema.js';
import { templateVariables } from '../../../../contract/template-variables.js';
import type { AgentNode } from '../../../../contract/workflow/workflow-schema.js';
import { WorkflowInvalidError } from '../../../../shared/workflow-errors.js';
import { judgeAnswer } from '../../answer-judge.js';
import { converse } from '../../conversation.js';
import type { LlmMessage } from '../../../../contract/llm-messages.js';
import type { GenerateRequest } from '../../generate-client.js';
import { readLlmTaskSpec } from '../../llm-task-spec.js';
import { PromptTemplateError } from '../../prompt-templates.js';
import { functionName } from '../../tool-names.js';
import type { NodeContext } from './node-context.js';

export interface LlmStepOptions {
  /** Texts appended to the user message: loaded skills, the evaluator's feedback. */
  readonly extra: readonly string[];
  /** The named output stream the model's text goes to. */
  readonly stream?: GenerateRequest['stream'];
}

/** Asks the model; `name` names the answer's schema (`responseSchema.name`). */
export async function askModel(ctx: NodeContext, spec: LlmComponentSpec, name: string, inputs: unknown, options: LlmStepOptions): Promise<unknown> {
  const variables = { ...templateVariables(ctx.request), body: inputs, inputs, blackboard: ctx.state.blackboard };
  const render = (file: string): Promise<string> =>
    ctx.llm.templates.render(file, variables, ctx.scope).catch((error: unknown) => {
      if (!(error instanceof PromptTemplateError)) throw error;
      throw error.toTaskError();
    });
  const [system, prompt, schema, offered] = await Promise.all([
    spec.system !== undefined ? render(spec.system) : undefined,
    render(spec.prompt),
    spec.outputSchema !== undefined ? ctx.llm.schemas.get(spec.outputSchema, ctx.scope) : undefined,
    ctx.llm.modelTools.offer(spec.maxToolCalls > 0 ? spec.tools : [], ctx.scope),
  ]);
  const messages: LlmMessage[] = [];
  if (system !== undefined) messages.push({ role: 'system', content: system });
  messages.push({ role: 'user', content: [prompt, ...options.extra].join('\n\n') });
  const output = await converse({
    generate: ctx.generate,
    callTool: (tool, args) => ctx.tools.call(tool, args),
    request: {
      ...(spec.model !== undefined ? { model: spec.model } : {}),
      ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
      ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
      ...(schema !== undefined ? { responseSchema: { name: functionName(name), schema: schema.schema } } : {}),
      ...(spec.cache !== undefined && spec.temperature === 0 ? { cacheTtlSeconds: spec.cache.ttlSeconds } : {}),
      ...(options.stream !== undefined ? { stream: options.stream } : {}),
    },
    messages,
    tools: offered,
    maxToolCalls: spec.maxToolCalls,
    maxAttempts: spec.maxAttempts,
    judge: (text) => judgeAnswer(text, { ...(schema !== undefined ? { validate: schema.validate } : {}), respond: 'generic' }),
  });
  return schema === undefined ? (output as { text: string }).text : output;
}

/** An LLM component's spec, its defaults filled in. */
export function componentSpec(ctx: NodeContext, component: string): LlmComponentSpec {
  const read = readLlmTaskSpec(ctx.components[component]?.llm);
  if ('problem' in read) throw new WorkflowInvalidError(`component ${component}: ${read.problem}`);
  return read.spec;
}

/** The spec of an agent that names its prompt, not a component. */
export function inlineSpec(node: AgentNode): LlmComponentSpec {
  const read = readLlmTaskSpec({
    prompt: node.prompt,
    ...(node.system !== undefined ? { system: node.system } : {}),
    ...(node.output_schema !== undefined ? { outputSchema: node.output_schema } : {}),
    ...(node.model !== undefined ? { model: node.model } : {}),
    ...(node.temperature !== undefined ? { temperature: node.temperature } : {}),
    ...(node.max_tokens !== undefined ? { maxTokens: node.max_tokens } : {}),
    ...(node.tools !== undefined ? { tools: node.tools } : {}),
    ...(node.max_tool_calls !== undefined ? { maxToolCalls: node.max_tool_calls } : {}),
  });
  if ('problem' in read) throw new WorkflowInvalidError(`agent ${node.prompt}: ${read.problem}`);
  return read.spec;
}
