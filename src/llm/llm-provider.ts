/**
 * The seam behind `core.llm.generate`: one call in, one completion out. Two
 * implementations: an OpenAI-compatible chat-completions client and a scripted
 * provider answering from a file, the offline default. Both validate requests
 * the same way through `normalizeRequest`.
 *
 * The shapes are OpenAI's chat completions in camelCase, with the messages,
 * tools and usage of src/contract/llm-messages.ts (the orchestrator sends the
 * same through MCP). A result is the model's text, or its tool calls, or both,
 * with why it stopped and the tokens it took.
 */
import type { LlmMessage, LlmResponseSchema, LlmToolCall, LlmToolSpec, LlmUsage } from '../contract/llm-messages.js';
import { UhlpError } from '../shared/errors.js';

export interface LlmGenerateRequest {
  /** Model name; a provider may fall back to its configured default when absent. */
  readonly model?: string;
  /** A system message placed first. @defaultValue none */
  readonly system?: string;
  /** The conversation. Either this or `prompt`. */
  readonly messages?: readonly LlmMessage[];
  /** A single user message; shorthand for `messages: [{ role: 'user', content: prompt }]`. */
  readonly prompt?: string;
  /** Upper bound of completion tokens. */
  readonly maxTokens: number;
  /** Sampling temperature, 0-2. @defaultValue the provider's */
  readonly temperature?: number;
  /** Functions the model may call. @defaultValue none */
  readonly tools?: readonly LlmToolSpec[];
  /** Structured output, where the provider supports it. @defaultValue none: free text */
  readonly responseSchema?: LlmResponseSchema;
  /** Aborts the call; its reason is thrown. */
  readonly signal?: AbortSignal;
  /**
   * Told each piece of the answer's text as the provider produces it (the
   * OpenAI-compatible provider then streams the call, whatever its `stream`
   * setting). The result is the same. @defaultValue none
   */
  readonly onDelta?: (text: string) => void;
}

export interface LlmGenerateResult {
  /** The model's text; null when it only called tools. */
  readonly text: string | null;
  /** The calls the model asked for, in order; empty when it answered with text. */
  readonly toolCalls: readonly LlmToolCall[];
  /** Why the model stopped: `stop`, `length`, `tool_calls`, `content_filter`, or what the server said. */
  readonly finishReason: string;
  /** The model that answered, as the provider names it. */
  readonly model: string;
  readonly usage: LlmUsage;
}

export interface LlmProvider {
  /** `openai-compatible` or `scripted`, for logs, evidence and cache keys. */
  readonly kind: string;
  /**
   * Which server answers (its chat completions URL, for a provider that calls one): part of the answer cache's
   * key, so an app that moves to its own endpoint is never served answers another server gave.
   */
  readonly endpoint?: string;
  /** The model used when a request names none, if the provider has one. */
  readonly defaultModel?: string;
  generate(request: LlmGenerateRequest): Promise<LlmGenerateResult>;
}

/** A request checked once: `prompt` and `system` turned into messages, everything copied to plain objects. */
export interface NormalizedLlmRequest {
  readonly model: string;
  readonly messages: readonly LlmMessage[];
  readonly maxTokens: number;
  readonly temperature?: number;
  readonly tools?: readonly LlmToolSpec[];
  readonly responseSchema?: LlmResponseSchema;
}

/** Function and schema names, as OpenAI (and the servers copying it) accept them. */
export const TOOL_NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** OpenAI's ceiling of tools per request; servers copying it refuse more. */
export const MAX_TOOLS = 128;
const MAX_TOOL_CALL_ID_CHARS = 256;

/** Calls made by `normalizedCall`: already checked, so a provider's own `normalizeRequest` takes them as they are. */
const NORMALIZED_CALLS = new WeakSet<object>();

/**
 * A call of a request normalized once (by the LLM service), with the caller's
 * signal and delta listener: the provider's `normalizeRequest` returns it
 * unchanged instead of checking and copying it a second time. Frozen, so it
 * stays what was checked.
 */
