/** Per-app rate limits, shared by every core replica on Redis (the algorithm: rate-limit-gcra.ts). */

export interface RateLimitDecision {
  allowed: boolean;
  /** 0 when allowed; otherwise the wait after which a hit would be allowed. */
  retryAfterMs: number;
}

export interface RateLimitStore {
  /**
   * Counts one request of an app against `limitPerSecond`: a token bucket (GCRA)
   * that lets up to `limitPerSecond` requests through at once and refills at
   * `limitPerSecond` per second. Denied hits are not counted.
   */
  hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision>;
}
