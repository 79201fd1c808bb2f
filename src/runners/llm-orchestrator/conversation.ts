/**
 * One LLM turn's conversation with the model: ask, run the tools the model
 * calls and give it their results until it answers without tool calls, judge
 * the answer, and re-ask with the judge's errors until an answer passes or the
 * attempts run out.
 *
 * - Tool calls go through MCP with the execution's token. A refusal of the core
 *   (a capability, a bad argument) or an unknown function goes back to the model
 *   as that call's error result: the model may recover from it; the turn does
 *   not fail. A call whose name is no function name at all (`core.kv.get`)
 *   goes back the same way; in the conversation it is sent back under a
 *   placeholder name, since the core (and OpenAI) take function names only. Each call counts against `maxToolCalls` (all attempts together);
 *   the model asking for more is UHLP_LLM_TOOL_LOOP_LIMIT (502).
 * - An answer that fails the judge is re-asked: the model's answer and a user
 *   message with the errors are appended, up to `maxAttempts` answers in all;
 *   then UHLP_LLM_OUTPUT_INVALID (502) with the errors of the last answer.
 * - An error of core.llm.generate ends the turn with that error as it came
 *   (code, status, details such as retryAfterSeconds).
 */
import { ToolCallError } from '../kit/tools-client.js';
import { LlmOutputInvalidError, LlmToolLoopLimitError } from '../../shared/runner-errors.js';
import { feedbackMessage, type Verdict } from './answer-judge.js';
import type { LlmMessage, LlmToolCall } from '../../contract/llm-messages.js';
import type { Generate, GenerateRequest } from './generate-client.js';
import type { OfferedTools } from './model-tools.js';
import { functionName, isFunctionName } from './tool-names.js';

/**
 * The name a call the model made under no function name is sent back under. It
 * is never offered: offered names are mapped from MCP tool names, which are
 * dotted (`core.kv.get` -> `core_kv_get`).
 */
export const INVALID_NAME = 'invalid_function_name';

export interface ConversationOptions {
  readonly generate: Generate;
  /** Calls an MCP tool; throws ToolCallError for the core's refusals. */
  readonly callTool: (name: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>;
  /** The request's fixed part: model, maxTokens, temperature, responseSchema, cacheTtlSeconds. */
  readonly request: Omit<GenerateRequest, 'messages' | 'tools'>;
  /** The system (optional) and user messages. */
  readonly messages: readonly LlmMessage[];
  readonly tools: OfferedTools;
  readonly maxToolCalls: number;
  readonly maxAttempts: number;
  readonly judge: (text: string | null) => Verdict;
}

/** Runs the conversation; resolves with the judged output, or throws (see above). */
export async function converse(options: ConversationOptions): Promise<unknown> {
  const messages: LlmMessage[] = [...options.messages];
  // With no call allowed, no function is offered: the model is not invited to fail.
  const functions = options.maxToolCalls > 0 ? options.tools.functions : [];
  let toolCalls = 0;
  for (let attempt = 1; ; attempt++) {
    let answer = await options.generate({ ...options.request, messages, ...(functions.length > 0 ? { tools: functions } : {}) });
    while (answer.toolCalls.length > 0) {
      toolCalls += answer.toolCalls.length;
      if (toolCalls > options.maxToolCalls) {
        throw new LlmToolLoopLimitError(`the model asked for more than ${options.maxToolCalls} tool calls`, {
          maxToolCalls: options.maxToolCalls,
          requested: toolCalls,
        });
      }
      messages.push({ role: 'assistant', content: answer.text, toolCalls: answer.toolCalls.map(asSent) });
      // One after the other, in the model's order: calls may depend on each other's effects.
      for (const call of answer.toolCalls) messages.push({ role: 'tool', toolCallId: call.id, content: await runToolCall(call, options) });
      answer = await options.generate({ ...options.request, messages, ...(functions.length > 0 ? { tools: functions } : {}) });
    }
    const verdict = options.judge(answer.text);
    if ('output' in verdict) return verdict.output;
    if (attempt >= options.maxAttempts) {
      throw new LlmOutputInvalidError(`the answer failed the output schema after ${attempt} attempt${attempt === 1 ? '' : 's'}: ${verdict.errors[0]}`, {
        attempts: attempt,
        errors: verdict.errors,
      });
    }
    messages.push({ role: 'assistant', content: answer.text ?? '' }, { role: 'user', content: feedbackMessage(verdict.errors) });
  }
}

/** The content of a tool's result message: its structured content, or the error it ended with, as JSON. */
async function runToolCall(call: LlmToolCall, options: ConversationOptions): Promise<string> {
  const names = options.tools.names;
  const tool = names.toolOf(call.name);
  if (tool === undefined) {
    const quoted = JSON.stringify(call.name.slice(0, 128));
    if (isFunctionName(call.name)) return toolError('UHLP_MCP_TOOL_NOT_FOUND', `no tool named ${quoted} was offered`);
    // `core.kv.get` for `core_kv_get`: the model is told the name to call, when there is one.
    const meant = functionName(call.name);
    const hint = names.toolOf(meant) !== undefined ? `; call the function "${meant}"` : '; call the functions offered, by their names';
    return toolError('UHLP_MCP_TOOL_NOT_FOUND', `${quoted} is not the name of a function offered${hint}`);
  }
  let args: unknown;
  try {
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (error) {
    return toolError('UHLP_MCP_INVALID_ARGUMENTS', `the arguments are not JSON: ${(error as Error).message}`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) return toolError('UHLP_MCP_INVALID_ARGUMENTS', 'the arguments must be a JSON object');
  try {
    return JSON.stringify(await options.callTool(tool, args as Record<string, unknown>));
  } catch (error) {
    if (error instanceof ToolCallError) return toolError(error.code, error.message, error.details);
    throw error;
  }
}

/** A call of the model as the conversation sends it back: its own name, or INVALID_NAME for one that is no function name. */
function asSent(call: LlmToolCall): LlmToolCall {
  return isFunctionName(call.name) ? call : { ...call, name: INVALID_NAME };
}

function toolError(code: string, message: string, details?: unknown): string {
  return JSON.stringify({ error: { code, message, ...(details !== undefined ? { details } : {}) } });
}
