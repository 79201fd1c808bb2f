/** Rate limits on Redis: each app's GCRA state in one key, decided by a Lua script on Redis's clock (rate-limit-1). */
import type { RateLimitDecision, RateLimitStore } from './rate-limit-store.js';
import type { RedisStoreClient } from './redis-calls.js';

export class RedisRateLimitStore implements RateLimitStore {
  constructor(private readonly client: RedisStoreClient) {}

  async hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision> {
    const [allowed, retryAfterMs] = (await this.client.script('rateLimit', [this.client.keys.rateLimit(appId)], [limitPerSecond])) as [number, number];
    return { allowed: allowed === 1, retryAfterMs: Number(retryAfterMs) };
  }
}
