/**
 * The production runtime store on Redis (ioredis), shared by every core replica.
 *
 * Outages: a request must never hang on a dead Redis. The client keeps no offline
 * queue, fails the commands in flight as soon as the connection drops, and bounds
 * every command with a timeout; each such failure surfaces as
 * `UHLP_STATE_UNAVAILABLE` (503). Reconnection never gives up (capped backoff),
 * and ioredis's ready check waits until a restarted Redis has loaded its data.
 * Nothing acknowledged is lost across a Redis restart as long as Redis persists
 * it (`appendonly yes`; `appendfsync always` even for a crash).
 *
 * Every concern's Redis store shares this one connection and the one key builder
 * (runtime-keys.ts), behind the same input checks as the memory store
 * (validating-stores.ts). Multi-step updates run as Lua scripts (`lua/*.lua`,
 * named with their key count) or MULTI transactions.
 */
import type { RedisOptions } from 'ioredis';
import { UhlpError } from '../shared/errors.js';
import { backoffDelay } from '../shared/backoff.js';
import { RedisFunctionStore } from '../functions/redis-function-store.js';
import { loadLuaScripts } from './lua-scripts.js';
import { createRedisClient, waitUntilServing, type RedisClient } from './redis-connection.js';
import { isRedisUrl } from './redis-url.js';
import { RedisStoreClient } from './redis-calls.js';
import type { ReplicaAcks } from './replica-acks.js';
import { observeRedisClient, type RedisObserver } from './redis-observer.js';
import type { RedisGuaranteeSettings } from './redis-guarantees.js';
import { RedisIdempotencyStore } from './redis-idempotency-store.js';
import { RedisKvStore } from './redis-kv-store.js';
import { RedisLeaseStore } from './redis-lease-store.js';
import { RedisLlmStore } from './redis-llm-store.js';
import { RedisOracleStore } from './redis-oracle-store.js';
import { RedisRateLimitStore } from './redis-rate-limit-store.js';
import { RedisFlowStore } from './redis-flow-store.js';
import { RedisRunStore } from './redis-run-store.js';
import { RedisSessionStore } from './redis-session-store.js';
import { RuntimeKeys } from './runtime-keys.js';
import { RedisTurnJournalStore, type RedisTurnJournalOptions } from './redis-turn-journal-store.js';
import type { TurnJournalStore } from './turn-journal-store.js';
import type { RuntimeStore } from './runtime-store.js';
import { CheckedStores } from './validating-stores.js';

export interface RedisRuntimeStoreOptions {
  /** `redis://[user:password@]host:port[/db]`, `rediss://...`, or `redis+sentinel://...` (redis-connection.ts). */
  url: string;
  /** Put in front of every key. @defaultValue `uhlp:` */
  keyPrefix?: string;
  /** A command without an answer after this long fails with UHLP_STATE_UNAVAILABLE. @defaultValue 2000 */
  commandTimeoutMs?: number;
  /** Give up one connection attempt after this long (then retry). @defaultValue 2000 */
  connectTimeoutMs?: number;
  /** Longest wait between reconnection attempts. @defaultValue 2000 */
  maxReconnectDelayMs?: number;
  /** Told about connection errors (ioredis reports each failed reconnect). @defaultValue ignore them */
  onConnectionError?: (error: Error) => void;
  /** Replicas to wait for after once-only claims and answers and lease acquisitions (replica-acks.ts). @defaultValue none */
  replicaAcks?: ReplicaAcks;
  /** Told each command's time and failure, reconnects and failovers (redis-observer.ts). @defaultValue none */
  observer?: RedisObserver;
}

export class RedisRuntimeStore extends CheckedStores implements RuntimeStore {
  readonly kind = 'redis' as const;
  readonly keys: RuntimeKeys;
  private readonly redis: RedisClient;
  private readonly client: RedisStoreClient;

