/**
 * The function store on Redis (or KVRocks): bundles as binary strings written
 * with SET NX, versions in one hash per function advanced by a Lua script
 * (fn-publish-1.lua) so two publishers never get the same number, aliases in
 * another hash, activation logs in lists that expire. Its arguments are checked
 * in front of it (src/state/validating-stores.ts).
 */
import type { Redis } from 'ioredis';
import type { FunctionRef } from './function-ref.js';
import type { FunctionStore, FunctionVersion, PublishedVersion } from './function-store.js';
import { bundleMissing, versionMissing } from './memory-function-store.js';
import type { RuntimeKeys } from '../state/runtime-keys.js';

/** Runs a Redis operation, turning its failures into the store's codes. */
export type RedisCall = <T>(operation: () => Promise<T>) => Promise<T>;

export class RedisFunctionStore implements FunctionStore {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RuntimeKeys,
    private readonly call: RedisCall,
  ) {}

  async putBundle(tenant: string, sha256: string, bytes: Uint8Array): Promise<void> {
    await this.call(() => this.redis.set(this.keys.fnBundle(tenant, sha256), Buffer.from(bytes), 'NX'));
  }

  async getBundle(tenant: string, sha256: string): Promise<Buffer | undefined> {
    return (await this.call(() => this.redis.getBuffer(this.keys.fnBundle(tenant, sha256)))) ?? undefined;
  }

  async publishVersion(tenant: string, namespace: string, fn: string, sha256: string): Promise<PublishedVersion> {
    const stored = await this.call(() => this.redis.exists(this.keys.fnBundle(tenant, sha256)));
    if (stored !== 1) throw bundleMissing(sha256);
    const run = (this.redis as unknown as Record<string, (...args: (string | number)[]) => Promise<[number, string, number]>>)['fnPublish']!;
    const [, record, created] = await this.call(() => run.call(this.redis, this.keys.fnVersions(tenant, namespace, fn), sha256, Date.now()));
    return { ...parseVersion(record), created: created === 1 };
  }

  async listVersions(tenant: string, namespace: string, fn: string): Promise<FunctionVersion[]> {
    const hash = await this.call(() => this.redis.hgetall(this.keys.fnVersions(tenant, namespace, fn)));
    return Object.entries(hash)
      .filter(([field]) => field.startsWith('v:'))
      .map(([, record]) => parseVersion(record))
      .sort((a, b) => a.version - b.version);
  }

  async setAlias(tenant: string, namespace: string, fn: string, alias: string, version: number): Promise<void> {
    // Versions are never deleted: once it exists, the alias may point at it.
    const exists = await this.call(() => this.redis.hexists(this.keys.fnVersions(tenant, namespace, fn), `v:${version}`));
    if (exists !== 1) throw versionMissing(namespace, fn, version);
    await this.call(() => this.redis.hset(this.keys.fnAliases(tenant, namespace, fn), alias, String(version)));
  }

  async listAliases(tenant: string, namespace: string, fn: string): Promise<Record<string, number>> {
    const hash = await this.call(() => this.redis.hgetall(this.keys.fnAliases(tenant, namespace, fn)));
    return Object.fromEntries(
      Object.entries(hash)
        .map(([alias, version]) => [alias, Number(version)] as const)
        .sort(([a], [b]) => (a < b ? -1 : 1)),
    );
  }

  async resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined> {
    const versions = this.keys.fnVersions(tenant, namespace, fn);
    let field: string;
    if ('version' in ref) field = `v:${ref.version}`;
    else if ('latest' in ref) {
      const latest = await this.call(() => this.redis.hget(versions, 'latest'));
      if (latest === null) return undefined;
      field = `v:${latest}`;
    } else {
      const version = await this.call(() => this.redis.hget(this.keys.fnAliases(tenant, namespace, fn), ref.alias));
      if (version === null) return undefined;
      field = `v:${version}`;
    }
    const record = await this.call(() => this.redis.hget(versions, field));
    return record === null ? undefined : parseVersion(record);
  }

  async appendLogs(activationId: string, chunk: string, ttlMs: number): Promise<void> {
    const key = this.keys.fnLogs(activationId);
    await this.call(() => this.redis.multi().rpush(key, chunk).pexpire(key, ttlMs).exec());
  }

  async readLogs(activationId: string): Promise<string[] | undefined> {
    const chunks = await this.call(() => this.redis.lrange(this.keys.fnLogs(activationId), 0, -1));
    return chunks.length === 0 ? undefined : chunks;
  }
}

function parseVersion(record: string): FunctionVersion {
  const parsed = JSON.parse(record) as FunctionVersion;
  return { version: Number(parsed.version), sha256: parsed.sha256, publishedAt: Number(parsed.publishedAt) };
}
