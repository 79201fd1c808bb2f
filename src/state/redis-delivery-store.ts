/**
 * The delivery store on Redis Streams, shared by every core on one Redis. Each
 * delivery route has a stream (`<prefix>queue:<app>:<name>` for a queue: any
 * producer may `XADD` to it) read by the consumer group `uhlp`; a message leaves
 * the stream when it is settled (XACK + XDEL), so the stream's length is its
 * backlog. Messages whose consumer died stay pending and are taken over with
 * XAUTOCLAIM after the route's lease. Retries wait in a sorted set by due time,
 * dead letters in a stream of their own; moves between them are Lua scripts, so
 * a message is never in two places or none.
 *
 * Like the runtime store, commands fail fast with UHLP_STATE_UNAVAILABLE while
 * Redis is down; a blocking read runs on a connection of its own (a reader).
 */
import type { RedisOptions } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { UhlpError } from '../shared/errors.js';
import {
  DELIVERY_GROUP,
  deadLetterFields,
  deadLetterFromFields,
  type DeliveryFailure,
  MAX_DEAD_LETTERS,
  messageFromFields,
  retryMember,
  type DeadLetter,
  type DeliveryMessage,
  type DeliveryReader,
  type DeliveryStore,
  type PublishInput,
  type StreamAddress,
  type StreamStats,
} from './delivery-store.js';
import { checkKeptAnswer, type KeptAnswer } from './idempotency-store.js';
import { loadLuaScripts } from './lua-scripts.js';
import { createRedisClient, isCluster, waitUntilServing, type RedisClient } from './redis-connection.js';
import { backoffDelay } from '../shared/backoff.js';
import { callRedis, runScript, toStateError } from './redis-calls.js';
import { awaitReplicas, type ReplicaAcks } from './replica-acks.js';
import { observeRedisClient, type RedisObserver } from './redis-observer.js';
import { RuntimeKeys } from './runtime-keys.js';

export interface RedisDeliveryStoreOptions {
  /** `redis://`, `rediss://` or `redis+sentinel://` URL (redis-connection.ts). */
  readonly url: string;
  /** Put in front of every key. @defaultValue `uhlp:` */
  readonly keyPrefix?: string;
  /** A command without an answer after this long fails with UHLP_STATE_UNAVAILABLE. @defaultValue 2000 */
  readonly commandTimeoutMs?: number;
  /** Told about connection errors. @defaultValue ignore them */
  readonly onConnectionError?: (error: Error) => void;
  /** Replicas to wait for after publishes, acknowledgements, cron fires and single-use marks (replica-acks.ts). @defaultValue none */
  readonly replicaAcks?: ReplicaAcks;
  /** Told each command's time and failure, reconnects and failovers (redis-observer.ts). @defaultValue none */
  readonly observer?: RedisObserver;
}

type StreamEntry = [id: string, fields: string[]];

export class RedisDeliveryStore implements DeliveryStore {
  readonly kind = 'redis' as const;
  readonly keys: RuntimeKeys;
  private readonly redis: RedisClient;
  private readonly readers = new Set<RedisClient>();
  private readonly commandTimeoutMs: number;

  constructor(private readonly options: RedisDeliveryStoreOptions) {
    this.keys = new RuntimeKeys(options.keyPrefix);
    this.commandTimeoutMs = options.commandTimeoutMs ?? 2000;
    this.redis = createRedisClient(options.url, this.redisOptions(this.commandTimeoutMs));
    this.redis.on('error', options.onConnectionError ?? (() => {}));
    if (options.observer) observeRedisClient(this.redis, 'delivery', options.observer);
    for (const script of loadLuaScripts().values()) this.redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    this.redis.connect().catch(() => {});
  }

  /** A store whose first connection is up; UHLP_STATE_UNAVAILABLE after `timeoutMs`. */
  static async connect(options: RedisDeliveryStoreOptions & { timeoutMs?: number }): Promise<RedisDeliveryStore> {
    const store = new RedisDeliveryStore(options);
    const timeoutMs = options.timeoutMs ?? 5000;
    try {
      await waitUntilServing(store.redis, timeoutMs);
      return store;
    } catch (error) {
      await store.close();
      throw error;
    }
  }

