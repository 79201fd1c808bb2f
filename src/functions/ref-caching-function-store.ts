/**
 * The function store as a core uses it: what a ref (`latest`, an alias, a
 * version number) names is kept in memory, so that the turn of a cs component
 * named by ref finds its bundle without a round trip to the runtime store (on
 * Redis it was two HGETs in a row on every turn). Everything else goes straight
 * to the store.
 *
 * When a change is seen, and why the answer is never staler than that:
 * - the store announces every write that can move a ref, whoever made it
 *   (another core, `uhlp fn alias set`, `core.fn.alias.set`, a publish; see
 *   FunctionStore.watchRefs): the function's entries are dropped as the
 *   announcement arrives, so the first turn after it reads the store;
 * - a write made through this object drops them itself before it answers, so
 *   the core that moved an alias runs the new version on its very next turn;
 * - nothing is kept while the watch is not live: before it first is, and from
 *   the moment its connection drops (all entries go then: changes may be missed
 *   until it is back);
 * - an answer whose read overlapped a change, or a change of the watch's state,
 *   serves that turn only and is not kept (the read may predate the change);
 * - no entry is answered later than `ttlMs` after the read that made it began.
 *   That is the bound when an announcement is lost without the watch noticing
 *   (its writer died between the write and the announcement, or the connection
 *   went half-open): the change is seen at most `ttlMs` after the write.
 *
 * A ref that names no version is not kept: a function with nothing published
 * is read from the store on every turn, as before.
 */
import type { FunctionRef } from './function-ref.js';
import type { FunctionStore, FunctionVersion, PublishedVersion, RefChange, RefChangeListener, RefWatch } from './function-store.js';

/** The default of RefCacheOptions.ttlMs. */
export const DEFAULT_REF_TTL_MS = 1000;

export interface RefCacheOptions {
  /**
   * How long an answer is kept at most, from the start of the read that made it,
   * ms: the bound on seeing a change whose announcement was lost. @defaultValue 1000
   */
  readonly ttlMs?: number;
  /** Refs kept at most; beyond it, the entry read longest ago goes. @defaultValue 10000 */
  readonly maxEntries?: number;
  /** Clock, for tests. @defaultValue Date.now */
  readonly now?: () => number;
}

interface Entry {
  readonly version: FunctionVersion;
  readonly expiresAt: number;
}

export class RefCachingFunctionStore implements FunctionStore {
  private readonly entries = new Map<string, Entry>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private live = false;
  /** Moves on every change and every change of the watch's state: a read that saw it move keeps nothing. */
  private epoch = 0;
  private readonly watch: RefWatch;

  constructor(
    private readonly inner: FunctionStore,
    options: RefCacheOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? DEFAULT_REF_TTL_MS;
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
    const listener: RefChangeListener = {
      changed: (change) => this.forget(change),
      live: (live) => this.setLive(live),
    };
    this.watch = inner.watchRefs(listener);
  }

  /** Refs kept now (for tests and metrics). */
  get size(): number {
    return this.entries.size;
  }

  async resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined> {
    const key = `${functionKey(tenant, namespace, fn)}${'version' in ref ? `v${ref.version}` : 'latest' in ref ? 'latest' : `a${ref.alias}`}`;
    const startedAt = this.now();
    const kept = this.entries.get(key);
    if (kept !== undefined) {
      if (kept.expiresAt > startedAt) return kept.version;
      this.entries.delete(key);
    }
    const epoch = this.epoch;
    const found = await this.inner.resolve(tenant, namespace, fn, ref);
    if (found !== undefined && this.live && epoch === this.epoch) {
      if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
      this.entries.set(key, { version: found, expiresAt: startedAt + this.ttlMs });
    }
    return found;
  }

  async publishVersion(tenant: string, namespace: string, fn: string, sha256: string): Promise<PublishedVersion> {
    try {
      return await this.inner.publishVersion(tenant, namespace, fn, sha256);
    } finally {
      // Also when it failed: it may have been written before the failure.
      this.forget({ tenant, namespace, function: fn });
    }
  }

  async setAlias(tenant: string, namespace: string, fn: string, alias: string, version: number): Promise<void> {
    try {
      await this.inner.setAlias(tenant, namespace, fn, alias, version);
    } finally {
      this.forget({ tenant, namespace, function: fn });
    }
  }

  putBundle(tenant: string, sha256: string, bytes: Uint8Array): Promise<void> {
    return this.inner.putBundle(tenant, sha256, bytes);
  }

  getBundle(tenant: string, sha256: string): Promise<Buffer | undefined> {
    return this.inner.getBundle(tenant, sha256);
  }

  listVersions(tenant: string, namespace: string, fn: string): Promise<FunctionVersion[]> {
    return this.inner.listVersions(tenant, namespace, fn);
  }

  listAliases(tenant: string, namespace: string, fn: string): Promise<Record<string, number>> {
    return this.inner.listAliases(tenant, namespace, fn);
  }

  appendLogs(activationId: string, chunk: string, ttlMs: number): Promise<void> {
    return this.inner.appendLogs(activationId, chunk, ttlMs);
  }

  readLogs(activationId: string): Promise<string[] | undefined> {
    return this.inner.readLogs(activationId);
  }

  watchRefs(listener: RefChangeListener): RefWatch {
    return this.inner.watchRefs(listener);
  }

  /** Stops watching and keeps nothing more. */
  async close(): Promise<void> {
    this.setLive(false);
    await this.watch.close();
  }

  private forget(change: RefChange): void {
    this.epoch += 1;
    const prefix = functionKey(change.tenant, change.namespace, change.function);
    // Changes are rare beside reads: a walk over at most maxEntries keys each time is cheaper than an index kept on every read.
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  private setLive(live: boolean): void {
    this.epoch += 1;
    this.live = live;
    if (!live) this.entries.clear();
  }
}

/**
 * The prefix of a function's entries: a JSON array ends where it ends, so no
 * other function's key (another tenant's above all) starts with it.
 */
function functionKey(tenant: string, namespace: string, fn: string): string {
  return JSON.stringify([tenant, namespace, fn]);
}
