/** The LLM layer's state on Redis: a counter per (app, UTC day) (llm-tokens-add-1) and one string key per cached answer. */
import type { LlmStore } from './llm-store.js';
import type { RedisStoreClient } from './redis-calls.js';

export class RedisLlmStore implements LlmStore {
  constructor(private readonly client: RedisStoreClient) {}

  async getLlmTokens(appId: string, day: string): Promise<number> {
    return Number((await this.client.call(() => this.client.redis.get(this.client.keys.llmTokens(appId, day)))) ?? 0);
  }

  async addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number> {
    return Number(await this.client.script('llmTokensAdd', [this.client.keys.llmTokens(appId, day)], [tokens, ttlMs]));
  }

  async getLlmCached(appId: string, key: string): Promise<string | undefined> {
    return (await this.client.call(() => this.client.redis.get(this.client.keys.llmCache(appId, key)))) ?? undefined;
  }

  async setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void> {
    await this.client.call(() => this.client.redis.set(this.client.keys.llmCache(appId, key), value, 'PX', ttlMs));
  }
}
