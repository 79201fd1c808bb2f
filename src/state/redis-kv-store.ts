/** The apps' kv entries on Redis: one string key per entry (`kv:<key>`, the caller's key kept raw so a prefix scan is a key-prefix match). */
import { DEFAULT_KV_SCAN_LIMIT, type KvEntry, type KvScanOptions, type KvSetOptions, type KvStore } from './kv-store.js';
import type { RedisStoreClient } from './redis-calls.js';
import { escapeGlob } from './runtime-keys.js';

export class RedisKvStore implements KvStore {
  constructor(private readonly client: RedisStoreClient) {}

  async kvGet(key: string): Promise<string | undefined> {
    return (await this.client.call(() => this.client.redis.get(this.client.keys.kv(key)))) ?? undefined;
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    const { redis, keys } = this.client;
    const ttlMs = options.ttlMs;
    await this.client.call(() => (ttlMs === undefined ? redis.set(keys.kv(key), value) : redis.set(keys.kv(key), value, 'PX', ttlMs)));
  }

  async kvDelete(key: string): Promise<boolean> {
    return (await this.client.call(() => this.client.redis.del(this.client.keys.kv(key)))) === 1;
  }

  /** SCAN over the key space: fine for the modest kv of apps, O(keys in the database) per call. */
  async kvScan(prefix: string, options: KvScanOptions = {}): Promise<KvEntry[]> {
    const limit = options.limit ?? DEFAULT_KV_SCAN_LIMIT;
    const namespace = this.client.keys.kvNamespace();
    const redisKeys = await this.client.scanAll(`${escapeGlob(namespace + prefix)}*`);
    redisKeys.sort();
    const found: KvEntry[] = [];
    // Fetch in slices; keys that expired between SCAN and the read are simply skipped.
    for (let i = 0; i < redisKeys.length && found.length < limit; i += 500) {
      const slice = redisKeys.slice(i, i + 500);
      const values = await this.client.getMany(slice);
      slice.forEach((redisKey, j) => {
        const value = values[j];
        if (value !== null && value !== undefined && found.length < limit) found.push({ key: redisKey.slice(namespace.length), value });
      });
    }
    return found;
  }
}