  /**
   * Starts connecting in the background and returns at once; until Redis is up,
   * calls fail fast with UHLP_STATE_UNAVAILABLE. Use `RedisRuntimeStore.connect`
   * to wait for the first connection.
   */
  constructor(options: RedisRuntimeStoreOptions) {
    if (!isRedisUrl(options.url)) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `the state URL must be a redis://, rediss:// or redis+sentinel:// URL, got "${options.url}"`, { field: 'url' });
    }
    if (options.keyPrefix !== undefined && options.keyPrefix === '') {
      // An empty prefix would make deleteAllKeys() empty the whole database.
      throw new UhlpError('UHLP_CONFIG_INVALID', 'the Redis key prefix must not be empty', { field: 'keyPrefix' });
    }
    const keys = new RuntimeKeys(options.keyPrefix);
    const maxDelay = options.maxReconnectDelayMs ?? 2000;
    const redisOptions: RedisOptions = {
      lazyConnect: true,
      // Fail fast instead of queueing while disconnected, and fail the commands in
      // flight when the connection drops instead of resending them after a reconnect
      // (a resent write could apply twice; a queued request would hang).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: options.commandTimeoutMs ?? 2000,
      connectTimeout: options.connectTimeoutMs ?? 2000,
      // ioredis counts attempts from 1.
      retryStrategy: (attempt) => backoffDelay(attempt - 1, { initialMs: 100, maxMs: maxDelay }),
    };
    const redis = createRedisClient(options.url, redisOptions);
    const onError = options.onConnectionError ?? (() => {});
    redis.on('error', onError);
    if (options.observer) observeRedisClient(redis, 'runtime', options.observer);
    for (const script of loadLuaScripts().values()) {
      redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    // Every concern's store shares the one connection and key builder.
    const client = new RedisStoreClient(redis, keys, options.replicaAcks);
    super({
      sessions: new RedisSessionStore(client),
      kv: new RedisKvStore(client),
      leases: new RedisLeaseStore(client),
      idempotency: new RedisIdempotencyStore(client),
      rateLimits: new RedisRateLimitStore(client),
      oracle: new RedisOracleStore(client),
      llm: new RedisLlmStore(client),
      runs: new RedisRunStore(client),
      flows: new RedisFlowStore(client),
      functions: new RedisFunctionStore(redis, keys, (operation) => client.call(operation), onError),
    });
    this.keys = keys;
    this.redis = redis;
    this.client = client;
    this.redis.connect().catch(() => {
      // The first attempt failed; retryStrategy keeps trying and calls fail fast meanwhile.
    });
  }

  /** A store whose first connection is up; throws UHLP_STATE_UNAVAILABLE after `timeoutMs` (default 5000). */
  static async connect(options: RedisRuntimeStoreOptions & { timeoutMs?: number }): Promise<RedisRuntimeStore> {
    const store = new RedisRuntimeStore(options);
    try {
      await store.waitUntilReady(options.timeoutMs ?? 5000);
      return store;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  /** The turn journal's lists on this store's connection (src/turns/turn-journal.ts). */
  turnJournal(options: RedisTurnJournalOptions): TurnJournalStore {
    return new RedisTurnJournalStore(this.client, options);
  }

  /** Connection state, for /readyz details: `ready` when commands are served. */
  get status(): string {
    return this.redis.status;
  }

  /** The master's settings the state guarantees need (redis-guarantees.ts); `unreadable` when CONFIG GET is refused. */
  async guaranteeSettings(): Promise<RedisGuaranteeSettings> {
    let config: string[];
    try {
      config = (await this.client.call(() => this.redis.config('GET', 'appendonly', 'appendfsync', 'min-replicas-to-write'))) as string[];
    } catch (error) {
      return { unreadable: error instanceof Error ? error.message : String(error) };
    }
    const value = (name: string): string | undefined => {
      const index = config.indexOf(name);
      return index >= 0 && index % 2 === 0 ? config[index + 1] : undefined;
    };
    // INFO failing now (the master went away since CONFIG GET answered) leaves the replicas unchecked.
    const replication = await this.client.call(() => this.redis.info('replication')).catch(() => '');
    const connected = /^connected_slaves:(\d+)/m.exec(replication)?.[1];
    const minReplicas = value('min-replicas-to-write');
    return {
      ...(value('appendonly') !== undefined ? { appendonly: value('appendonly')! } : {}),
      ...(value('appendfsync') !== undefined ? { appendfsync: value('appendfsync')! } : {}),
      ...(minReplicas !== undefined ? { minReplicasToWrite: Number(minReplicas) } : {}),
      ...(connected !== undefined ? { connectedReplicas: Number(connected) } : {}),
    };
  }

  /** Resolves once the client is ready (connected and Redis has loaded its data). */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    await waitUntilServing(this.redis, timeoutMs);
  }

  async ping(): Promise<void> {
    await this.client.call(() => this.redis.ping());
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    try {
      await this.redis.quit();
    } catch {
      // QUIT cannot be sent while disconnected; dropping the socket is all that is left.
    }
    // A client QUIT could not reach (between two reconnect attempts) never emits 'end': disconnect() closes it, and
    // with it a Sentinel client's switch watch (its sentinel subscriptions would keep the process alive,
    // sentinel-switch-watch.ts); after QUIT it has nothing else to do.
    this.redis.disconnect();
  }

  /** Deletes every key under this store's prefix (tests and `uhlp` maintenance tools). */
  async deleteAllKeys(): Promise<number> {
    return this.client.unlinkAll(await this.client.scanAll(this.keys.everything()));
  }
}
