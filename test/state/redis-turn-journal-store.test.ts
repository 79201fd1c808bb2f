/** The turn journal's lists on a real Redis (UHLP_TEST_REDIS_URL): bounded per app and core, shared between cores, expiring. It fails, never skips, without one. */
import { Redis } from 'ioredis';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import type { TurnJournalEntry } from '../../src/turns/turn-journal-entry.js';
import { TurnJournal } from '../../src/turns/turn-journal.js';
import { waitFor } from '../helpers/wait-for.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';

let counter = 0;

function entry(core: string, over: Partial<TurnJournalEntry> = {}): TurnJournalEntry {
  counter += 1;
  return {
    id: `r-${core}-${counter}`,
    app: 'a',
    component: 'c',
    route: 'GET /x',
    source: 'http',
    core,
    startedAt: Date.now() + counter,
    durationMs: 1,
    status: 200,
    timing: { limitMs: 0, claimMs: 0, sessionMs: 0, executionMs: 1, ledgerMs: 0 },
    toolCalls: 0,
    modelCalls: 0,
    calls: [],
    ...over,
  };
}

describe('the turn journal on Redis', () => {
  const stores: RedisRuntimeStore[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) {
      await store.deleteAllKeys();
      await store.close();
    }
  });

  async function storeOf(keyPrefix: string): Promise<RedisRuntimeStore> {
    const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix });
    stores.push(store);
    return store;
  }

  it("keeps each core's newest `size` records, and lists every core's wherever it is read", async () => {
    const keyPrefix = uniqueKeyPrefix('turn-journal');
    const one = new TurnJournal({ size: 3, core: 'core-1', store: (await storeOf(keyPrefix)).turnJournal({ core: 'core-1', size: 3, ttlMs: 60_000 }) });
    const two = new TurnJournal({ size: 3, core: 'core-2', store: (await storeOf(keyPrefix)).turnJournal({ core: 'core-2', size: 3, ttlMs: 60_000 }) });
    const ones = Array.from({ length: 5 }, () => entry('core-1'));
    const twos = Array.from({ length: 2 }, () => entry('core-2', { source: 'queue', status: 500, code: 'UHLP_SCRIPT_EXCEPTION' }));
    for (const record of ones) one.add(record);
    for (const record of twos) two.add(record);
    await one.flush();
    await two.flush();

    const expected = [...ones.slice(-3), ...twos].sort((a, b) => b.startedAt - a.startedAt).map((record) => record.id);
    expect((await one.list({}, 100)).turns.map((record) => record.id)).toEqual(expected);
    // A fresh core (nothing in its ring) sees both lists, and one turn of the other core by its id.
    const three = new TurnJournal({ size: 3, core: 'core-3', store: (await storeOf(keyPrefix)).turnJournal({ core: 'core-3', size: 3, ttlMs: 60_000 }) });
    expect((await three.list({}, 100)).turns.map((record) => record.id)).toEqual(expected);
    expect((await three.list({ source: 'queue', status: '5xx' }, 100)).turns.map((record) => record.id)).toEqual(twos.map((record) => record.id).reverse());
    expect(await three.get(twos[0]!.id)).toEqual(twos[0]);
    expect(await three.get(ones[0]!.id)).toBeUndefined();

    const redis = new Redis(TEST_REDIS_URL);
    try {
      expect(await redis.llen(new RuntimeKeys(keyPrefix).turnJournal('a', 'core-1'))).toBe(3);
      const ttl = await redis.pttl(new RuntimeKeys(keyPrefix).turnJournal('a', 'core-1'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      redis.disconnect();
    }
  });

  it("keeps each app's own newest records: a noisy app pushes out only its own, and a reader of one app reads that app's lists alone", async () => {
    const keyPrefix = uniqueKeyPrefix('turn-journal');
    const journalOf = async (core: string): Promise<TurnJournal> =>
      new TurnJournal({ size: 3, core, store: (await storeOf(keyPrefix)).turnJournal({ core, size: 3, ttlMs: 60_000 }) });
    const one = await journalOf('core-1');
    const two = await journalOf('core-2');
    const quiet = [entry('core-1', { app: 'quiet' }), entry('core-2', { app: 'quiet' })];
    one.add(quiet[0]!);
    two.add(quiet[1]!);
    // Then the noisy app, on both cores, far past the size.
    const noisy = Array.from({ length: 20 }, (_, i) => entry(i % 2 === 0 ? 'core-1' : 'core-2', { app: 'noisy' }));
    for (const record of noisy) (record.core === 'core-1' ? one : two).add(record);
    await one.flush();
    await two.flush();

    // A fresh core reads them from Redis alone: the quiet app's turns are all there.
    const reader = await journalOf('core-3');
    const ids = (turns: TurnJournalEntry[]): string[] => turns.map((record) => record.id);
    const newest = (records: TurnJournalEntry[]): string[] => ids([...records].sort((a, b) => b.startedAt - a.startedAt));
    expect(ids((await reader.list({ app: 'quiet' }, 100)).turns)).toEqual(newest(quiet));
    const keptNoisy = [...noisy.filter((r) => r.core === 'core-1').slice(-3), ...noisy.filter((r) => r.core === 'core-2').slice(-3)];
    expect(ids((await reader.list({ app: 'noisy' }, 100)).turns)).toEqual(newest(keptNoisy));
    expect(ids((await reader.list({}, 100)).turns)).toEqual(newest([...quiet, ...keptNoisy]));
    expect(await reader.get(quiet[0]!.id)).toEqual(quiet[0]);
    // The store answers one app's records without the other's.
    const store = (await storeOf(keyPrefix)).turnJournal({ core: 'core-3', size: 3, ttlMs: 60_000 });
    expect(new Set((await store.recent('quiet')).map((record) => record.app))).toEqual(new Set(['quiet']));
    expect(await store.recent('nobody')).toEqual([]);

    const redis = new Redis(TEST_REDIS_URL);
    try {
      expect(await redis.llen(new RuntimeKeys(keyPrefix).turnJournal('quiet', 'core-1'))).toBe(1);
      expect(await redis.llen(new RuntimeKeys(keyPrefix).turnJournal('noisy', 'core-1'))).toBe(3);
      expect((await redis.zrange(`${keyPrefix}turns-apps`, '0', '-1')).sort()).toEqual(['noisy', 'quiet']);
      expect((await redis.zrange(`${keyPrefix}turns-cores:noisy`, '0', '-1')).sort()).toEqual(['core-1', 'core-2']);
    } finally {
      redis.disconnect();
    }
  });

  it('keeps a ring per app in the core too: the quiet app keeps its turns without a store', () => {
    const journal = new TurnJournal({ size: 3, core: 'core-1' });
    const quiet = entry('core-1', { app: 'quiet' });
    journal.add(quiet);
    for (let i = 0; i < 10; i++) journal.add(entry('core-1', { app: 'noisy' }));
    return expect(journal.list({ app: 'quiet' }, 10).then((page) => page.turns)).resolves.toEqual([quiet]);
  });

  it('drops a core whose list expired', async () => {
    const keyPrefix = uniqueKeyPrefix('turn-journal');
    const store = (await storeOf(keyPrefix)).turnJournal({ core: 'core-1', size: 3, ttlMs: 200 });
    await store.append([entry('core-1')]);
    expect(await store.recent()).toHaveLength(1);
    await waitFor(async () => (await store.recent()).length === 0, { timeoutMs: 5000 });
  });
});
