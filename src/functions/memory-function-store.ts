/**
 * The function store in one process's memory (`uhlp dev`, tests): the same
 * behaviour as the Redis one, checked by the same suite. Its arguments are
 * checked in front of it (src/state/validating-stores.ts).
 */
import { UhlpError } from '../shared/errors.js';
import type { FunctionRef } from './function-ref.js';
import type { FunctionStore, FunctionVersion, PublishedVersion, RefChangeListener, RefWatch } from './function-store.js';

interface FunctionEntry {
  readonly versions: FunctionVersion[];
  readonly aliases: Map<string, number>;
}

export class MemoryFunctionStore implements FunctionStore {
  private readonly bundles = new Map<string, Buffer>();
  private readonly functions = new Map<string, FunctionEntry>();
  private readonly logs = new Map<string, { chunks: string[]; expiresAt: number }>();
  private readonly watchers = new Set<RefChangeListener>();

  /** @param assertOpen throws when the owning store is closed. */
  constructor(
    private readonly now: () => number = Date.now,
    private readonly assertOpen: () => void = () => {},
  ) {}

  async putBundle(tenant: string, sha256: string, bytes: Uint8Array): Promise<void> {
    this.assertOpen();
    const key = `${tenant}\0${sha256}`;
    if (!this.bundles.has(key)) this.bundles.set(key, Buffer.from(bytes));
  }

  async getBundle(tenant: string, sha256: string): Promise<Buffer | undefined> {
    this.assertOpen();
    const bytes = this.bundles.get(`${tenant}\0${sha256}`);
    return bytes === undefined ? undefined : Buffer.from(bytes);
  }

  async publishVersion(tenant: string, namespace: string, fn: string, sha256: string): Promise<PublishedVersion> {
    this.assertOpen();
    if (!this.bundles.has(`${tenant}\0${sha256}`)) throw bundleMissing(sha256);
    const entry = this.entry(tenant, namespace, fn, true)!;
    const newest = entry.versions.at(-1);
    if (newest?.sha256 === sha256) return { ...newest, created: false };
    const version: FunctionVersion = { version: (newest?.version ?? 0) + 1, sha256, publishedAt: this.now() };
    entry.versions.push(version);
    this.announce(tenant, namespace, fn);
    return { ...version, created: true };
  }

  async listVersions(tenant: string, namespace: string, fn: string): Promise<FunctionVersion[]> {
    this.assertOpen();
    return [...(this.entry(tenant, namespace, fn, false)?.versions ?? [])];
  }

  async setAlias(tenant: string, namespace: string, fn: string, alias: string, version: number): Promise<void> {
    this.assertOpen();
    const entry = this.entry(tenant, namespace, fn, false);
    if (entry === undefined || !entry.versions.some((v) => v.version === version)) throw versionMissing(namespace, fn, version);
    entry.aliases.set(alias, version);
    this.announce(tenant, namespace, fn);
  }

  async listAliases(tenant: string, namespace: string, fn: string): Promise<Record<string, number>> {
    this.assertOpen();
    return Object.fromEntries([...(this.entry(tenant, namespace, fn, false)?.aliases ?? new Map<string, number>())].sort(([a], [b]) => (a < b ? -1 : 1)));
  }

  async resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined> {
    this.assertOpen();
    const entry = this.entry(tenant, namespace, fn, false);
    if (entry === undefined) return undefined;
    const number = 'version' in ref ? ref.version : 'alias' in ref ? entry.aliases.get(ref.alias) : entry.versions.at(-1)?.version;
    return number === undefined ? undefined : entry.versions.find((v) => v.version === number);
  }

  async appendLogs(activationId: string, chunk: string, ttlMs: number): Promise<void> {
    this.assertOpen();
    const now = this.now();
    const current = this.logs.get(activationId);
    const chunks = current !== undefined && current.expiresAt > now ? current.chunks : [];
    chunks.push(chunk);
    this.logs.set(activationId, { chunks, expiresAt: now + ttlMs });
  }

  async readLogs(activationId: string): Promise<string[] | undefined> {
    this.assertOpen();
    const current = this.logs.get(activationId);
    if (current === undefined || current.expiresAt <= this.now()) return undefined;
    return [...current.chunks];
  }

  watchRefs(listener: RefChangeListener): RefWatch {
    this.watchers.add(listener);
    listener.live(true);
    return {
      close: async () => {
        this.watchers.delete(listener);
      },
    };
  }

  private announce(tenant: string, namespace: string, fn: string): void {
    for (const watcher of this.watchers) watcher.changed({ tenant, namespace, function: fn });
  }

  private entry(tenant: string, namespace: string, fn: string, create: boolean): FunctionEntry | undefined {
    const key = `${tenant}\0${namespace}\0${fn}`;
    let entry = this.functions.get(key);
    if (entry === undefined && create) {
      entry = { versions: [], aliases: new Map() };
      this.functions.set(key, entry);
    }
    return entry;
  }
}

export function bundleMissing(sha256: string): UhlpError {
  return new UhlpError('UHLP_FN_NOT_FOUND', `no bundle ${sha256.slice(0, 12)} is stored for this tenant; store it before publishing`, { sha256 });
}

export function versionMissing(namespace: string, fn: string, version: number): UhlpError {
  return new UhlpError('UHLP_FN_NOT_FOUND', `${namespace}/${fn} has no version ${version}`, { function: `${namespace}/${fn}`, version });
}
