/** The shared RunIndex suite against a real Redis (UHLP_TEST_REDIS_URL); it fails, never skips, without one. */
import { Redis } from 'ioredis';
import type { Logger } from '../../src/logger.js';
import { RedisRunIndex } from '../../src/workflow-runs/redis-run-index.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { describeRunIndex, SUITE_TTL_MS } from './describe-run-index.js';

const silent = { warn: () => {}, info: () => {}, error: () => {}, debug: () => {} } as unknown as Logger;

describeRunIndex('redis', async (now) => {
  const keyPrefix = uniqueKeyPrefix('run-index');
  const index = await RedisRunIndex.connect({ url: TEST_REDIS_URL, keyPrefix, ttlMs: SUITE_TTL_MS, logger: silent, now });
  return {
    index,
    advance: () => {},
    cleanup: async () => {
      await index.close();
      const redis = new Redis(TEST_REDIS_URL);
      const keys = await redis.keys(`${keyPrefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
});
