/**
 * The shared DeliveryStore suite on Redis Streams (UHLP_TEST_REDIS_URL); it
 * fails, never skips, without Redis. A plain XADD to the documented key is a
 * message like any other.
 */
import { Redis } from 'ioredis';
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import { RuntimeKeys } from '../../src/state/runtime-keys.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { dropKeys } from '../sources/redis-keys.js';
import { describeDeliveryStore } from './describe-delivery-store.js';

describeDeliveryStore('redis', async () => {
  const keyPrefix = uniqueKeyPrefix('delivery');
  const store = await RedisDeliveryStore.connect({ url: TEST_REDIS_URL, keyPrefix, timeoutMs: 5000 });
  const producer = new Redis(TEST_REDIS_URL);
  const keys = new RuntimeKeys(keyPrefix);
  // The runtime store on the same Redis and prefix, as start-core makes them: ack keeps answers in its records.
  const runtime = await createRuntimeStore({ state: TEST_REDIS_URL, keyPrefix });
  return {
    store,
    records: runtime.idempotency,
    rawAdd: async (address, fields) => (await producer.xadd(keys.deliveryStream(address.kind, address.app, address.name), '*', ...Object.entries(fields).flat()))!,
    cleanup: async () => {
      producer.disconnect();
      await store.close();
      await runtime.close();
      await dropKeys(keyPrefix);
    },
  };
});