export function normalizedCall(request: NormalizedLlmRequest, signal?: AbortSignal, onDelta?: (text: string) => void): LlmGenerateRequest & NormalizedLlmRequest {
  const call = Object.freeze({ ...request, ...(signal !== undefined ? { signal } : {}), ...(onDelta !== undefined ? { onDelta } : {}) });
  NORMALIZED_CALLS.add(call);
  return call;
}

/** Validates a request; throws UHLP_LLM_INVALID_REQUEST naming the field at fault. */
export function normalizeRequest(request: LlmGenerateRequest, defaultModel?: string): NormalizedLlmRequest {
  // Checked once already (normalizedCall): its model is set, so a default changes nothing either.
  if (NORMALIZED_CALLS.has(request)) return request as LlmGenerateRequest & NormalizedLlmRequest;
  const model = request.model ?? defaultModel;
  if (typeof model !== 'string' || model === '') throw invalid('model', 'model is required (no default model is configured)');
  if (request.messages !== undefined && request.prompt !== undefined) throw invalid('messages', 'give messages or prompt, not both');
  let messages: LlmMessage[];
  if (request.prompt !== undefined) {
    if (typeof request.prompt !== 'string' || request.prompt === '') throw invalid('prompt', 'prompt must be a non-empty string');
    messages = [{ role: 'user', content: request.prompt }];
  } else if (request.messages !== undefined) {
    if (!Array.isArray(request.messages) || request.messages.length === 0) throw invalid('messages', 'messages must be a non-empty array');
    messages = request.messages.map((message, index) => normalizeMessage(message, `messages[${index}]`));
  } else {
    throw invalid('messages', 'messages or prompt is required');
  }
  if (request.system !== undefined) {
    if (typeof request.system !== 'string' || request.system === '') throw invalid('system', 'system must be a non-empty string');
    messages.unshift({ role: 'system', content: request.system });
  }
  checkToolResults(messages);
  if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) throw invalid('maxTokens', 'maxTokens must be a positive integer');
  if (request.temperature !== undefined && (typeof request.temperature !== 'number' || !(request.temperature >= 0 && request.temperature <= 2))) {
    throw invalid('temperature', 'temperature must be a number from 0 to 2');
  }
  const tools = request.tools === undefined ? undefined : normalizeTools(request.tools);
  const responseSchema = request.responseSchema === undefined ? undefined : normalizeSchema(request.responseSchema);
  return {
    model,
    messages,
    maxTokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(tools !== undefined && tools.length > 0 ? { tools } : {}),
    ...(responseSchema !== undefined ? { responseSchema } : {}),
  };
}

/** The fields each role may carry besides `role`; any other field is a caller's mistake worth naming. */
const ROLE_FIELDS: Readonly<Record<string, readonly string[]>> = {
  system: ['content'],
  user: ['content'],
  assistant: ['content', 'toolCalls'],
  tool: ['toolCallId', 'content'],
};

/** Only the fields of the message's role go upstream: anything else a caller attached is not ours to forward. */
function normalizeMessage(raw: unknown, field: string): LlmMessage {
  if (typeof raw !== 'object' || raw === null) throw invalid(field, 'each message must be an object');
  const message = raw as Record<string, unknown>;
  const stray = Object.keys(message).find((key) => key !== 'role' && !(ROLE_FIELDS[String(message['role'])] ?? []).includes(key));
  if (stray !== undefined && ROLE_FIELDS[String(message['role'])] !== undefined) {
    throw invalid(`${field}.${stray}`, `a ${String(message['role'])} message has no ${stray}`);
  }
  switch (message['role']) {
    case 'system':
    case 'user':
      if (typeof message['content'] !== 'string') throw invalid(`${field}.content`, `a ${message['role']} message needs string content`);
      return { role: message['role'], content: message['content'] };
    case 'assistant': {
      const content = message['content'] ?? null;
      if (content !== null && typeof content !== 'string') throw invalid(`${field}.content`, 'an assistant message has string or null content');
      const toolCalls = message['toolCalls'] === undefined ? [] : normalizeToolCalls(message['toolCalls'], `${field}.toolCalls`);
      if (content === null && toolCalls.length === 0) throw invalid(field, 'an assistant message needs content or toolCalls');
      return toolCalls.length > 0 ? { role: 'assistant', content, toolCalls } : { role: 'assistant', content };
    }
    case 'tool':
      if (!isToolCallId(message['toolCallId'])) throw invalid(`${field}.toolCallId`, 'a tool message needs the toolCallId it answers');
      if (typeof message['content'] !== 'string') throw invalid(`${field}.content`, 'a tool message needs string content');
      return { role: 'tool', toolCallId: message['toolCallId'], content: message['content'] };
    default:
      throw invalid(`${field}.role`, 'each message needs a role: system, user, assistant or tool');
  }
}

