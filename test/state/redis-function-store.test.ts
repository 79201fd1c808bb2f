/** The shared FunctionStore suite against a real Redis; fails, never skips, without one. */
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeFunctionStore } from './describe-function-store.js';

describeFunctionStore('redis', async () => {
  const keyPrefix = uniqueKeyPrefix('fn');
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix, timeoutMs: 5000 });
  // Another connection on the same prefix: another core, or `uhlp fn`.
  const peer = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix, timeoutMs: 5000 });
  return {
    store,
    peer,
    cleanup: async () => {
      await store.deleteAllKeys();
      await store.close();
      await peer.close();
    },
  };
});
