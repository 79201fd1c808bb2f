/**
 * The run index on Redis, shared by every core of an installation: a sorted
 * set of run ids by creation time (`runs:index`) and a hash of their
 * summaries (`runs:summaries`), both under the runtime state's key prefix.
 * Pages are read newest first from the sorted set in batches, their summaries
 * with one HMGET a batch; a filter on app, component or status reads the
 * summaries of the time range it covers (bounded by MAX_COUNTED).
 *
 * Writes are pipelined and never wait: a run's answer never waits for its
 * index entry. Entries of runs whose records expired (no change for `ttlMs`)
 * are pruned about once a minute.
 */
import type { RedisOptions } from 'ioredis';
import type { Logger } from '../logger.js';
import { callRedis } from '../state/redis-calls.js';
import { createRedisClient, waitUntilServing, type RedisClient } from '../state/redis-connection.js';
import { observeRedisClient, type RedisObserver } from '../state/redis-observer.js';
import { RuntimeKeys } from '../state/runtime-keys.js';
import { decodeCursor, encodeCursor, filtersBeyondTime, isAfter, matches, MAX_COUNTED, type RunIndex, type RunPage, type RunQuery, type RunSummary } from './run-index.js';

export interface RedisRunIndexOptions {
  /** `redis://`, `rediss://` or `redis+sentinel://` URL (state/redis-connection.ts). */
  readonly url: string;
  /** The runtime state's key prefix. @defaultValue RuntimeKeys' default */
  readonly keyPrefix?: string;
  /** How long a run is listed after its last change, ms (the run records' TTL). */
  readonly ttlMs: number;
  readonly logger: Logger;
  /** Clock, epoch ms. @defaultValue Date.now */
  readonly now?: () => number;
  /** Told each command's time and failure, reconnects and failovers (state/redis-observer.ts). @defaultValue none */
  readonly observer?: RedisObserver;
}

/** Ids read from the sorted set (and summaries from the hash) per round trip. */
const BATCH = 1000;
/** How often expired entries are looked for. */
const PRUNE_EVERY_MS = 60_000;

export class RedisRunIndex implements RunIndex {
  private readonly redis: RedisClient;
  private readonly keys: RuntimeKeys;
  private readonly now: () => number;
  private pending = new Set<Promise<unknown>>();
  private lastPrune = 0;
  private lastError = 0;

