/**
 * The seam behind `core.llm.generate`: one call in, one completion out. Two
 * implementations: an OpenAI-compatible chat-completions client and a scripted
 * provider answering from a file, the offline default. Both validate requests
 * the same way through `normalizeRequest`.
 */
import { UhlpError } from '../errors.js';

export type LlmRole = 'system' | 'user' | 'assistant';

export interface LlmMessage {
  readonly role: LlmRole;
  readonly content: string;
}

export interface LlmGenerateRequest {
  /** Model name; a provider may fall back to its configured default when absent. */
  readonly model?: string;
  /** The conversation. Either this or `prompt`. */
  readonly messages?: readonly LlmMessage[];
  /** A single user message; shorthand for `messages: [{ role: 'user', content: prompt }]`. */
  readonly prompt?: string;
  /** Upper bound of completion tokens. */
  readonly maxTokens: number;
  /** Sampling temperature, 0-2. @defaultValue the provider's */
  readonly temperature?: number;
  /** Aborts the call; its reason is thrown. */
  readonly signal?: AbortSignal;
}

export interface LlmUsage {
  readonly prompt: number;
  readonly completion: number;
}

export interface LlmGenerateResult {
  readonly text: string;
  /** The model that answered, as the provider names it. */
  readonly model: string;
  readonly usage: LlmUsage;
}

export interface LlmProvider {
  /** `openai-compatible` or `scripted`, for logs. */
  readonly kind: string;
  /** The model used when a request names none, if the provider has one. */
  readonly defaultModel?: string;
  generate(request: LlmGenerateRequest): Promise<LlmGenerateResult>;
}

/** A request checked once, with `prompt` turned into messages. */
export interface NormalizedLlmRequest {
  readonly model: string;
  readonly messages: readonly LlmMessage[];
  readonly maxTokens: number;
  readonly temperature?: number;
}

const ROLES = new Set<string>(['system', 'user', 'assistant']);

/** Validates a request; throws UHLP_LLM_INVALID_REQUEST naming the field at fault. */
export function normalizeRequest(request: LlmGenerateRequest, defaultModel?: string): NormalizedLlmRequest {
  const model = request.model ?? defaultModel;
  if (typeof model !== 'string' || model === '') throw invalid('model', 'model is required (no default model is configured)');
  let messages: readonly LlmMessage[];
  if (request.messages !== undefined && request.prompt !== undefined) throw invalid('messages', 'give messages or prompt, not both');
  if (request.prompt !== undefined) {
    if (typeof request.prompt !== 'string' || request.prompt === '') throw invalid('prompt', 'prompt must be a non-empty string');
    messages = [{ role: 'user', content: request.prompt }];
  } else if (request.messages !== undefined) {
    if (!Array.isArray(request.messages) || request.messages.length === 0) throw invalid('messages', 'messages must be a non-empty array');
    for (const [index, message] of request.messages.entries()) {
      if (!ROLES.has((message as { role?: unknown })?.role as string) || typeof message.content !== 'string') {
        throw invalid(`messages[${index}]`, 'each message needs a role (system, user, assistant) and string content');
      }
    }
    // Only role and content go upstream: anything else a caller attached is not ours to forward.
    messages = request.messages.map((message) => ({ role: message.role, content: message.content }));
  } else {
    throw invalid('messages', 'messages or prompt is required');
  }
  if (!Number.isInteger(request.maxTokens) || request.maxTokens < 1) throw invalid('maxTokens', 'maxTokens must be a positive integer');
  if (request.temperature !== undefined && (typeof request.temperature !== 'number' || !(request.temperature >= 0 && request.temperature <= 2))) {
    throw invalid('temperature', 'temperature must be a number from 0 to 2');
  }
  return {
    model,
    messages,
    maxTokens: request.maxTokens,
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
  };
}

function invalid(field: string, message: string): UhlpError {
  return new UhlpError('UHLP_LLM_INVALID_REQUEST', message, { field });
}
