/** Drops every Redis key under a test's prefix. */
import { Redis } from 'ioredis';
import { escapeGlob } from '../../src/state/runtime-keys.js';
import { TEST_REDIS_URL } from '../helpers/redis-url.js';

export async function dropKeys(prefix: string): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Values of the keys under `prefix` matching `pattern` (a glob after the prefix). */
export async function valuesUnder(prefix: string, pattern: string): Promise<Map<string, string>> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    const found = new Map<string, string>();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${escapeGlob(prefix)}${pattern}`, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) found.set(key.slice(prefix.length), (await redis.get(key)) ?? '');
    } while (cursor !== '0');
    return found;
  } finally {
    redis.disconnect();
  }
}
