/**
 * The suite every IdempotencyStore passes, memory and Redis alike: claims,
 * replays, fingerprints, abandonment, expiry, waiting for a twin.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { IdempotencyStore, StoredResponse } from '../../src/state/idempotency-store.js';
import { waitForIdempotentCompletion } from '../../src/state/idempotency-wait.js';
import { waitFor } from '../helpers/wait-for.js';
import { storeTest, type MakeStore } from './store-fixture.js';

const RESPONSE: StoredResponse = { statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };

export function describeIdempotencyStore(name: string, makeStore: MakeStore<IdempotencyStore>): void {
  const it = storeTest(makeStore);
  describe(`IdempotencyStore contract: ${name}`, () => {
    it('claims a key once, reports it in flight, then replays the stored response', async ({ store }) => {
      expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toBe('new');
      expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toEqual({ state: 'in-flight' });
      expect(await store.getIdempotent('shop', 'k1')).toEqual({ state: 'in-flight' });
      await store.completeIdempotent('shop', 'k1', RESPONSE, 60_000);
      expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toEqual({ state: 'completed', response: RESPONSE });
      // Keys are per app.
      expect(await store.beginIdempotent('other', 'k1', { inFlightTtlMs: 60_000 })).toBe('new');
    });

    it('claims several keys in one step, each as a claim of its own would be answered, with its own in-flight ttl', async ({ store }) => {
      await store.beginIdempotent('shop', 'm-held', { inFlightTtlMs: 60_000, fingerprint: 'q' });
      await store.beginIdempotent('shop', 'm-done', { inFlightTtlMs: 60_000, fingerprint: 'q' });
      await store.completeIdempotent('shop', 'm-done', RESPONSE, 60_000);
      await store.beginIdempotent('shop', 'm-other', { inFlightTtlMs: 60_000, fingerprint: 'other' });
      const begun = await store.beginIdempotentMany('shop', [
        { key: 'm-new', fingerprint: 'q', inFlightTtlMs: 60_000 },
        { key: 'm-held', fingerprint: 'q', inFlightTtlMs: 60_000 },
        { key: 'm-done', fingerprint: 'q', inFlightTtlMs: 60_000 },
        { key: 'm-other', fingerprint: 'q', inFlightTtlMs: 60_000 },
        { key: 'm-short', fingerprint: 'q', inFlightTtlMs: 150 },
        // The same key twice in one step: the second finds the first's claim.
        { key: 'm-new', fingerprint: 'q', inFlightTtlMs: 60_000 },
      ]);
      expect(begun).toEqual(['new', { state: 'in-flight' }, { state: 'completed', response: RESPONSE }, { state: 'key-reused' }, 'new', { state: 'in-flight' }]);
      expect(await store.beginIdempotentMany('shop', [])).toEqual([]);
      // Each claim keeps its own ttl: the short one expires, the others stay.
      await waitFor(async () => (await store.getIdempotent('shop', 'm-short')) === undefined, { timeoutMs: 5000, what: 'the short claim to expire' });
      expect(await store.getIdempotent('shop', 'm-new')).toEqual({ state: 'in-flight' });
    });

    it('gives a key claimed concurrently to exactly one request', async ({ store }) => {
      const results = await Promise.all(Array.from({ length: 20 }, () => store.beginIdempotent('shop', 'k2', { inFlightTtlMs: 60_000 })));
      expect(results.filter((r) => r === 'new')).toHaveLength(1);
    });

    it('reports a key reused for another request fingerprint', async ({ store }) => {
      expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'aaa' })).toBe('new');
      expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'bbb' })).toEqual({ state: 'key-reused' });
      await store.completeIdempotent('shop', 'k3', RESPONSE, 60_000);
      expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'bbb' })).toEqual({ state: 'key-reused' });
      expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'aaa' })).toEqual({ state: 'completed', response: RESPONSE });
    });

    it('frees an abandoned in-flight key but keeps a completed one', async ({ store }) => {
      await store.beginIdempotent('shop', 'k4', { inFlightTtlMs: 60_000 });
      await store.abandonIdempotent('shop', 'k4');
      expect(await store.getIdempotent('shop', 'k4')).toBeUndefined();
      expect(await store.beginIdempotent('shop', 'k4', { inFlightTtlMs: 60_000 })).toBe('new');
      await store.completeIdempotent('shop', 'k4', RESPONSE, 60_000);
      await store.abandonIdempotent('shop', 'k4');
      expect(await store.getIdempotent('shop', 'k4')).toEqual({ state: 'completed', response: RESPONSE });
    });

    it('expires in-flight markers and completed records', async ({ store }) => {
      await store.beginIdempotent('shop', 'k5', { inFlightTtlMs: 100 });
      await waitFor(async () => (await store.beginIdempotent('shop', 'k5', { inFlightTtlMs: 60_000 })) === 'new', { what: 'in-flight expiry' });
      await store.completeIdempotent('shop', 'k5', RESPONSE, 100);
      await waitFor(async () => (await store.getIdempotent('shop', 'k5')) === undefined, { what: 'record expiry' });
    });

    it('lets a repeat wait for the first request to complete', async ({ store }) => {
      await store.beginIdempotent('shop', 'k6', { inFlightTtlMs: 60_000 });
      const waiting = waitForIdempotentCompletion(store, 'shop', 'k6', { timeoutMs: 5000, intervalMs: 10 });
      await store.completeIdempotent('shop', 'k6', RESPONSE, 60_000);
      expect(await waiting).toEqual({ state: 'completed', response: RESPONSE });

      await store.beginIdempotent('shop', 'k7', { inFlightTtlMs: 60_000 });
      expect(await waitForIdempotentCompletion(store, 'shop', 'k7', { timeoutMs: 30, intervalMs: 10 })).toEqual({ state: 'in-flight' });
      const gone = waitForIdempotentCompletion(store, 'shop', 'k7', { timeoutMs: 5000, intervalMs: 10 });
      await store.abandonIdempotent('shop', 'k7');
      expect(await gone).toEqual({ state: 'gone' });
    });
  });
}