  constructor(private readonly options: RedisRunIndexOptions) {
    this.keys = new RuntimeKeys(options.keyPrefix);
    this.now = options.now ?? Date.now;
    const redisOptions: RedisOptions = {
      lazyConnect: true,
      // As the runtime store: fail fast while disconnected rather than queue writes.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: 2000,
      connectTimeout: 2000,
      retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 10), 2000),
    };
    this.redis = createRedisClient(options.url, redisOptions);
    this.redis.on('error', () => {});
    if (options.observer) observeRedisClient(this.redis, 'run-index', options.observer);
    this.redis.connect().catch(() => {});
  }

  /** An index whose first connection is up; UHLP_STATE_UNAVAILABLE after `timeoutMs` (the runtime store waits the same way). */
  static async connect(options: RedisRunIndexOptions & { timeoutMs?: number }): Promise<RedisRunIndex> {
    const index = new RedisRunIndex(options);
    try {
      await waitUntilServing(index.redis, options.timeoutMs ?? 5000, 'Redis (run index)');
      return index;
    } catch (error) {
      index.redis.disconnect();
      throw error;
    }
  }

  put(summary: RunSummary): void {
    const write = this.redis
      .multi()
      .zadd(this.keys.runIndex(), Date.parse(summary.createdAt), summary.id)
      .hset(this.keys.runSummaries(), summary.id, JSON.stringify(summary))
      .exec()
      .catch((error: unknown) => this.warn(error, 'a run summary was not written to the run index'));
    this.track(write);
    if (this.now() - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = this.now();
      this.track(this.prune().catch((error: unknown) => this.warn(error, 'expired runs were not pruned from the run index')));
    }
  }

  list(query: RunQuery): Promise<RunPage> {
    return callRedis(this.redis, 'a run index read', () => this.read(query));
  }

  async flush(): Promise<void> {
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  async close(): Promise<void> {
    await this.flush();
    this.redis.disconnect();
  }

  private async read(query: RunQuery): Promise<RunPage> {
    const cursor = query.cursor !== undefined ? decodeCursor(query.cursor) : undefined;
    const max = Math.min(query.until !== undefined ? query.until - 1 : Number.POSITIVE_INFINITY, cursor?.at ?? Number.POSITIVE_INFINITY);
    const min = query.since ?? Number.NEGATIVE_INFINITY;
    const bound = (value: number): string => (value === Number.POSITIVE_INFINITY ? '+inf' : value === Number.NEGATIVE_INFINITY ? '-inf' : String(value));
    const runs: RunSummary[] = [];
    let more = false;
    for (let offset = 0; ; offset += BATCH) {
      const batch = await this.redis.zrevrangebyscore(this.keys.runIndex(), bound(max), bound(min), 'WITHSCORES', 'LIMIT', offset, BATCH);
      if (batch.length === 0) break;
      const ids: string[] = [];
      const scores: number[] = [];
      for (let i = 0; i < batch.length; i += 2) {
        const id = batch[i]!;
        const at = Number(batch[i + 1]);
        // The cursor's own score may hold runs the last page showed: only those after it count.
        if (cursor !== undefined && !isAfter(at, id, cursor)) continue;
        ids.push(id);
        scores.push(at);
      }
      const summaries = ids.length > 0 ? await this.redis.hmget(this.keys.runSummaries(), ...ids) : [];
      for (const json of summaries) {
        if (json === null) continue;
        const summary = JSON.parse(json) as RunSummary;
        if (!matches(summary, query)) continue;
        if (runs.length < query.limit) runs.push(summary);
        else {
          more = true;
          break;
        }
      }
      if (more || batch.length < BATCH * 2) break;
    }
    const last = runs.at(-1);
    const next = more && last !== undefined ? encodeCursor({ at: Date.parse(last.createdAt), id: last.id }) : undefined;
    if (cursor !== undefined) return { runs, ...(next !== undefined ? { next } : {}) };
    const counted = await this.count(query, min, max, bound);
    return { runs, ...(next !== undefined ? { next } : {}), ...counted };
  }

  /** The first page's total: ZCOUNT for a time range alone, else the range's summaries read (bounded). */
  private async count(query: RunQuery, min: number, max: number, bound: (value: number) => string): Promise<{ total: number; countCapped: boolean }> {
    if (!filtersBeyondTime(query)) {
      const total = await this.redis.zcount(this.keys.runIndex(), bound(min), bound(max));
      return { total, countCapped: false };
    }
    let total = 0;
    for (let offset = 0; offset < MAX_COUNTED; offset += BATCH) {
      const ids = await this.redis.zrevrangebyscore(this.keys.runIndex(), bound(max), bound(min), 'LIMIT', offset, BATCH);
      if (ids.length === 0) return { total, countCapped: false };
      for (const json of await this.redis.hmget(this.keys.runSummaries(), ...ids)) {
        if (json !== null && matches(JSON.parse(json) as RunSummary, query)) total++;
      }
      if (ids.length < BATCH) return { total, countCapped: false };
    }
    return { total, countCapped: true };
  }

  /** Drops entries of runs unchanged for ttlMs (their records are gone), oldest first, a batch at a time. */
  private async prune(): Promise<void> {
    const oldest = this.now() - this.options.ttlMs;
    const ids = await this.redis.zrangebyscore(this.keys.runIndex(), '-inf', String(oldest), 'LIMIT', 0, BATCH);
    if (ids.length === 0) return;
    const summaries = await this.redis.hmget(this.keys.runSummaries(), ...ids);
    // Created before the horizon is not enough: a run changed since (a late approval) is still kept.
    const expired = ids.filter((_, i) => {
      const json = summaries[i];
      return json === null || json === undefined || Date.parse((JSON.parse(json) as RunSummary).updatedAt) < oldest;
    });
    if (expired.length > 0) await this.redis.multi().zrem(this.keys.runIndex(), ...expired).hdel(this.keys.runSummaries(), ...expired).exec();
  }

  private track(work: Promise<unknown>): void {
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }

  private warn(error: unknown, message: string): void {
    // An outage fails every write: one line every few seconds is enough.
    if (this.now() - this.lastError < 5000) return;
    this.lastError = this.now();
    this.options.logger.warn({ err: error instanceof Error ? error.message : String(error) }, message);
  }
}
