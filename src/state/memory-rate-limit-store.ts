/** Rate limits in memory: each app's GCRA state (its theoretical arrival time), expiring when the bucket is full again. */
import { ExpiringMap } from './expiring-map.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { decideGcra } from './rate-limit-gcra.js';
import type { RateLimitDecision, RateLimitStore } from './rate-limit-store.js';

export class MemoryRateLimitStore implements RateLimitStore, SweptStore {
  /** Theoretical arrival time per app, in microseconds. */
  private readonly rates: ExpiringMap<number>;

  constructor(private readonly context: MemoryContext) {
    this.rates = new ExpiringMap(context.now);
  }

  async hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision> {
    this.context.assertOpen();
    const now = this.context.now();
    const decision = decideGcra(this.rates.live(appId)?.value, Math.round(now * 1000), limitPerSecond);
    if (decision.allowed) this.rates.set(appId, decision.tatUs, now + decision.ttlMs);
    return { allowed: decision.allowed, retryAfterMs: decision.retryAfterMs };
  }

  sweep(): void {
    this.rates.sweep();
  }
}
