/**
 * core.llm.generate's budget and cache on a real Redis (UHLP_TEST_REDIS_URL,
 * default redis://127.0.0.1:6379), each test under its own key prefix. It
 * fails, never skips, when Redis is not there.
 */
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeLlmGenerate } from './describe-llm-generate.js';

describeLlmGenerate('redis', async () => {
  const store = await RedisRuntimeStore.connect({ url: TEST_REDIS_URL, keyPrefix: uniqueKeyPrefix('llm'), timeoutMs: 5000 });
  return {
    store,
    cleanup: async () => {
      await store.deleteAllKeys();
      await store.close();
    },
  };
});
