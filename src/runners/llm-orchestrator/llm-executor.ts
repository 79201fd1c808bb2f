/**
 * The llm-orchestrator's executor: one LLM task per /execute request.
 *
 * 1. Renders the component's `system` and `prompt` templates (prompt-templates.ts)
 *    with the request's variables (template-variables.ts), the prompt header
 *    first when `header: true` (prompt-header.ts).
 * 2. Loads the output schema (output-schemas.ts) and the tools offered to the
 *    model (model-tools.ts).
 * 3. Converses with the model through core.llm.generate (conversation.ts):
 *    tool calls, judging the answer (answer-judge.ts), re-asks.
 * 4. Answers `generic` with the output, or `httpResponse` with it when the
 *    component responds with HTTP.
 *
 * Everything it reads it reads through MCP with the execution's token: it needs
 * no file system and no network. Files, schemas and tool listings are kept per
 * revision across executions (revisions never change).
 */
import type { Executor } from '../kit/executor.js';
import { errorResult, resultFromValue, type ScriptResult } from '../kit/script-result.js';
import { ExecuteBadRequestError } from '../../shared/runner-errors.js';
import { judgeAnswer } from './answer-judge.js';
import { converse } from './conversation.js';
import { DefinitionFiles } from './definition-files.js';
import type { LlmMessage } from '../../contract/llm-messages.js';
import { mcpGenerate, type GenerateRequest } from './generate-client.js';
import { readLlmTaskSpec } from './llm-task-spec.js';
import { ModelTools } from './model-tools.js';
import { OutputSchemas } from './output-schemas.js';
import { promptHeader } from './prompt-header.js';
import { PromptTemplateError, PromptTemplates } from './prompt-templates.js';
import { TEMPLATE_INPUTS_METRIC } from '../../contract/template-inputs.js';
import { TemplateInputs } from './template-inputs.js';
import { templateVariables } from '../../contract/template-variables.js';
import { activeOptimize } from '../../contract/llm-component-schema.js';
import { functionName } from './tool-names.js';
import { DEFAULT_STREAM_ID } from '../../contract/workflow/stream-packets.js';

export interface LlmExecutorOptions {
  /** The clock of the prompt header's context_as_of. @defaultValue the system clock */
  readonly now?: () => Date;
}

export function createLlmExecutor(options: LlmExecutorOptions = {}): Executor {
  const files = new DefinitionFiles();
  const templates = new PromptTemplates(files);
  const schemas = new OutputSchemas(files);
  const modelTools = new ModelTools();
  const now = options.now ?? (() => new Date());

  return async (request, tools): Promise<ScriptResult> => {
    const task = request.context.taskDetails;
    if (!task || task.handler !== 'LLM') return errorResult(new ExecuteBadRequestError('context.taskDetails must name an LLM task'));
    const read = readLlmTaskSpec(task.llm);
    if ('problem' in read) return errorResult(new ExecuteBadRequestError(read.problem));
    const spec = read.spec;
    const componentId = request.context.componentId;
    const scope = { appId: request.context.appId, revision: task.revision, tools };

    const variables = templateVariables(request);
    // An optimized component reports what its templates read: the inputs of its samples.
    const inputs = activeOptimize(spec) !== undefined ? new TemplateInputs(variables) : undefined;
    const render = (file: string): Promise<string> =>
      templates.render(file, variables, scope, inputs?.observe).catch((error: unknown) => {
        if (!(error instanceof PromptTemplateError)) throw error;
        throw error.toTaskError();
      });
    const [system, prompt, schema, offered] = await Promise.all([
      spec.system !== undefined ? render(spec.system) : undefined,
      render(spec.prompt),
      spec.outputSchema !== undefined ? schemas.get(spec.outputSchema, scope) : undefined,
      modelTools.offer(spec.maxToolCalls > 0 ? spec.tools : [], scope),
    ]);

    const messages: LlmMessage[] = [];
    if (system !== undefined) messages.push({ role: 'system', content: system });
    messages.push({ role: 'user', content: spec.header ? promptHeader(request, now()) + prompt : prompt });
    const fixed: Omit<GenerateRequest, 'messages' | 'tools'> = {
      ...(spec.model !== undefined ? { model: spec.model } : {}),
      ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
      ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
      // Structured output where the provider has it; the answer is judged all the same.
      ...(schema !== undefined ? { responseSchema: { name: functionName(componentId), schema: schema.schema } } : {}),
      // The exact-match cache only holds for answers that do not vary: temperature 0.
      ...(spec.cache !== undefined && spec.temperature === 0 ? { cacheTtlSeconds: spec.cache.ttlSeconds } : {}),
      // A client that asked for server-sent events gets the text as the model writes it; the core drops it otherwise.
      stream: { id: DEFAULT_STREAM_ID, node: componentId },
    };

    const output = await converse({
      generate: mcpGenerate(tools),
      callTool: (name, args) => tools.call(name, args),
      request: fixed,
      messages,
      tools: offered,
      maxToolCalls: spec.maxToolCalls,
      maxAttempts: spec.maxAttempts,
      judge: (text) => judgeAnswer(text, { ...(schema !== undefined ? { validate: schema.validate } : {}), respond: spec.respond }),
    });
    const result: ScriptResult = spec.respond === 'httpResponse' ? resultFromValue(output) : { resultType: 'generic', data: output };
    if (inputs !== undefined) result.metrics = { [TEMPLATE_INPUTS_METRIC]: inputs.paths() };
    return result;
  };
}
