/**
 * The apps' key-value entries (`core.kv.*`, `cs.kv`), each key already in its
 * app's namespace when it gets here (src/mcp/tools/kv-tools.ts).
 */

export interface KvEntry {
  key: string;
  value: string;
}

export interface KvSetOptions {
  /** Expire the key after this many milliseconds. @defaultValue no expiry */
  ttlMs?: number;
}

export interface KvScanOptions {
  /** Return at most this many entries (sorted by key). @defaultValue 1000 */
  limit?: number;
}

export interface KvStore {
  kvGet(key: string): Promise<string | undefined>;
  kvSet(key: string, value: string, options?: KvSetOptions): Promise<void>;
  kvDelete(key: string): Promise<boolean>;
  /** Entries whose key starts with `prefix`, sorted by key. */
  kvScan(prefix: string, options?: KvScanOptions): Promise<KvEntry[]>;
}

/** Entries a scan returns when the caller sets no limit. */
export const DEFAULT_KV_SCAN_LIMIT = 1000;
