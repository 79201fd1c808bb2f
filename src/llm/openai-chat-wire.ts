/**
 * OpenAI's chat-completions wire format, both ways: the request body built
 * from a normalized request (messages with `tool_calls` and `role: "tool"`,
 * function tools, `response_format`, streaming options), and a non-streaming
 * answer read back into a result. The streaming answer is assembled in
 * openai-chat-stream.ts into the same result through `completionResult`.
 */
import type { LlmMessage, LlmToolCall, LlmUsage } from '../contract/llm-messages.js';
import { UhlpError } from '../shared/errors.js';
import { estimateTokens, type LlmGenerateResult, type NormalizedLlmRequest } from './llm-provider.js';

/**
 * How a response schema is asked for. `json_schema`: OpenAI's
 * `response_format: {type: "json_schema", json_schema: {name, schema, strict: false}}`,
 * which vLLM (guided decoding), Ollama and llama.cpp's server also take.
 * `json_object`: `{type: "json_object"}` only, for servers that know JSON mode
 * but not schemas (the prompt must then describe the shape). `none`: nothing is
 * sent; the caller's validation is all there is.
 */
export const STRUCTURED_OUTPUT_MODES = ['json_schema', 'json_object', 'none'] as const;
export type StructuredOutputMode = (typeof STRUCTURED_OUTPUT_MODES)[number];

export interface ChatBodyOptions {
  readonly stream: boolean;
  readonly structuredOutput: StructuredOutputMode;
}

/** How much of an upstream error body is kept in error details. */
const UPSTREAM_MESSAGE_CHARS = 500;

/** The JSON body of `POST /chat/completions` for a request. */
export function chatRequestBody(request: NormalizedLlmRequest, options: ChatBodyOptions): string {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: request.messages.map(wireMessage),
    max_tokens: request.maxTokens,
  };
  if (request.temperature !== undefined) body['temperature'] = request.temperature;
  if (request.tools !== undefined) {
    body['tools'] = request.tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, ...(tool.description !== undefined ? { description: tool.description } : {}), parameters: tool.parameters },
    }));
  }
  if (request.responseSchema !== undefined && options.structuredOutput !== 'none') {
    body['response_format'] =
      options.structuredOutput === 'json_schema'
        ? // strict: false, because strict mode refuses most schemas people write (optional properties, formats).
          { type: 'json_schema', json_schema: { name: request.responseSchema.name, schema: request.responseSchema.schema, strict: false } }
        : { type: 'json_object' };
  }
  if (options.stream) {
    body['stream'] = true;
    // Without it a streamed answer carries no token counts at all.
    body['stream_options'] = { include_usage: true };
  }
  return JSON.stringify(body);
}

function wireMessage(message: LlmMessage): Record<string, unknown> {
  switch (message.role) {
    case 'assistant':
      return message.toolCalls === undefined
        ? { role: 'assistant', content: message.content }
        : {
            role: 'assistant',
            content: message.content,
            tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
          };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
  }
}

/** What a completion's message says, before it becomes a result. */
export interface CompletionParts {
  readonly content: string | null;
  readonly toolCalls: readonly LlmToolCall[];
  readonly finishReason: string | undefined;
  readonly model: string | undefined;
  readonly usage: LlmUsage | undefined;
}

/**
 * A result from what the server said. `content: null` without tool calls is an
 * answer only when the server says it was cut (`length`, `content_filter`);
 * otherwise the server answered nothing, which is not a completion. Usage the
 * server did not report is estimated, so that budgets still count.
 */
