/**
 * The exact-match answer cache of `core.llm.generate`: an answer is kept per
 * app under the hash of the canonical JSON of the whole request (provider,
 * model, messages, tools, response schema, maxTokens), for the TTL the call
 * asks. Only deterministic requests (temperature 0) are cached: at any other
 * temperature the same request is meant to get another answer.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json.js';
import type { LlmStore } from '../state/llm-store.js';
import type { LlmToolCall } from '../contract/llm-messages.js';
import type { LlmGenerateResult, LlmProvider, NormalizedLlmRequest } from './llm-provider.js';

export type LlmCacheStore = Pick<LlmStore, 'getLlmCached' | 'setLlmCached'>;

/** What a cache entry holds: the answer without its usage (a hit spends nothing). */
export type CachedAnswer = Omit<LlmGenerateResult, 'usage'>;

/** Bumped when the key's content or the entry's shape changes, so old entries are never read as new ones. */
const CACHE_FORMAT = 1;

/** Whether a call may use the cache: a TTL was asked and the temperature is exactly 0. */
export function isCacheable(request: NormalizedLlmRequest, ttlSeconds: number | undefined): ttlSeconds is number {
  return ttlSeconds !== undefined && ttlSeconds > 0 && request.temperature === 0;
}

/** The key of a request: hex sha256 of its canonical JSON. */
export function answerCacheKey(provider: Pick<LlmProvider, 'kind' | 'endpoint'>, request: NormalizedLlmRequest): string {
  return hash(
    'sha256',
    canonicalJson({
      format: CACHE_FORMAT,
      provider: provider.kind,
      endpoint: provider.endpoint ?? null,
      model: request.model,
      messages: request.messages,
      tools: request.tools,
      responseSchema: request.responseSchema,
      maxTokens: request.maxTokens,
      temperature: request.temperature,
    }),
    'hex',
  );
}

export async function readCachedAnswer(store: LlmCacheStore, appId: string, key: string): Promise<CachedAnswer | undefined> {
  const text = await store.getLlmCached(appId, key);
  return text === undefined ? undefined : parseEntry(text);
}

export async function writeCachedAnswer(store: LlmCacheStore, appId: string, key: string, answer: LlmGenerateResult, ttlSeconds: number): Promise<void> {
  const entry = { format: CACHE_FORMAT, text: answer.text, toolCalls: answer.toolCalls, finishReason: answer.finishReason, model: answer.model };
  await store.setLlmCached(appId, key, JSON.stringify(entry), Math.round(ttlSeconds * 1000));
}

/** An entry that is not what this code writes (another version, a shared Redis) is a miss, never an answer. */
function parseEntry(text: string): CachedAnswer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  const entry = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const { format, text: answerText, toolCalls, finishReason, model } = entry;
  if (format !== CACHE_FORMAT || (answerText !== null && typeof answerText !== 'string')) return undefined;
  if (typeof finishReason !== 'string' || typeof model !== 'string' || !Array.isArray(toolCalls)) return undefined;
  if (!toolCalls.every(isToolCall)) return undefined;
  return { text: answerText, toolCalls, finishReason, model };
}

function isToolCall(value: unknown): value is LlmToolCall {
  const call = value as Record<string, unknown> | null;
  return typeof call === 'object' && call !== null && typeof call['id'] === 'string' && typeof call['name'] === 'string' && typeof call['arguments'] === 'string';
}
