/** The turn journal's lists on a real Redis (UHLP_TEST_REDIS_URL): bounded per core, shared between cores, expiring. It fails, never skips, without one. */
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
      expect(await redis.llen(new RuntimeKeys(keyPrefix).turnJournal('core-1'))).toBe(3);
      const ttl = await redis.pttl(new RuntimeKeys(keyPrefix).turnJournal('core-1'));
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    } finally {
      redis.disconnect();
    }
  });

  it('drops a core whose list expired', async () => {
    const keyPrefix = uniqueKeyPrefix('turn-journal');
    const store = (await storeOf(keyPrefix)).turnJournal({ core: 'core-1', size: 3, ttlMs: 200 });
    await store.append([entry('core-1')]);
    expect(await store.recent()).toHaveLength(1);
    await waitFor(async () => (await store.recent()).length === 0, { timeoutMs: 5000 });
  });
});
