/**
 * The runtime and delivery stores on Redis Sentinel (one master, two replicas,
 * three sentinels: test/helpers/redis-sentinel-topology.ts), reached with a
 * `redis+sentinel://` state URL: the shared suites, then failovers under load.
 * Needs redis-server; fails, never skips, without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { createRedisClient } from '../../src/state/redis-connection.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { RedisSentinelTopology } from '../helpers/redis-sentinel-topology.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeDeliveryStore } from './describe-delivery-store.js';
import { describeRuntimeStore } from './describe-runtime-store.js';

let topology: RedisSentinelTopology;

beforeAll(async () => {
  topology = await RedisSentinelTopology.start();
}, 60_000);

afterAll(async () => {
  await topology?.stop();
});

describe('a redis+sentinel:// state URL', () => {
  it('reaches the master the sentinels name', async () => {
    const keyPrefix = uniqueKeyPrefix('sentinel-ping');
    const store = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
    const master = topology.client(await topology.masterPort());
    try {
      await store.kv.kvSet('where', 'master');
      await master.connect();
      expect(((await master.call('ROLE')) as string[])[0]).toBe('master');
      expect(await master.keys(`${keyPrefix}*`)).toHaveLength(1);
    } finally {
      master.disconnect();
      await store.deleteAllKeys();
      await store.close();
    }
  });
});

describeRuntimeStore('redis sentinel', async () => {
  const store = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix: uniqueKeyPrefix('sentinel-contract'), timeoutMs: 10_000 });
  return {
    store,
    cleanup: async () => {
      await store.deleteAllKeys();
      await store.close();
    },
  };
});

describeDeliveryStore('redis sentinel', async () => {
  const keyPrefix = uniqueKeyPrefix('sentinel-delivery');
  const store = await RedisDeliveryStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
  const producer: Redis = createRedisClient(topology.url, {});
  const keys = new RuntimeKeys(keyPrefix);
  const runtime = (await createRuntimeStore({ state: topology.url, keyPrefix, connectWaitMs: 10_000 })) as RedisRuntimeStore;
  return {
    store,
    records: runtime.idempotency,
    rawAdd: async (address, fields) => (await producer.xadd(keys.deliveryStream(address.kind, address.app, address.name), '*', ...Object.entries(fields).flat()))!,
    cleanup: async () => {
      producer.disconnect();
      await store.close();
      await runtime.deleteAllKeys();
      await runtime.close();
    },
  };
});
