/**
 * The suite every KvStore passes, memory and Redis alike: set, get, delete,
 * TTLs, prefix scans.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { KvStore } from '../../src/state/kv-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeKvStore(name: string, makeStore: MakeStore<KvStore>): void {
  const it = storeTest(makeStore);
  describe(`KvStore contract: ${name}`, () => {
    it('sets, gets and deletes', async ({ store }) => {
      await store.kvSet('app/a', 'one');
      expect(await store.kvGet('app/a')).toBe('one');
      await store.kvSet('app/a', 'two');
      expect(await store.kvGet('app/a')).toBe('two');
      expect(await store.kvDelete('app/a')).toBe(true);
      expect(await store.kvDelete('app/a')).toBe(false);
      expect(await store.kvGet('app/a')).toBeUndefined();
    });

    it('expires keys with a TTL', async ({ store }) => {
      await store.kvSet('t/short', 'x', { ttlMs: 100 });
      await store.kvSet('t/long', 'y', { ttlMs: 60_000 });
      await waitFor(async () => (await store.kvGet('t/short')) === undefined, { what: 'kv expiry' });
      expect(await store.kvGet('t/long')).toBe('y');
      expect((await store.kvScan('t/')).map((e) => e.key)).toEqual(['t/long']);
    });

    it('scans by prefix, sorted, with a limit, taking glob characters literally', async ({ store }) => {
      for (const key of ['p/c', 'p/a', 'p/b', 'q/a', 'p*x/1', 'pzx/1']) await store.kvSet(key, `v:${key}`);
      expect(await store.kvScan('p/')).toEqual([
        { key: 'p/a', value: 'v:p/a' },
        { key: 'p/b', value: 'v:p/b' },
        { key: 'p/c', value: 'v:p/c' },
      ]);
      expect((await store.kvScan('p/', { limit: 2 })).map((e) => e.key)).toEqual(['p/a', 'p/b']);
      expect((await store.kvScan('p*x/')).map((e) => e.key)).toEqual(['p*x/1']);
      expect((await store.kvScan('')).length).toBe(6);
    });

    it('refuses bad arguments with a stable code naming the field', async ({ store }) => {
      expect(await codeOf(store.kvSet('', 'x'))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'key' } });
      expect(await codeOf(store.kvSet('k', 'x', { ttlMs: 0 }))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'ttlMs' } });
      expect(await codeOf(store.kvSet('k', 'x', { ttlMs: 1.5 }))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'ttlMs' } });
    });
  });
}
