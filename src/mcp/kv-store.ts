/**
 * The kv seam behind the `core.kv.*` tools. Its methods are exactly the kv
 * methods of the runtime store (src/state/runtime-store.ts on the state
 * branch), so a RuntimeStore can be passed in as is once it is wired; until
 * then the core uses the in-memory store below.
 */

export interface KvSetOptions {
  /** Expire the key after this many milliseconds. @defaultValue no expiry */
  ttlMs?: number;
}

export interface KvStore {
  kvGet(key: string): Promise<string | undefined>;
  kvSet(key: string, value: string, options?: KvSetOptions): Promise<void>;
  kvDelete(key: string): Promise<boolean>;
}

export interface MemoryKvStoreOptions {
  /** Clock, epoch milliseconds. @defaultValue Date.now */
  readonly now?: () => number;
}

interface Entry {
  readonly value: string;
  readonly expiresAt: number | undefined;
}

/**
 * A process-local kv. Expired keys are dropped when touched; a key written with
 * a TTL and never read again stays in memory until the core stops, which is
 * acceptable for the embedded default and not for production (use the store).
 */
export class MemoryKvStore implements KvStore {
  private readonly entries = new Map<string, Entry>();
  private readonly now: () => number;

  constructor(options: MemoryKvStoreOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  async kvGet(key: string): Promise<string | undefined> {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    this.entries.set(key, { value, expiresAt: options.ttlMs !== undefined ? this.now() + options.ttlMs : undefined });
  }

  async kvDelete(key: string): Promise<boolean> {
    const present = (await this.kvGet(key)) !== undefined;
    this.entries.delete(key);
    return present;
  }
}
