/**
 * Ref caches of two cores on one real Redis (RefCachingFunctionStore over the
 * Redis function store): a change made by one is seen by the other's next read
 * once the announcement arrives (with a TTL far too long to explain it), a lost
 * announcement is seen within the TTL, and a dropped watch connection empties
 * the cache at once and is subscribed again on reconnect.
 */
import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RefCachingFunctionStore } from '../../src/functions/ref-caching-function-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { waitFor, waitForValue } from '../helpers/wait-for.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const PROD = { alias: 'prod' } as const;

describe('ref caches of cores sharing a Redis', () => {
  let prefix: string;
  let one: RedisRuntimeStore;
  let two: RedisRuntimeStore;
  let raw: Redis;
  const caches: RefCachingFunctionStore[] = [];

  beforeEach(async () => {
    prefix = uniqueKeyPrefix('refs');
    one = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
    two = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
    raw = new Redis(TEST_REDIS_URL);
    for (const sha of [A, B]) {
      await one.functions.putBundle('shop', sha, Buffer.from(sha));
      await one.functions.publishVersion('shop', 'p', 'f', sha);
    }
    await one.functions.setAlias('shop', 'p', 'f', 'prod', 1);
  });

  afterEach(async () => {
    for (const cache of caches.splice(0)) await cache.close();
    await one.deleteAllKeys();
    await one.close();
    await two.close();
    raw.disconnect();
  });

  /** A core's cache over store `one`, once its watch is live (it keeps what it reads). */
  async function cacheOnOne(ttlMs: number): Promise<RefCachingFunctionStore> {
    const cache = new RefCachingFunctionStore(one.functions, { ttlMs });
    caches.push(cache);
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', PROD)) !== undefined && cache.size > 0, { what: 'the watch live' });
    return cache;
  }

  it("sees an alias moved and a version published by another core on its next read after the announcement", async () => {
    const cache = await cacheOnOne(60_000);
    expect((await cache.resolve('shop', 'p', 'f', { latest: true }))?.version).toBe(2);
    let started = performance.now();
    await two.functions.setAlias('shop', 'p', 'f', 'prod', 2);
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', PROD))?.version === 2, { intervalMs: 1, what: 'the moved alias' });
    const aliasSeenMs = performance.now() - started;
    await two.functions.putBundle('shop', A, Buffer.from(A));
    started = performance.now();
    await two.functions.publishVersion('shop', 'p', 'f', A);
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', { latest: true }))?.version === 3, { intervalMs: 1, what: 'the new version' });
    const publishSeenMs = performance.now() - started;
    // The TTL is a minute: only the announcement explains it; on a shared test machine it takes a few ms.
    expect(aliasSeenMs).toBeLessThan(1000);
    expect(publishSeenMs).toBeLessThan(1000);
  });

  it('sees a change whose announcement was lost within ttlMs of the write', async () => {
    const cache = await cacheOnOne(300);
    // Written as a writer that died before announcing it would leave it.
    await raw.hset(new RuntimeKeys(prefix).fnAliases('shop', 'p', 'f'), 'prod', '2');
    const written = performance.now();
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(1);
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', PROD))?.version === 2, { intervalMs: 5, timeoutMs: 2000, what: 'the unannounced alias' });
    // The last look's own read is in the figure: a slow one on a loaded machine is not a late change.
    expect(performance.now() - written).toBeLessThan(300 + 250);
  });

  it('forgets everything when its watch connection drops, and keeps and hears again once it is subscribed again', async () => {
    const cache = await cacheOnOne(60_000);
    const name = `${prefix}fn-watch`;
    const id = await waitForValue(async () => findClient((await raw.client('LIST')) as string, name), { what: 'the watch connection' });
    await raw.client('KILL', 'ID', id);
    await waitFor(() => cache.size === 0, { what: 'the cache emptied' });
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', PROD)) !== undefined && cache.size > 0, { timeoutMs: 10_000, what: 'the watch live again' });
    await two.functions.setAlias('shop', 'p', 'f', 'prod', 2);
    await waitFor(async () => (await cache.resolve('shop', 'p', 'f', PROD))?.version === 2, { what: 'the alias moved after the reconnect' });
  });
});

/** The id of the client named `name` in CLIENT LIST's answer. */
function findClient(list: string, name: string): string | undefined {
  for (const line of list.split('\n')) {
    const fields = Object.fromEntries(line.split(' ').map((field) => field.split('=', 2) as [string, string]));
    if (fields['name'] === name) return fields['id'];
  }
  return undefined;
}
