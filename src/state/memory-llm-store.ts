/** The LLM layer's token counts and cached answers in memory. */
import { ExpiringMap } from './expiring-map.js';
import type { LlmStore } from './llm-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { RuntimeKeys } from './runtime-keys.js';

export class MemoryLlmStore implements LlmStore, SweptStore {
  private readonly tokens: ExpiringMap<number>;
  private readonly answers: ExpiringMap<string>;
  // Tuples become keys through the same builder Redis uses, so both agree on identity.
  private readonly keys = new RuntimeKeys('');

  constructor(private readonly context: MemoryContext) {
    this.tokens = new ExpiringMap(context.now);
    this.answers = new ExpiringMap(context.now);
  }

  async getLlmTokens(appId: string, day: string): Promise<number> {
    this.context.assertOpen();
    return this.tokens.live(this.keys.llmTokens(appId, day))?.value ?? 0;
  }

  async addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number> {
    this.context.assertOpen();
    const id = this.keys.llmTokens(appId, day);
    const entry = this.tokens.live(id);
    if (entry) {
      entry.value += tokens;
      return entry.value;
    }
    this.tokens.set(id, tokens, this.context.now() + ttlMs);
    return tokens;
  }

  async getLlmCached(appId: string, key: string): Promise<string | undefined> {
    this.context.assertOpen();
    return this.answers.live(this.keys.llmCache(appId, key))?.value;
  }

  async setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void> {
    this.context.assertOpen();
    this.answers.set(this.keys.llmCache(appId, key), value, this.context.now() + ttlMs);
  }

  sweep(): void {
    this.tokens.sweep();
    this.answers.sweep();
  }
}
