/**
 * The suite every RateLimitStore passes, memory and Redis alike: the limit per
 * second, bursts, retry delays.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { RateLimitStore } from '../../src/state/rate-limit-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeRateLimitStore(name: string, makeStore: MakeStore<RateLimitStore>): void {
  const it = storeTest(makeStore);
  describe(`RateLimitStore contract: ${name}`, () => {
    it('allows the limit, denies the next hit with a retry delay, and allows again after it', async ({ store }) => {
      const first = await Promise.all(Array.from({ length: 5 }, () => store.hitRateLimit('shop', 5)));
      expect(first.every((d) => d.allowed && d.retryAfterMs === 0)).toBe(true);
      const denied = await store.hitRateLimit('shop', 5);
      expect(denied.allowed).toBe(false);
      expect(denied.retryAfterMs).toBeGreaterThan(0);
      // One token comes back every 1000/5 ms.
      expect(denied.retryAfterMs).toBeLessThanOrEqual(200);
      // Another app has its own budget.
      expect((await store.hitRateLimit('other', 5)).allowed).toBe(true);
      await waitFor(async () => (await store.hitRateLimit('shop', 5)).allowed, { timeoutMs: 3000, intervalMs: 25, what: 'rate window to slide' });
    });

    it('lets exactly the limit through from a burst of concurrent hits', async ({ store }) => {
      // Limit 2 refills one token per 500 ms, far longer than the burst takes.
      const burst = await Promise.all(Array.from({ length: 50 }, () => store.hitRateLimit('burst', 2)));
      expect(burst.filter((d) => d.allowed)).toHaveLength(2);
      expect(burst.filter((d) => !d.allowed).every((d) => d.retryAfterMs > 0 && d.retryAfterMs <= 500)).toBe(true);
    });

    it('refuses a limit that is not a positive integer', async ({ store }) => {
      expect((await codeOf(store.hitRateLimit('shop', 0))).details).toEqual({ field: 'limitPerSecond' });
      expect((await codeOf(store.hitRateLimit('shop', 2.5))).details).toEqual({ field: 'limitPerSecond' });
      expect((await codeOf(store.hitRateLimit('shop', 1_000_001))).details).toEqual({ field: 'limitPerSecond' });
    });
  });
}
