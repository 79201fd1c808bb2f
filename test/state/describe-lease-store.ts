/**
 * The suite every LeaseStore passes, memory and Redis alike: one owner at a
 * time, expiry, contention.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { LeaseStore } from '../../src/state/lease-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { storeTest, type MakeStore } from './store-fixture.js';

export function describeLeaseStore(name: string, makeStore: MakeStore<LeaseStore>): void {
  const it = storeTest(makeStore);
  describe(`LeaseStore contract: ${name}`, () => {
    it('lets one owner hold a lease; others cannot renew, release or take it', async ({ store }) => {
      const lease = await store.acquireLease('sb-1', 'core-a', 60_000);
      expect(lease).toMatchObject({ resource: 'sb-1', owner: 'core-a' });
      expect(await store.acquireLease('sb-1', 'core-b', 60_000)).toBeUndefined();
      expect(await store.renewLease('sb-1', 'core-b', 60_000)).toBe(false);
      expect(await store.releaseLease('sb-1', 'core-b')).toBe(false);
      expect((await store.getLease('sb-1'))?.owner).toBe('core-a');
      // Acquiring again as the holder renews.
      expect(await store.acquireLease('sb-1', 'core-a', 60_000)).toBeDefined();
      expect(await store.renewLease('sb-1', 'core-a', 60_000)).toBe(true);
      expect(await store.releaseLease('sb-1', 'core-a')).toBe(true);
      expect(await store.getLease('sb-1')).toBeUndefined();
      expect((await store.acquireLease('sb-1', 'core-b', 60_000))?.owner).toBe('core-b');
    });

    it('frees a lease when its TTL passes without renewal', async ({ store }) => {
      await store.acquireLease('sb-2', 'core-a', 100);
      await waitFor(async () => (await store.acquireLease('sb-2', 'core-b', 60_000)) !== undefined, { what: 'lease expiry' });
      expect((await store.getLease('sb-2'))?.owner).toBe('core-b');
      expect(await store.renewLease('sb-2', 'core-a', 60_000)).toBe(false);
    });

    it('gives a contended lease to exactly one owner', async ({ store }) => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.acquireLease('sb-3', `core-${i}`, 60_000)));
      const winners = results.filter((r) => r !== undefined);
      expect(winners).toHaveLength(1);
      expect((await store.getLease('sb-3'))?.owner).toBe(winners[0]?.owner);
    });
  });
}
