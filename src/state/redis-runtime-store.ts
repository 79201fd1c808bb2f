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
 * Multi-step updates run as Lua scripts (`lua/*.lua`) or MULTI transactions.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { UhlpError } from '../shared/errors.js';
import { loadLuaScripts } from './lua-scripts.js';
import { callRedis, runScript, toStateError } from './redis-calls.js';
import { MAX_LIMIT_PER_SECOND } from './rate-limit-gcra.js';
import { escapeGlob, RuntimeKeys } from './runtime-keys.js';
import {
  checkCounterDelta,
  checkDay,
  checkJsonText,
  checkOracleSample,
  checkOracleScope,
  checkKey,
  checkNonNegativeInteger,
  checkPositiveInteger,
  checkPrefix,
  checkRunJson,
  checkStatusCode,
  checkTtl,
} from './runtime-store-input.js';
import {
  MAX_ORACLE_CANDIDATE_CHARS,
  MAX_ORACLE_CANDIDATES,
  MAX_ORACLE_RECORD_CHARS,
  ORACLE_COUNTER_NAMES,
  type BeginIdempotentOptions,
  type CreateSessionInput,
  type IdempotencyBegin,
  type IdempotencyRecord,
  type KvEntry,
  type KvScanOptions,
  type KvSetOptions,
  type Lease,
  type OracleCounters,
  type OracleSampleInput,
  type OracleSampleOptions,
  type OracleSampleOutcome,
  type OracleSampleScope,
  type OracleSampleStats,
  type RateLimitDecision,
  type RuntimeStore,
  type SessionRecord,
  type StoredResponse,
  type StoredRun,
} from './runtime-store.js';
import { assertSessionId, newSessionId } from './session-id.js';
import { backoffDelay } from '../shared/backoff.js';
import { nextEvent, withDeadline } from '../shared/deadline.js';
import type { FunctionStore } from '../functions/function-store.js';
import { RedisFunctionStore } from '../functions/redis-function-store.js';

export interface RedisRuntimeStoreOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://...`. */
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
}



export class RedisRuntimeStore implements RuntimeStore {
  readonly kind = 'redis' as const;
  readonly keys: RuntimeKeys;
  private readonly redis: Redis;
  readonly functions: FunctionStore;

