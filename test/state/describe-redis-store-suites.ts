/**
 * The runtime-store and delivery-store contract suites on a Redis topology
 * other than one node (Sentinel, Cluster): the same stores, reached by the
 * topology's URL, pass the same suites. `url` is read when a suite starts,
 * after the topology's `beforeAll`.
 */
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { createRedisClient } from '../../src/state/redis-connection.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeDeliveryStore } from './describe-delivery-store.js';
import { describeRuntimeStore } from './describe-runtime-store.js';

export function describeRedisStoreSuites(name: string, tag: string, url: () => string): void {
  describeRuntimeStore(name, async () => {
    const store = await RedisRuntimeStore.connect({ url: url(), keyPrefix: uniqueKeyPrefix(`${tag}-contract`), timeoutMs: 10_000 });
    return {
      store,
      cleanup: async () => {
        await store.deleteAllKeys();
        await store.close();
      },
    };
  });

  describeDeliveryStore(name, async () => {
    const keyPrefix = uniqueKeyPrefix(`${tag}-delivery`);
    const store = await RedisDeliveryStore.connect({ url: url(), keyPrefix, timeoutMs: 10_000 });
    const producer = createRedisClient(url(), {});
    const keys = new RuntimeKeys(keyPrefix);
    const runtime = (await createRuntimeStore({ state: url(), keyPrefix, connectWaitMs: 10_000 })) as RedisRuntimeStore;
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
}
