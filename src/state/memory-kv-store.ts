/** The apps' kv entries in memory. */
import { ExpiringMap } from './expiring-map.js';
import { DEFAULT_KV_SCAN_LIMIT, type KvEntry, type KvScanOptions, type KvSetOptions, type KvStore } from './kv-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';

export class MemoryKvStore implements KvStore, SweptStore {
  private readonly entries: ExpiringMap<string>;

  constructor(private readonly context: MemoryContext) {
    this.entries = new ExpiringMap(context.now);
  }

  async kvGet(key: string): Promise<string | undefined> {
    this.context.assertOpen();
    return this.entries.live(key)?.value;
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    this.context.assertOpen();
    this.entries.set(key, value, options.ttlMs === undefined ? Infinity : this.context.now() + options.ttlMs);
  }

  async kvDelete(key: string): Promise<boolean> {
    this.context.assertOpen();
    const existed = this.entries.live(key) !== undefined;
    this.entries.delete(key);
    return existed;
  }

  async kvScan(prefix: string, options: KvScanOptions = {}): Promise<KvEntry[]> {
    this.context.assertOpen();
    const found: KvEntry[] = [];
    for (const key of this.entries.keys()) {
      if (!key.startsWith(prefix)) continue;
      const entry = this.entries.live(key);
      if (entry) found.push({ key, value: entry.value });
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.slice(0, options.limit ?? DEFAULT_KV_SCAN_LIMIT);
  }

  sweep(): void {
    this.entries.sweep();
  }
}