  async publish(address: StreamAddress, input: PublishInput): Promise<string> {
    const fields = ['payload', input.payload];
    if (input.invocationId !== undefined) fields.push('invocationId', input.invocationId);
    if (input.meta !== undefined) fields.push('meta', input.meta);
    const id = await this.kept(() => this.call(() => this.redis.xadd(this.stream(address), '*', ...fields)));
    return id!;
  }

  async ensureGroup(address: StreamAddress): Promise<void> {
    await this.adoptLegacyDeadLetters(address);
    try {
      await this.call(() => this.redis.xgroup('CREATE', this.stream(address), DELIVERY_GROUP, '0', 'MKSTREAM'));
    } catch (error) {
      if (error instanceof UhlpError && /BUSYGROUP/.test(error.message)) return;
      throw error;
    }
  }

  reader(): DeliveryReader {
    // Blocking reads need a connection each, with a command timeout past the longest block.
    const connection = createRedisClient(this.options.url, this.redisOptions(this.commandTimeoutMs + 30_000));
    connection.on('error', this.options.onConnectionError ?? (() => {}));
    if (this.options.observer) observeRedisClient(connection, 'delivery-reader', this.options.observer, { timeCommands: false });
    connection.connect().catch(() => {});
    this.readers.add(connection);
    let closed = false;
    return {
      read: async (address, consumer, count, blockMs) => {
        if (closed) return [];
        // Still connecting (a Cluster client learns the slot map and connects each master) or reconnecting after an
        // outage: wait for it, up to a command's timeout, rather than spin on fast failures.
        const serving = await waitUntilServing(connection, Math.max(blockMs, this.commandTimeoutMs)).then(
          () => true,
          () => false,
        );
        if (!serving || closed) return [];
        let reply: Array<[string, StreamEntry[]]> | null;
        try {
          reply = (await connection.xreadgroup('GROUP', DELIVERY_GROUP, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', this.stream(address), '>')) as Array<
            [string, StreamEntry[]]
          > | null;
        } catch (error) {
          if (closed) return [];
          // The group is gone (a stream deleted by hand): make it again.
          if (error instanceof Error && /NOGROUP/.test(error.message)) {
            await this.ensureGroup(address);
            return [];
          }
          throw toStateError(this.redis, error, 'a delivery command');
        }
        const entries = reply?.[0]?.[1] ?? [];
        return entries.map(([id, flat]) => messageFromFields(id, toRecord(flat)));
      },
      close: async () => {
        closed = true;
        this.readers.delete(connection);
        connection.disconnect();
      },
    };
  }

  async reclaim(address: StreamAddress, consumer: string, minIdleMs: number, count: number): Promise<DeliveryMessage[]> {
    const key = this.stream(address);
    const reply = (await this.call(() => this.redis.xautoclaim(key, DELIVERY_GROUP, consumer, minIdleMs, '0-0', 'COUNT', count))) as [string, Array<StreamEntry | null>, string[]?];
    const entries = (reply[1] ?? []).filter((entry): entry is StreamEntry => entry !== null);
    const messages: DeliveryMessage[] = [];
    for (const [id, flat] of entries) {
      // The delivery count says how many times the message was handed out: each one was an attempt.
      const pending = (await this.call(() => this.redis.xpending(key, DELIVERY_GROUP, id, id, '1'))) as Array<[string, string, number, number]>;
      const deliveries = Number(pending[0]?.[3] ?? 2);
      messages.push(messageFromFields(id, toRecord(flat), Math.max(1, deliveries - 1)));
    }
    return messages;
  }

  async ack(address: StreamAddress, ids: readonly string[], answers: readonly KeptAnswer[] = []): Promise<void> {
    if (ids.length === 0 && answers.length === 0) return;
    if (answers.length === 0) {
      await this.kept(() => this.script('queueAck', [this.stream(address)], [DELIVERY_GROUP, ...ids]));
      return;
    }
    // The records are the runtime store's: the same key builder, on the same Redis and prefix (start-core.ts gives both the same).
    const keys = [this.stream(address)];
    const args: Array<string | number> = [DELIVERY_GROUP, ids.length, ...ids];
    for (const answer of answers) {
      checkKeptAnswer(answer);
      keys.push(this.keys.idempotency(answer.appId, answer.key));
      args.push(JSON.stringify(answer.response), answer.ttlMs);
    }
    await this.kept(() => this.script('queueSettle', keys, args));
  }

  async retryLater(address: StreamAddress, message: DeliveryMessage, dueAt: number, charged = true): Promise<boolean> {
    const { kind, app, name } = address;
    const moved = await this.script('queueRetry', [this.stream(address), this.keys.deliveryRetries(kind, app, name)], [DELIVERY_GROUP, message.id, dueAt, retryMember(message, randomUUID(), charged)]);
    return moved === 1;
  }

  async promoteDue(address: StreamAddress, now: number, limit: number): Promise<number> {
    const { kind, app, name } = address;
    const moved = Number(await this.script('queuePromote', [this.keys.deliveryRetries(kind, app, name), this.stream(address)], [now, limit]));
    if (isCluster(this.redis) || moved >= limit) return moved;
    // A single Redis may hold retries an earlier version kept under the old name: they are due here too, so none is stranded.
    return moved + Number(await this.script('queuePromote', [this.keys.legacyDeliveryCompanion(kind, app, name, 'retry'), this.stream(address)], [now, limit - moved]));
  }

  async deadLetter(address: StreamAddress, message: DeliveryMessage, reason: string, error?: DeliveryFailure): Promise<boolean> {
    const { kind, app, name } = address;
    const fields = deadLetterFields(message, reason, error, Date.now());
    const moved = await this.script('queueDeadLetter', [this.stream(address), this.keys.deliveryDead(kind, app, name)], [DELIVERY_GROUP, message.id, MAX_DEAD_LETTERS, ...fields]);
    return moved === 1;
  }

  async stats(address: StreamAddress, now: number): Promise<StreamStats> {
    const { kind, app, name } = address;
    const key = this.stream(address);
    const retries = this.keys.deliveryRetries(kind, app, name);
    const replies = await this.call(() =>
      this.redis
        .multi()
        .xlen(key)
        .xrange(key, '-', '+', 'COUNT', '1')
        .zcard(retries)
        .zrange(retries, '0', '0')
        .xlen(this.keys.deliveryDead(kind, app, name))
        .exec(),
    );
    const value = <T>(i: number): T => {
      const [error, result] = replies?.[i] ?? [new Error('no reply'), undefined];
      if (error) throw toStateError(this.redis, error, 'a delivery command');
      return result as T;
    };
    let pending = 0;
    try {
      const summary = (await this.redis.xpending(key, DELIVERY_GROUP)) as [number, ...unknown[]];
      pending = Number(summary[0] ?? 0);
    } catch {
      // No group yet: nothing was delivered.
    }
    const length = value<number>(0);
    const first = value<StreamEntry[]>(1)[0];
    const retrying = value<number>(2);
    const firstRetry = value<string[]>(3)[0];
    let oldest = Infinity;
    if (first) oldest = messageFromFields(first[0], toRecord(first[1])).publishedAt;
    if (firstRetry) oldest = Math.min(oldest, Number((JSON.parse(firstRetry) as { publishedAt: string }).publishedAt));
    return { depth: length + retrying, pending, retrying, deadLetters: value<number>(4), oldestAgeMs: oldest === Infinity ? 0 : Math.max(0, now - oldest) };
  }

  async deadLetters(address: StreamAddress, limit: number): Promise<DeadLetter[]> {
    const { kind, app, name } = address;
    const entries = (await this.call(() => this.redis.xrange(this.keys.deliveryDead(kind, app, name), '-', '+', 'COUNT', limit))) as StreamEntry[];
    return entries.map(([id, flat]) => deadLetterFromFields(id, toRecord(flat)));
  }

  async redrive(address: StreamAddress, limit: number, now: number): Promise<number> {
    const { kind, app, name } = address;
    return Number(await this.script('queueRedrive', [this.keys.deliveryDead(kind, app, name), this.stream(address)], [limit, now]));
  }

  async fireCronSlot(address: StreamAddress, slotMs: number, claimant: string, ttlMs: number, message: Required<Omit<PublishInput, 'meta'>> & Pick<PublishInput, 'meta'>): Promise<boolean> {
    const { app, name } = address;
    const keys = [this.keys.cronSlot(app, name, slotMs), this.keys.cronLast(app, name), this.stream(address)];
    return (await this.kept(() => this.script('cronFire', keys, [slotMs, ttlMs, claimant, message.payload, message.invocationId, message.meta ?? '']))) === 1;
  }

  async lastCronSlot(app: string, jobId: string): Promise<number | undefined> {
    const raw = await this.call(() => this.redis.get(this.keys.cronLast(app, jobId)));
    // On a single Redis, the last slot an earlier version fired under the old name counts too: no slot fires twice across an upgrade.
    const legacy = isCluster(this.redis) ? null : await this.call(() => this.redis.get(this.keys.legacyCronLast(app, jobId)));
    const fired = [raw, legacy].filter((value): value is string => value !== null).map(Number);
    return fired.length === 0 ? undefined : Math.max(...fired);
  }

  async useOnce(id: string, ttlMs: number): Promise<boolean> {
    return (await this.kept(() => this.call(() => this.redis.set(this.keys.usedToken(id), '1', 'PX', ttlMs, 'NX')))) === 'OK';
  }

  async putInvocation(id: string, json: string, ttlMs: number): Promise<void> {
    await this.call(() => this.redis.set(this.keys.invocation(id), json, 'PX', ttlMs));
  }

  async getInvocation(id: string): Promise<string | undefined> {
    return (await this.call(() => this.redis.get(this.keys.invocation(id)))) ?? undefined;
  }

  async close(): Promise<void> {
    for (const reader of this.readers) reader.disconnect();
    this.readers.clear();
    if (this.redis.status === 'end') return;
    try {
      await this.redis.quit();
    } catch {
      // QUIT cannot be sent while disconnected.
    }
    // A client QUIT could not reach (between two reconnect attempts) never ends by itself: close it, and with it its
    // Sentinel switch watch (redis-runtime-store.ts).
    this.redis.disconnect();
  }

  /**
   * On a single Redis, moves the dead letters an earlier version kept under the
   * old name (`<stream>:dead`) to the new one, when the new one is still empty
   * (RENAMENX): they are listed and redriven as any other. A Cluster never held
   * the old layout.
   */
  private async adoptLegacyDeadLetters(address: StreamAddress): Promise<void> {
    if (isCluster(this.redis)) return;
    const { kind, app, name } = address;
    const legacy = this.keys.legacyDeliveryCompanion(kind, app, name, 'dead');
    if ((await this.call(() => this.redis.exists(legacy))) === 0) return;
    await this.call(() => this.redis.renamenx(legacy, this.keys.deliveryDead(kind, app, name)));
  }

  private stream(address: StreamAddress): string {
    return this.keys.deliveryStream(address.kind, address.app, address.name);
  }

  private redisOptions(commandTimeout: number): RedisOptions {
    return {
      lazyConnect: true,
      // As the runtime store: fail fast while disconnected, never resend a write after a reconnect.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout,
      connectTimeout: 2000,
      // ioredis counts attempts from 1.
      retryStrategy: (attempt) => backoffDelay(attempt - 1, { initialMs: 100, maxMs: 2000 }),
    };
  }

  private script(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return runScript(this.redis, 'a delivery command', name, keys, args);
  }

  /** Runs a write behind a guarantee, then waits for the replicas `replicaAcks` asks for. */
  private async kept<T>(operation: () => Promise<T>): Promise<T> {
    const result = await operation();
    await awaitReplicas(this.options.replicaAcks, 'a delivery command', (replicas, timeoutMs) => this.call(() => this.redis.wait(replicas, timeoutMs)));
    return result;
  }

  private call<T>(operation: () => Promise<T>): Promise<T> {
    return callRedis(this.redis, 'a delivery command', operation);
  }
}

function toRecord(flat: string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[flat[i]!] = flat[i + 1]!;
  return record;
}
