/**
 * The suite every OracleStore passes, memory and Redis alike: counters, sample
 * reservoirs, records by compare-and-set, candidates.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { OracleStore } from '../../src/state/oracle-store.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeOracleStore(name: string, makeStore: MakeStore<OracleStore>): void {
  const it = storeTest(makeStore);
  describe(`OracleStore contract: ${name}`, () => {
    describe('oracle counters', () => {
      it('adds deltas atomically per app and component', async ({ store }) => {
        expect(await store.getOracleCounters('shop', 'price')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
        await Promise.all(Array.from({ length: 40 }, () => store.incrOracleCounters('shop', 'price', { samples: 1, hits: 2 })));
        const after = await store.incrOracleCounters('shop', 'price', { agreements: 3, disagreements: 1 });
        expect(after).toEqual({ samples: 40, hits: 80, agreements: 3, disagreements: 1, declines: 0, tokensSaved: 0 });
        expect(await store.getOracleCounters('shop', 'other')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
        await store.resetOracleCounters('shop', 'price');
        expect(await store.getOracleCounters('shop', 'price')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
      });

      it('refuses unknown counters', async ({ store }) => {
        const bad = { bogus: 1 } as unknown as Record<'samples', number>;
        expect((await codeOf(store.incrOracleCounters('shop', 'price', bad))).details).toEqual({ field: 'deltas.bogus' });
      });
    });

    describe('oracle samples, records and candidates', () => {
      const scope = { appId: 'shop', componentId: 'triage', revision: 'r1' };
      const hash = (n: number): string => n.toString(16).padStart(16, '0');
      const sample = (input: number, output: number, fresh = true) => ({
        inputHash: hash(input),
        outputHash: hash(output),
        json: JSON.stringify({ input, output }),
        fresh,
      });
      const options = (pick: number, limit = 3) => ({ limit, ttlMs: 60_000, pick });

      it('holds a bounded reservoir: new inputs fill it, then replace with the draw, never past the limit', async ({ store }) => {
        for (let i = 1; i <= 3; i++) expect((await store.addOracleSample(scope, sample(i, i), options(0))).outcome).toBe('added');
        // The 4th input: the draw 5 % 4 = 1 < 3 replaces slot 1; the 5th: 9 % 5 = 4 is not a slot, it passes.
        expect((await store.addOracleSample(scope, sample(4, 4), options(5))).outcome).toBe('replaced');
        const passed = await store.addOracleSample(scope, sample(5, 5), options(9));
        expect(passed).toEqual({ outcome: 'passed', stats: { seen: 5, stored: 3, repeats: 0, unstable: 0 } });
        const held = await store.getOracleSamples(scope);
        expect(held.samples.map((json) => JSON.parse(json).input)).toEqual([1, 4, 3]);
        expect(held.stats).toEqual({ seen: 5, stored: 3, repeats: 0, unstable: 0 });
        // Input 2 left the reservoir: seeing it again is a new sighting, not a repeat.
        expect((await store.addOracleSample(scope, sample(2, 2), options(100))).outcome).toBe('passed');
        expect((await store.getOracleSamples({ ...scope, revision: 'r2' })).samples).toEqual([]);
      });

      it('counts fresh repeats of held inputs, and the ones that answered differently', async ({ store }) => {
        await store.addOracleSample(scope, sample(1, 10), options(0));
        expect((await store.addOracleSample(scope, sample(1, 10), options(0))).outcome).toBe('repeat');
        expect((await store.addOracleSample(scope, sample(1, 11), options(0))).outcome).toBe('unstable');
        // An answer from the cache says nothing about stability.
        expect((await store.addOracleSample(scope, sample(1, 12, false), options(0))).outcome).toBe('repeat');
        const concurrent = await Promise.all(Array.from({ length: 20 }, () => store.addOracleSample(scope, sample(1, 10), options(0))));
        expect(concurrent.every((r) => r.outcome === 'repeat')).toBe(true);
        expect((await store.getOracleSamples(scope)).stats).toEqual({ seen: 1, stored: 1, repeats: 22, unstable: 1 });
      });

      it('refuses samples that are too large or not hashes', async ({ store }) => {
        expect((await codeOf(store.addOracleSample(scope, { ...sample(1, 1), json: 'x'.repeat(64 * 1024 + 1) }, options(0)))).details).toEqual({ field: 'json' });
        expect((await codeOf(store.addOracleSample(scope, { ...sample(1, 1), inputHash: 'nope' }, options(0)))).details).toEqual({ field: 'inputHash' });
        expect((await codeOf(store.addOracleSample(scope, sample(1, 1), { ...options(0), limit: 10_001 }))).details).toEqual({ field: 'limit' });
      });

      it('writes records by compare-and-set on their version', async ({ store }) => {
        expect(await store.getOracleRecord('shop', 'triage')).toBeUndefined();
        expect(await store.putOracleRecord('shop', 'triage', '{"stage":"sampling"}', 1)).toBeUndefined();
        const writes = await Promise.all([0, 0, 0].map((v, i) => store.putOracleRecord('shop', 'triage', `{"n":${i}}`, v)));
        expect(writes.filter((w) => w === 1)).toHaveLength(1);
        expect((await store.getOracleRecord('shop', 'triage'))?.version).toBe(1);
        expect(await store.putOracleRecord('shop', 'triage', '{"stage":"shadow"}', 1)).toBe(2);
        expect(await store.getOracleRecord('shop', 'triage')).toEqual({ version: 2, json: '{"stage":"shadow"}' });
      });

      it('keeps the newest candidates only', async ({ store }) => {
        for (let i = 1; i <= 4; i++) await store.addOracleCandidate('shop', 'triage', `{"n":${i}}`, 3);
        expect(await store.listOracleCandidates('shop', 'triage')).toEqual(['{"n":4}', '{"n":3}', '{"n":2}']);
        expect(await store.listOracleCandidates('shop', 'other')).toEqual([]);
      });
    });
  });
}
