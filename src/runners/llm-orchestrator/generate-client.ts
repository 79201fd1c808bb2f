/**
 * `core.llm.generate` as the orchestrator calls it: the request and answer
 * shapes of the issue 13 contract (docs/mcp.md), one MCP call per completion
 * with the execution's token. The answer is read defensively: a core that
 * answers no `toolCalls` (an older one) answered none, and an answer without
 * text or tool calls is a bad response, not a crash.
 */
import type { LlmMessage, LlmResponseSchema, LlmToolCall, LlmToolSpec, LlmUsage } from '../../contract/llm-messages.js';
import { ToolCallError, type ToolsClient } from '../kit/tools-client.js';

export const GENERATE_TOOL = 'core.llm.generate';

export interface GenerateRequest {
  readonly messages: readonly LlmMessage[];
  readonly model?: string;
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly tools?: readonly LlmToolSpec[];
  readonly responseSchema?: LlmResponseSchema;
  readonly cacheTtlSeconds?: number;
  /** The named output stream the model's text goes to as it is produced (when the client asked for a stream). */
  readonly stream?: { readonly id: string; readonly node?: string; readonly contentType?: string };
}

export interface GenerateAnswer {
  /** Null when the model only called tools. */
  readonly text: string | null;
  readonly toolCalls: readonly LlmToolCall[];
  readonly finishReason: string;
  readonly model: string;
  readonly usage: LlmUsage;
  readonly cached: boolean;
}

/** One completion; throws ToolCallError with the core's code, status and details. */
export type Generate = (request: GenerateRequest) => Promise<GenerateAnswer>;

/** `generate` through MCP with `tools` (the execution's client). */
export function mcpGenerate(tools: ToolsClient): Generate {
  return async (request) => {
    const args: Record<string, unknown> = { messages: request.messages };
    // Only what is set: a core that does not know a field refuses it.
    if (request.model !== undefined) args['model'] = request.model;
    if (request.maxTokens !== undefined) args['maxTokens'] = request.maxTokens;
    if (request.temperature !== undefined) args['temperature'] = request.temperature;
    if (request.tools !== undefined && request.tools.length > 0) args['tools'] = request.tools;
    if (request.responseSchema !== undefined) args['responseSchema'] = request.responseSchema;
    if (request.cacheTtlSeconds !== undefined) args['cacheTtlSeconds'] = request.cacheTtlSeconds;
    if (request.stream !== undefined) args['stream'] = request.stream;
    return readAnswer(await tools.call(GENERATE_TOOL, args));
  };
}

/** The answer's fields, checked; a malformed answer is UHLP_LLM_BAD_RESPONSE. */
export function readAnswer(content: Record<string, unknown>): GenerateAnswer {
  const bad = (why: string): never => {
    throw ToolCallError.of('UHLP_LLM_BAD_RESPONSE', `${GENERATE_TOOL} answered ${why}`);
  };
  const text = content['text'];
  if (text !== null && text !== undefined && typeof text !== 'string') bad('a text that is not a string');
  const rawCalls = content['toolCalls'] ?? [];
  if (!Array.isArray(rawCalls)) bad('toolCalls that are not a list');
  const toolCalls = (rawCalls as unknown[]).map((raw, index): LlmToolCall => {
    const call = raw as { id?: unknown; name?: unknown; arguments?: unknown };
    if (typeof call?.name !== 'string') return bad(`a tool call (${index}) without a name`);
    const args = typeof call.arguments === 'string' ? call.arguments : call.arguments === undefined ? '{}' : JSON.stringify(call.arguments);
    return { id: typeof call.id === 'string' ? call.id : `call_${index}`, name: call.name, arguments: args };
  });
  if ((text === null || text === undefined) && toolCalls.length === 0) bad('neither text nor tool calls');
  const usage = content['usage'] as { prompt?: unknown; completion?: unknown } | undefined;
  return {
    text: typeof text === 'string' ? text : null,
    toolCalls,
    finishReason: typeof content['finishReason'] === 'string' ? content['finishReason'] : toolCalls.length > 0 ? 'tool_calls' : 'stop',
    model: typeof content['model'] === 'string' ? content['model'] : '',
    usage: { prompt: typeof usage?.prompt === 'number' ? usage.prompt : 0, completion: typeof usage?.completion === 'number' ? usage.completion : 0 },
    cached: content['cached'] === true,
  };
}
