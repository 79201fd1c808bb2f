/**
 * The function store on Redis (or KVRocks): bundles as binary strings written
 * with SET NX, versions in one hash per function advanced by a Lua script
 * (fn-publish-1.lua) so two publishers never get the same number, aliases in
 * another hash, activation logs in lists that expire. Its arguments are checked
 * in front of it (src/state/validating-stores.ts).
 *
 * Ref changes travel on one pub/sub channel under the store's prefix
 * (RuntimeKeys.fnChanges): an alias is set and announced in one MULTI, a
 * publish is announced right after its script (announced again by a retry,
 * created or not). A writer that dies between its write and the announcement
 * leaves the change to the watchers' own bound (their cache's TTL). Each watch
 * has its own subscriber connection: it is live once subscribed, down from the
 * moment the connection closes, and subscribes again on every reconnect.
 */
import type { FunctionRef } from './function-ref.js';
import type { FunctionStore, FunctionVersion, PublishedVersion, RefChangeListener, RefWatch } from './function-store.js';
import { bundleMissing, versionMissing } from './memory-function-store.js';
import { duplicateClient, type RedisClient } from '../state/redis-connection.js';
import type { RuntimeKeys } from '../state/runtime-keys.js';

/** Runs a Redis operation, turning its failures into the store's codes. */
export type RedisCall = <T>(operation: () => Promise<T>) => Promise<T>;

export class RedisFunctionStore implements FunctionStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly keys: RuntimeKeys,
    private readonly call: RedisCall,
    /** Told about the watch connections' errors (ioredis reports each failed reconnect). @defaultValue ignore them */
    private readonly onConnectionError: (error: Error) => void = () => {},
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
    await this.call(() => this.redis.publish(this.keys.fnChanges(), changeMessage(tenant, namespace, fn)));
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
    await this.call(async () => {
      const answers = await this.redis.multi().hset(this.keys.fnAliases(tenant, namespace, fn), alias, String(version)).publish(this.keys.fnChanges(), changeMessage(tenant, namespace, fn)).exec();
      const failed = answers?.find(([error]) => error !== null)?.[0];
      if (failed) throw failed;
    });
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

  watchRefs(listener: RefChangeListener): RefWatch {
    const channel = this.keys.fnChanges();
    // Subscribed again by hand on each reconnect, so that `live` is told only once it is.
    // Named after the prefix (CLIENT LIST tells whose watch a connection is); a name may hold no spaces.
    const connectionName = `${this.keys.prefix}fn-watch`.replace(/[^\x21-\x7e]/g, '_');
    const subscriber = duplicateClient(this.redis, { autoResubscribe: false, connectionName });
    let closed = false;
    subscriber.on('error', this.onConnectionError);
    subscriber.on('message', (from: string, message: string) => {
      const change = from === channel ? parseChange(message) : undefined;
      if (change !== undefined && !closed) listener.changed(change);
    });
    subscriber.on('ready', () => {
      subscriber.subscribe(channel).then(
        () => {
          if (!closed) listener.live(true);
        },
        (error: Error) => {
          // Not subscribed: drop the connection, and with it a half-made subscription; the reconnect tries again.
          this.onConnectionError(error);
          if (!closed) subscriber.disconnect(true);
        },
      );
    });
    subscriber.on('close', () => {
      if (!closed) listener.live(false);
    });
    subscriber.connect().catch(() => {
      // The first attempt failed; the retry strategy keeps trying, and the watch is not live meanwhile.
    });
    return {
      close: async () => {
        if (closed) return;
        closed = true;
        try {
          await subscriber.quit();
        } catch {
          // QUIT cannot be sent while disconnected.
        }
        // Closes a client QUIT could not reach, and its Sentinel switch watch (redis-runtime-store.ts).
        subscriber.disconnect();
      },
    };
  }
}

function changeMessage(tenant: string, namespace: string, fn: string): string {
  return JSON.stringify([tenant, namespace, fn]);
}

/** A change announced on the channel; undefined for anything else (a message not of this store). */
function parseChange(message: string): { tenant: string; namespace: string; function: string } | undefined {
  try {
    const parsed: unknown = JSON.parse(message);
    if (Array.isArray(parsed) && parsed.length === 3 && parsed.every((part) => typeof part === 'string')) {
      const [tenant, namespace, fn] = parsed as [string, string, string];
      return { tenant, namespace, function: fn };
    }
  } catch {
    // Not JSON: not ours.
  }
  return undefined;
}

function parseVersion(record: string): FunctionVersion {
  const parsed = JSON.parse(record) as FunctionVersion;
  return { version: Number(parsed.version), sha256: parsed.sha256, publishedAt: Number(parsed.publishedAt) };
}