export function completionResult(parts: CompletionParts, request: NormalizedLlmRequest, redactedBody: () => string): LlmGenerateResult {
  const content = parts.toolCalls.length > 0 && parts.content === '' ? null : parts.content;
  if (content === null && parts.toolCalls.length === 0 && parts.finishReason !== 'length' && parts.finishReason !== 'content_filter') {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider answer has neither content nor tool calls', { upstreamMessage: redactedBody() });
  }
  return {
    text: content,
    toolCalls: parts.toolCalls,
    finishReason: parts.finishReason ?? (parts.toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    model: parts.model !== undefined && parts.model !== '' ? parts.model : request.model,
    usage: parts.usage ?? estimatedUsage(request, content, parts.toolCalls),
  };
}

/** Reads a non-streaming chat completion. */
export function parseChatCompletion(text: string, request: NormalizedLlmRequest, redact: (text: string) => string): LlmGenerateResult {
  const redactedBody = (): string => redact(upstreamMessage(text));
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider answered something that is not JSON', { upstreamMessage: redactedBody() });
  }
  const completion = (typeof value === 'object' && value !== null ? value : {}) as {
    model?: unknown;
    choices?: unknown;
    usage?: unknown;
  };
  const choice = Array.isArray(completion.choices) ? (completion.choices[0] as { message?: unknown; finish_reason?: unknown } | undefined) : undefined;
  const message = (typeof choice?.message === 'object' && choice.message !== null ? choice.message : undefined) as
    | { content?: unknown; tool_calls?: unknown }
    | undefined;
  if (message === undefined) {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider answer has no choices[0].message', { upstreamMessage: redactedBody() });
  }
  const content = message.content ?? null;
  if (content !== null && typeof content !== 'string') {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider answer has a choices[0].message.content that is not a string', { upstreamMessage: redactedBody() });
  }
  let toolCalls: LlmToolCall[] = [];
  if (message.tool_calls !== undefined && message.tool_calls !== null) {
    if (!Array.isArray(message.tool_calls)) {
      throw new UhlpError('UHLP_LLM_BAD_RESPONSE', 'LLM provider answer has tool_calls that are not a list', { upstreamMessage: redactedBody() });
    }
    toolCalls = message.tool_calls.map((call: unknown, index) => {
      const record = (typeof call === 'object' && call !== null ? call : {}) as { id?: unknown; function?: { name?: unknown; arguments?: unknown } };
      return toolCall(index, record.id, record.function?.name, record.function?.arguments, redactedBody);
    });
  }
  return completionResult(
    {
      content,
      toolCalls,
      finishReason: typeof choice?.finish_reason === 'string' ? choice.finish_reason : undefined,
      model: typeof completion.model === 'string' ? completion.model : undefined,
      usage: readUsage(completion.usage),
    },
    request,
    redactedBody,
  );
}

/**
 * One tool call as the server wrote it. Ids are made up when missing (some
 * local servers send none) so that tool results can still refer to them;
 * arguments sent as an object (some servers do) are turned back into JSON text.
 */
export function toolCall(index: number, id: unknown, name: unknown, args: unknown, redactedBody: () => string): LlmToolCall {
  if (typeof name !== 'string' || name === '') {
    throw new UhlpError('UHLP_LLM_BAD_RESPONSE', `LLM provider answer has a tool call without a function name (tool call ${index})`, {
      upstreamMessage: redactedBody(),
    });
  }
  const text = typeof args === 'string' ? args : args === undefined || args === null ? '{}' : JSON.stringify(args);
  return { id: typeof id === 'string' && id !== '' ? id : `call_${index}`, name, arguments: text };
}

/** `{prompt_tokens, completion_tokens}` as counts; undefined when the server sent no usage object. */
export function readUsage(raw: unknown): LlmUsage | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const usage = raw as { prompt_tokens?: unknown; completion_tokens?: unknown };
  return { prompt: count(usage.prompt_tokens), completion: count(usage.completion_tokens) };
}

function estimatedUsage(request: NormalizedLlmRequest, content: string | null, toolCalls: readonly LlmToolCall[]): LlmUsage {
  const prompt = request.messages.map((message) => message.content ?? '').join('\n');
  const completion = (content ?? '') + toolCalls.map((call) => call.name + call.arguments).join('');
  return { prompt: estimateTokens(prompt), completion: estimateTokens(completion) };
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

/** The upstream's error message if it sent OpenAI's error shape, else the start of the body. */
export function upstreamMessage(text: string): string {
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === 'string') return parsed.error.message.slice(0, UPSTREAM_MESSAGE_CHARS);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.slice(0, UPSTREAM_MESSAGE_CHARS);
}