function normalizeToolCalls(raw: unknown, field: string): LlmToolCall[] {
  if (!Array.isArray(raw)) throw invalid(field, 'toolCalls must be an array');
  return raw.map((call: unknown, index) => {
    const record = (typeof call === 'object' && call !== null ? call : {}) as Record<string, unknown>;
    if (!isToolCallId(record['id'])) throw invalid(`${field}[${index}].id`, 'a tool call needs an id');
    if (typeof record['name'] !== 'string' || !TOOL_NAME_PATTERN.test(record['name'])) {
      throw invalid(`${field}[${index}].name`, `a tool call name matches ${TOOL_NAME_PATTERN.source}`);
    }
    if (typeof record['arguments'] !== 'string') throw invalid(`${field}[${index}].arguments`, 'tool call arguments are the JSON text the model wrote');
    return { id: record['id'], name: record['name'], arguments: record['arguments'] };
  });
}

/**
 * Every tool message answers a call of an earlier assistant message. Servers
 * refuse a conversation that breaks this with an opaque 400; saying which
 * message is at fault is kinder.
 */
function checkToolResults(messages: readonly LlmMessage[]): void {
  const asked = new Set<string>();
  messages.forEach((message, index) => {
    if (message.role === 'assistant') for (const call of message.toolCalls ?? []) asked.add(call.id);
    if (message.role === 'tool' && !asked.has(message.toolCallId)) {
      throw invalid(`messages[${index}].toolCallId`, `no earlier assistant message has a tool call with id ${JSON.stringify(message.toolCallId.slice(0, 64))}`);
    }
  });
}

function normalizeTools(raw: unknown): LlmToolSpec[] {
  if (!Array.isArray(raw)) throw invalid('tools', 'tools must be an array');
  if (raw.length > MAX_TOOLS) throw invalid('tools', `at most ${MAX_TOOLS} tools`);
  const names = new Set<string>();
  return raw.map((tool: unknown, index) => {
    const record = (typeof tool === 'object' && tool !== null ? tool : {}) as Record<string, unknown>;
    const name = record['name'];
    if (typeof name !== 'string' || !TOOL_NAME_PATTERN.test(name)) throw invalid(`tools[${index}].name`, `a tool name matches ${TOOL_NAME_PATTERN.source}`);
    if (names.has(name)) throw invalid(`tools[${index}].name`, `tool ${name} is listed twice`);
    names.add(name);
    const description = record['description'];
    if (description !== undefined && typeof description !== 'string') throw invalid(`tools[${index}].description`, 'a tool description is a string');
    if (!isPlainObject(record['parameters'])) throw invalid(`tools[${index}].parameters`, 'tool parameters are a JSON Schema object');
    return { name, ...(description !== undefined ? { description } : {}), parameters: record['parameters'] };
  });
}

function normalizeSchema(raw: unknown): LlmResponseSchema {
  const record = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof record['name'] !== 'string' || !TOOL_NAME_PATTERN.test(record['name'])) {
    throw invalid('responseSchema.name', `a response schema name matches ${TOOL_NAME_PATTERN.source}`);
  }
  if (!isPlainObject(record['schema'])) throw invalid('responseSchema.schema', 'the response schema is a JSON Schema object');
  return { name: record['name'], schema: record['schema'] };
}

function isToolCallId(value: unknown): value is string {
  return typeof value === 'string' && value !== '' && value.length <= MAX_TOOL_CALL_ID_CHARS;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(field: string, message: string): UhlpError {
  return new UhlpError('UHLP_LLM_INVALID_REQUEST', message, { field });
}

/**
 * A rough token count (four characters a token, OpenAI's rule of thumb), for
 * the scripted provider and for servers that report no usage, so that token
 * metrics and budgets still count something.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}
