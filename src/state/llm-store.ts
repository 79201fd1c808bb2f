/**
 * The LLM layer's state: what each app spent in tokens per UTC day (its budget,
 * src/llm/llm-budget.ts) and the answers it may reuse (src/llm/llm-answer-cache.ts).
 */

export interface LlmStore {
  /** Tokens (prompt and completion) an app has spent on one UTC day (`YYYY-MM-DD`); 0 when none. */
  getLlmTokens(appId: string, day: string): Promise<number>;
  /**
   * Adds `tokens` to the app's count of `day` atomically and returns the new
   * count. The count expires `ttlMs` after its first tokens (the caller sets it
   * past the day's end), so old days clean themselves up.
   */
  addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number>;
  /** A cached LLM answer of an app by its request hash (the caller's JSON text); undefined when absent or expired. */
  getLlmCached(appId: string, key: string): Promise<string | undefined>;
  /** Stores an LLM answer of an app for `ttlMs`, replacing any earlier one. */
  setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void>;
}