  /**
   * Starts connecting in the background and returns at once; until Redis is up,
   * calls fail fast with UHLP_STATE_UNAVAILABLE. Use `RedisRuntimeStore.connect`
   * to wait for the first connection.
   */
  constructor(options: RedisRuntimeStoreOptions) {
    if (!/^rediss?:\/\//.test(options.url)) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `the state URL must be a redis:// or rediss:// URL, got "${options.url}"`, { field: 'url' });
    }
    if (options.keyPrefix !== undefined && options.keyPrefix === '') {
      // An empty prefix would make deleteAllKeys() empty the whole database.
      throw new UhlpError('UHLP_CONFIG_INVALID', 'the Redis key prefix must not be empty', { field: 'keyPrefix' });
    }
    this.keys = new RuntimeKeys(options.keyPrefix);
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
    this.redis = new Redis(options.url, redisOptions);
    const onError = options.onConnectionError ?? (() => {});
    this.redis.on('error', onError);
    for (const script of loadLuaScripts().values()) {
      this.redis.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    }
    this.functions = new RedisFunctionStore(this.redis, this.keys, (operation) => this.call(operation));
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

  /** Connection state, for /readyz details: `ready` when commands are served. */
  get status(): string {
    return this.redis.status;
  }

  /** Resolves once the client is ready (connected and Redis has loaded its data). */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    if (this.redis.status === 'ready') return;
    await withDeadline((signal) => nextEvent(this.redis, 'ready', signal), timeoutMs, () => new UhlpError('UHLP_STATE_UNAVAILABLE', `Redis did not become ready within ${timeoutMs} ms`));
  }

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    checkKey('appId', input.appId);
    checkTtl('ttlMs', input.ttlMs);
    const id = input.id ?? newSessionId();
    assertSessionId(id, 'id');
    const now = Date.now();
    const created = await this.script('sessionCreate', [this.keys.session(id)], [id, input.appId, now, input.ttlMs, JSON.stringify(input.data ?? {})]);
    if (created !== 1) throw new UhlpError('UHLP_STATE_INPUT_INVALID', `session ${id} already exists`, { field: 'id' });
    return { id, appId: input.appId, createdAt: now, lastSeenAt: now, expiresAt: now + input.ttlMs, turns: 0, data: structuredClone(input.data ?? {}) };
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    checkKey('id', id);
    const hash = await this.call(() => this.redis.hgetall(this.keys.session(id)));
    return parseSession(hash);
  }

  async touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined> {
    checkKey('id', id);
    checkTtl('ttlMs', ttlMs);
    const flat = (await this.script('sessionTouch', [this.keys.session(id)], [Date.now(), ttlMs])) as string[];
    const hash: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) hash[flat[i]!] = flat[i + 1]!;
    return parseSession(hash);
  }

  async nextTurn(id: string): Promise<number> {
    checkKey('id', id);
    const turn = Number(await this.script('sessionNextTurn', [this.keys.session(id)], []));
    if (turn < 0) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${id} does not exist or has expired`, { sessionId: id });
    return turn;
  }

  async deleteSession(id: string): Promise<boolean> {
    checkKey('id', id);
    return (await this.call(() => this.redis.del(this.keys.session(id)))) === 1;
  }

  async kvGet(key: string): Promise<string | undefined> {
    checkKey('key', key);
    return (await this.call(() => this.redis.get(this.keys.kv(key)))) ?? undefined;
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    checkKey('key', key);
    if (typeof value !== 'string') throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'value must be a string', { field: 'value' });
    const ttlMs = options.ttlMs;
    if (ttlMs !== undefined) checkTtl('ttlMs', ttlMs);
    await this.call(() => (ttlMs === undefined ? this.redis.set(this.keys.kv(key), value) : this.redis.set(this.keys.kv(key), value, 'PX', ttlMs)));
  }

  async kvDelete(key: string): Promise<boolean> {
    checkKey('key', key);
    return (await this.call(() => this.redis.del(this.keys.kv(key)))) === 1;
  }

  /** SCAN over the key space: fine for the modest kv of apps, O(keys in the database) per call. */
  async kvScan(prefix: string, options: KvScanOptions = {}): Promise<KvEntry[]> {
    checkPrefix('prefix', prefix);
    const limit = options.limit ?? 1000;
    checkPositiveInteger('limit', limit);
    const namespace = this.keys.kvNamespace();
    const redisKeys = await this.scanAll(`${escapeGlob(namespace + prefix)}*`);
    redisKeys.sort();
    const found: KvEntry[] = [];
    // Fetch in slices; keys that expired between SCAN and MGET are simply skipped.
    for (let i = 0; i < redisKeys.length && found.length < limit; i += 500) {
      const slice = redisKeys.slice(i, i + 500);
      const values = await this.call(() => this.redis.mget(slice));
      slice.forEach((redisKey, j) => {
        const value = values[j];
        if (value !== null && value !== undefined && found.length < limit) found.push({ key: redisKey.slice(namespace.length), value });
      });
    }
    return found;
  }

  async acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    const now = Date.now();
    const taken = await this.script('leaseAcquire', [this.keys.lease(resource)], [owner, ttlMs]);
    return taken === 1 ? { resource, owner, expiresAt: now + ttlMs } : undefined;
  }

  async renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    return (await this.script('leaseRenew', [this.keys.lease(resource)], [owner, ttlMs])) === 1;
  }

  async releaseLease(resource: string, owner: string): Promise<boolean> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    return (await this.script('leaseRelease', [this.keys.lease(resource)], [owner])) === 1;
  }

  async getLease(resource: string): Promise<Lease | undefined> {
    checkKey('resource', resource);
    const key = this.keys.lease(resource);
    const now = Date.now();
    const replies = await this.call(() => this.redis.multi().get(key).pttl(key).exec());
    const owner = replies?.[0]?.[1] as string | null | undefined;
    const pttl = replies?.[1]?.[1] as number | undefined;
    if (!owner || pttl === undefined || pttl < 0) return undefined;
    return { resource, owner, expiresAt: now + pttl };
  }

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('inFlightTtlMs', options.inFlightTtlMs);
    const reply = (await this.script('idempotencyBegin', [this.keys.idempotency(appId, key)], [options.fingerprint ?? '', options.inFlightTtlMs])) as string[];
    switch (reply[0]) {
      case 'new':
        return 'new';
      case 'completed':
        return { state: 'completed', response: JSON.parse(reply[1] ?? 'null') as StoredResponse };
      case 'key-reused':
        return { state: 'key-reused' };
      default:
        return { state: 'in-flight' };
    }
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('ttlMs', ttlMs);
    checkStatusCode('response.statusCode', response.statusCode);
    await this.script('idempotencyComplete', [this.keys.idempotency(appId, key)], [JSON.stringify(response), ttlMs]);
  }

  async abandonIdempotent(appId: string, key: string): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    await this.script('idempotencyAbandon', [this.keys.idempotency(appId, key)], []);
  }

  async getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined> {
    checkKey('appId', appId);
    checkKey('key', key);
    const [state, response] = await this.call(() => this.redis.hmget(this.keys.idempotency(appId, key), 'state', 'response'));
    if (state === 'completed') return { state: 'completed', response: JSON.parse(response ?? 'null') as StoredResponse };
    if (state === 'in-flight') return { state: 'in-flight' };
    return undefined;
  }

  async hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision> {
    checkKey('appId', appId);
    checkPositiveInteger('limitPerSecond', limitPerSecond, MAX_LIMIT_PER_SECOND);
    const [allowed, retryAfterMs] = (await this.script('rateLimit', [this.keys.rateLimit(appId)], [limitPerSecond])) as [number, number];
    return { allowed: allowed === 1, retryAfterMs: Number(retryAfterMs) };
  }

  async incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    for (const [name, delta] of Object.entries(deltas)) {
      if (!(ORACLE_COUNTER_NAMES as readonly string[]).includes(name)) {
        throw new UhlpError('UHLP_STATE_INPUT_INVALID', `unknown oracle counter "${name}"`, { field: `deltas.${name}` });
      }
      checkCounterDelta(`deltas.${name}`, delta);
    }
    const key = this.keys.oracleCounters(appId, componentId);
    const replies = await this.call(() => {
      const multi = this.redis.multi();
      for (const name of ORACLE_COUNTER_NAMES) {
        const delta = deltas[name];
        if (delta) multi.hincrby(key, name, delta);
      }
      return multi.hgetall(key).exec();
    });
    const last = replies?.[replies.length - 1];
    if (!last || last[0]) throw toStateError(this.redis, last?.[0] ?? new Error('MULTI returned no reply'), 'a runtime-state command');
    return parseCounters(last[1] as Record<string, string>);
  }

  async getOracleCounters(appId: string, componentId: string): Promise<OracleCounters> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    return parseCounters(await this.call(() => this.redis.hgetall(this.keys.oracleCounters(appId, componentId))));
  }

  async resetOracleCounters(appId: string, componentId: string): Promise<void> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    await this.call(() => this.redis.del(this.keys.oracleCounters(appId, componentId)));
  }

  async addOracleSample(
    scope: OracleSampleScope,
    sample: OracleSampleInput,
    options: OracleSampleOptions,
  ): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }> {
    checkOracleSample(scope, sample, options);
    const key = this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision);
    const args = [sample.inputHash, sample.outputHash, sample.json, sample.fresh ? '1' : '0', options.limit, options.ttlMs, options.pick];
    const [outcome, seen, stored, repeats, unstable] = (await this.script('oracleSampleAdd', [key], args)) as [OracleSampleOutcome, number, number, number, number];
    return { outcome, stats: { seen: Number(seen), stored: Number(stored), repeats: Number(repeats), unstable: Number(unstable) } };
  }

  async getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }> {
    checkOracleScope(scope);
    const hash = await this.call(() => this.redis.hgetall(this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision)));
    const stats = { seen: Number(hash.seen ?? 0), stored: Number(hash.stored ?? 0), repeats: Number(hash.repeats ?? 0), unstable: Number(hash.unstable ?? 0) };
    const samples: string[] = [];
    for (let slot = 0; slot < stats.stored; slot++) {
      const json = hash[`s:${slot}`];
      if (json !== undefined) samples.push(json);
    }
    return { samples, stats };
  }

  async getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    const [version, json] = await this.call(() => this.redis.hmget(this.keys.oracleRecord(appId, componentId), 'v', 'json'));
    return version === null || version === undefined || typeof json !== 'string' ? undefined : { version: Number(version), json };
  }

  async putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    checkJsonText('json', json, MAX_ORACLE_RECORD_CHARS);
    checkNonNegativeInteger('expectedVersion', expectedVersion);
    const version = await this.script('oracleRecordPut', [this.keys.oracleRecord(appId, componentId)], [expectedVersion, json]);
    return version === null || version === undefined ? undefined : Number(version);
  }

  async addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    checkJsonText('json', json, MAX_ORACLE_CANDIDATE_CHARS);
    checkPositiveInteger('keep', keep, MAX_ORACLE_CANDIDATES);
    const key = this.keys.oracleCandidates(appId, componentId);
    const replies = await this.call(() => this.redis.multi().lpush(key, json).ltrim(key, 0, keep - 1).exec());
    const failed = replies?.find(([error]) => error);
    if (!replies || failed) throw toStateError(this.redis, failed?.[0] ?? new Error('MULTI returned no reply'), 'a runtime-state command');
  }

  async listOracleCandidates(appId: string, componentId: string): Promise<string[]> {
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    return this.call(() => this.redis.lrange(this.keys.oracleCandidates(appId, componentId), 0, -1));
  }

  async getLlmTokens(appId: string, day: string): Promise<number> {
    checkKey('appId', appId);
    checkDay('day', day);
    return Number((await this.call(() => this.redis.get(this.keys.llmTokens(appId, day)))) ?? 0);
  }

  async addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number> {
    checkKey('appId', appId);
    checkDay('day', day);
    checkNonNegativeInteger('tokens', tokens);
    checkTtl('ttlMs', ttlMs);
    return Number(await this.script('llmTokensAdd', [this.keys.llmTokens(appId, day)], [tokens, ttlMs]));
  }

  async getLlmCached(appId: string, key: string): Promise<string | undefined> {
    checkKey('appId', appId);
    checkKey('key', key);
    return (await this.call(() => this.redis.get(this.keys.llmCache(appId, key)))) ?? undefined;
  }

  async setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    if (typeof value !== 'string') throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'value must be a string', { field: 'value' });
    checkTtl('ttlMs', ttlMs);
    await this.call(() => this.redis.set(this.keys.llmCache(appId, key), value, 'PX', ttlMs));
  }

  async createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    checkKey('id', id);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    const created = await this.script('runCreate', [this.keys.run(id), this.keys.activeRuns()], [id, json, ttlMs, active ? 1 : 0, Date.now()]);
    return created === 1;
  }

  async getRun(id: string): Promise<StoredRun | undefined> {
    checkKey('id', id);
    const [version, json] = await this.call(() => this.redis.hmget(this.keys.run(id), 'version', 'json'));
    if (version === null || version === undefined || json === null || json === undefined) return undefined;
    return { json, version: Number(version) };
  }

  async updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    checkKey('id', id);
    checkPositiveInteger('expectedVersion', expectedVersion);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    const updated = await this.script('runUpdate', [this.keys.run(id), this.keys.activeRuns()], [id, expectedVersion, json, ttlMs, active ? 1 : 0, Date.now()]);
    return updated === 1;
  }

  async listActiveRuns(limit = 1000): Promise<string[]> {
    checkPositiveInteger('limit', limit);
    const set = this.keys.activeRuns();
    const ids = await this.call(() => this.redis.zrange(set, '0', String(limit - 1)));
    if (ids.length === 0) return [];
    const exists = await this.call(() => {
      const pipeline = this.redis.pipeline();
      for (const id of ids) pipeline.exists(this.keys.run(id));
      return pipeline.exec();
    });
    const live: string[] = [];
    const expired: string[] = [];
    ids.forEach((id, i) => ((exists?.[i]?.[1] as number) === 1 ? live : expired).push(id));
    // A run that expired while active leaves its id behind: it is dropped on the way.
    if (expired.length > 0) await this.call(() => this.redis.zrem(set, ...expired));
    return live;
  }

  async ping(): Promise<void> {
    await this.call(() => this.redis.ping());
  }

  async close(): Promise<void> {
    if (this.redis.status === 'end') return;
    try {
      await this.redis.quit();
    } catch {
      // QUIT cannot be sent while disconnected; dropping the socket is all that is left.
      this.redis.disconnect();
    }
  }

  /** Deletes every key under this store's prefix (tests and `uhlp` maintenance tools). */
  async deleteAllKeys(): Promise<number> {
    const found = await this.scanAll(this.keys.everything());
    let deleted = 0;
    for (let i = 0; i < found.length; i += 500) {
      const slice = found.slice(i, i + 500);
      deleted += await this.call(() => this.redis.unlink(...slice));
    }
    return deleted;
  }

  private async scanAll(match: string): Promise<string[]> {
    const found = new Set<string>();
    let cursor = '0';
    do {
      const [next, batch] = await this.call(() => this.redis.scan(cursor, 'MATCH', match, 'COUNT', 1000));
      cursor = next;
      for (const key of batch) found.add(key);
    } while (cursor !== '0');
    return [...found];
  }

  private script(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return runScript(this.redis, 'a runtime-state command', name, keys, args);
  }

  private call<T>(operation: () => Promise<T>): Promise<T> {
    return callRedis(this.redis, 'a runtime-state command', operation);
  }
}

function parseSession(hash: Record<string, string>): SessionRecord | undefined {
  if (!hash.id) return undefined;
  return {
    id: hash.id,
    appId: hash.appId ?? '',
    createdAt: Number(hash.createdAt),
    lastSeenAt: Number(hash.lastSeenAt),
    expiresAt: Number(hash.expiresAt),
    turns: Number(hash.turns ?? 0),
    data: JSON.parse(hash.data ?? '{}') as Record<string, unknown>,
  };
}

function parseCounters(hash: Record<string, string>): OracleCounters {
  const counters = { samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 };
  for (const name of ORACLE_COUNTER_NAMES) counters[name] = Number(hash[name] ?? 0);
  return counters;
}
