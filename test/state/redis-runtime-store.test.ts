/**
 * The shared RuntimeStore suite against a real Redis (UHLP_TEST_REDIS_URL, default
 * redis://127.0.0.1:6379). It fails, never skips, when Redis is not there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeRuntimeStore } from './describe-runtime-store.js';

describe('Redis at UHLP_TEST_REDIS_URL', () => {
  it('answers', async () => {
    const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('ping'), timeoutMs: 5000 });
    await store.ping();
    await store.close();
  });
});

describeRuntimeStore('redis', async () => {
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('contract'), timeoutMs: 5000 });
  return {
    store,
    cleanup: async () => {
      await store.deleteAllKeys();
      await store.close();
    },
  };
});

describe('RedisRuntimeStore specifics', () => {
  let store: RedisRuntimeStore;
  let other: RedisRuntimeStore;

  beforeAll(async () => {
    store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('a'), timeoutMs: 5000 });
    other = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('b'), timeoutMs: 5000 });
  });

  afterAll(async () => {
    await store.deleteAllKeys();
    await other.deleteAllKeys();
    await store.close();
    await other.close();
  });

  it('keeps stores with different prefixes apart, and cleans up only its own keys', async () => {
    await store.kv.kvSet('shared/name', 'a');
    await other.kv.kvSet('shared/name', 'b');
    expect(await store.kv.kvGet('shared/name')).toBe('a');
    expect(await store.kv.kvScan('shared/')).toEqual([{ key: 'shared/name', value: 'a' }]);
    expect(await store.deleteAllKeys()).toBe(1);
    expect(await other.kv.kvGet('shared/name')).toBe('b');
  });

  it('shares state between two clients of one prefix (two core replicas)', async () => {
    const prefix = uniqueKeyPrefix('replicas');
    const a = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
    const b = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: prefix });
    try {
      expect(await a.idempotency.beginIdempotent('shop', 'k', { inFlightTtlMs: 60_000 })).toBe('new');
      expect(await b.idempotency.beginIdempotent('shop', 'k', { inFlightTtlMs: 60_000 })).toEqual({ state: 'in-flight' });
      const hits = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? a : b).rateLimits.hitRateLimit('shop', 4)));
      expect(hits.filter((h) => h.allowed).length).toBeLessThanOrEqual(4);
    } finally {
      await a.deleteAllKeys();
      await a.close();
      await b.close();
    }
  });

  it('is what createRuntimeStore makes for a redis:// --state', async () => {
    const made = await createRuntimeStore({ state: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('factory') });
    expect(made.kind).toBe('redis');
    await made.ping();
    await made.close();
  });

  it('refuses a URL that is not redis://', () => {
    expect(() => new RedisRuntimeStore({ url: 'localhost:6379' })).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID' }) as Error);
    expect(() => new RedisRuntimeStore({ url: TEST_REDIS_URL, keyPrefix: '' })).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID' }) as Error);
  });
});
