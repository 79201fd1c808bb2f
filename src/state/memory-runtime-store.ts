/**
 * The embedded runtime store: everything in one process's memory, for `uhlp dev`
 * and single-replica cores. It behaves like the Redis store (same shared test
 * suite); being single-threaded JavaScript, each method body is atomic as long as
 * it does not await, which none of them does.
 */
import { UhlpError } from '../shared/errors.js';
import { RuntimeKeys } from './runtime-keys.js';
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
import { decideGcra, MAX_LIMIT_PER_SECOND } from './rate-limit-gcra.js';
import type { FunctionStore } from '../functions/function-store.js';
import { MemoryFunctionStore } from '../functions/memory-function-store.js';

export interface MemoryRuntimeStoreOptions {
  /** Clock in epoch milliseconds; tests drive time with it. @defaultValue `Date.now` */
  now?: () => number;
  /** How often expired entries are swept out (they are also dropped when read). @defaultValue 60000 */
  sweepIntervalMs?: number;
}

interface Expiring<T> {
  value: T;
  /** Epoch ms; `Infinity` for no expiry. */
  expiresAt: number;
}

/** One component's reservoir: the held samples by slot, and which slot holds each held input. */
interface Reservoir {
  readonly slots: Array<{ inputHash: string; outputHash: string; json: string }>;
  readonly bySlotOf: Map<string, number>;
  readonly stats: OracleSampleStats;
}

type IdempotencyEntry = { state: 'in-flight'; fingerprint?: string } | { state: 'completed'; fingerprint?: string; response: StoredResponse };

export class MemoryRuntimeStore implements RuntimeStore {
  readonly kind = 'memory' as const;
  private readonly now: () => number;
  private readonly sessions = new Map<string, Expiring<SessionRecord>>();
  private readonly kv = new Map<string, Expiring<string>>();
  private readonly leases = new Map<string, Expiring<Lease>>();
  private readonly idempotency = new Map<string, Expiring<IdempotencyEntry>>();
  private readonly rates = new Map<string, Expiring<number>>();
  private readonly oracle = new Map<string, OracleCounters>();
  private readonly oracleSamples = new Map<string, Expiring<Reservoir>>();
  private readonly oracleRecords = new Map<string, { version: number; json: string }>();
  private readonly oracleCandidates = new Map<string, string[]>();
  private readonly llmTokens = new Map<string, Expiring<number>>();
  private readonly llmCache = new Map<string, Expiring<string>>();
  private readonly runs = new Map<string, Expiring<StoredRun>>();
  /** Active run ids, in the order they became active (a Map keeps insertion order). */
  private readonly activeRuns = new Map<string, true>();
  // Tuples become keys through the same builder Redis uses, so both agree on identity.
  private readonly keys = new RuntimeKeys('');
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;
  readonly functions: FunctionStore;

  constructor(options: MemoryRuntimeStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.functions = new MemoryFunctionStore(this.now, () => this.assertOpen());
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    this.assertOpen();
    checkKey('appId', input.appId);
    checkTtl('ttlMs', input.ttlMs);
    const id = input.id ?? newSessionId();
    assertSessionId(id, 'id');
    if (this.live(this.sessions, id)) {
      throw new UhlpError('UHLP_STATE_INPUT_INVALID', `session ${id} already exists`, { field: 'id' });
    }
    const now = this.now();
    const record: SessionRecord = {
      id,
      appId: input.appId,
      createdAt: now,
      lastSeenAt: now,
      expiresAt: now + input.ttlMs,
      turns: 0,
      data: structuredClone(input.data ?? {}),
    };
    this.sessions.set(id, { value: record, expiresAt: record.expiresAt });
    return structuredClone(record);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    this.assertOpen();
    checkKey('id', id);
    const entry = this.live(this.sessions, id);
    return entry ? structuredClone(entry.value) : undefined;
  }

  async touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined> {
    this.assertOpen();
    checkKey('id', id);
    checkTtl('ttlMs', ttlMs);
    const entry = this.live(this.sessions, id);
    if (!entry) return undefined;
    const now = this.now();
    entry.value.lastSeenAt = now;
    entry.value.expiresAt = now + ttlMs;
    entry.expiresAt = entry.value.expiresAt;
    return structuredClone(entry.value);
  }

  async nextTurn(id: string): Promise<number> {
    this.assertOpen();
    checkKey('id', id);
    const entry = this.live(this.sessions, id);
    if (!entry) throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${id} does not exist or has expired`, { sessionId: id });
    entry.value.turns += 1;
    return entry.value.turns;
  }

  async deleteSession(id: string): Promise<boolean> {
    this.assertOpen();
    checkKey('id', id);
    const existed = this.live(this.sessions, id) !== undefined;
    this.sessions.delete(id);
    return existed;
  }

  async kvGet(key: string): Promise<string | undefined> {
    this.assertOpen();
    checkKey('key', key);
    return this.live(this.kv, key)?.value;
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    this.assertOpen();
    checkKey('key', key);
    if (typeof value !== 'string') throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'value must be a string', { field: 'value' });
    if (options.ttlMs !== undefined) checkTtl('ttlMs', options.ttlMs);
    this.kv.set(key, { value, expiresAt: options.ttlMs === undefined ? Infinity : this.now() + options.ttlMs });
  }

  async kvDelete(key: string): Promise<boolean> {
    this.assertOpen();
    checkKey('key', key);
    const existed = this.live(this.kv, key) !== undefined;
    this.kv.delete(key);
    return existed;
  }

  async kvScan(prefix: string, options: KvScanOptions = {}): Promise<KvEntry[]> {
    this.assertOpen();
    checkPrefix('prefix', prefix);
    const limit = options.limit ?? 1000;
    checkPositiveInteger('limit', limit);
    const found: KvEntry[] = [];
    for (const key of this.kv.keys()) {
      if (!key.startsWith(prefix)) continue;
      const entry = this.live(this.kv, key);
      if (entry) found.push({ key, value: entry.value });
    }
    found.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return found.slice(0, limit);
  }

  async acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    this.assertOpen();
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    const held = this.live(this.leases, resource);
    if (held && held.value.owner !== owner) return undefined;
    const lease: Lease = { resource, owner, expiresAt: this.now() + ttlMs };
    this.leases.set(resource, { value: lease, expiresAt: lease.expiresAt });
    return { ...lease };
  }

  async renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean> {
    this.assertOpen();
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    const held = this.live(this.leases, resource);
    if (!held || held.value.owner !== owner) return false;
    held.value.expiresAt = this.now() + ttlMs;
    held.expiresAt = held.value.expiresAt;
    return true;
  }

  async releaseLease(resource: string, owner: string): Promise<boolean> {
    this.assertOpen();
    checkKey('resource', resource);
    checkKey('owner', owner);
    const held = this.live(this.leases, resource);
    if (!held || held.value.owner !== owner) return false;
    this.leases.delete(resource);
    return true;
  }

  async getLease(resource: string): Promise<Lease | undefined> {
    this.assertOpen();
    checkKey('resource', resource);
    const held = this.live(this.leases, resource);
    return held ? { ...held.value } : undefined;
  }

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('inFlightTtlMs', options.inFlightTtlMs);
    const id = this.keys.idempotency(appId, key);
    const entry = this.live(this.idempotency, id);
    if (!entry) {
      const value: IdempotencyEntry = { state: 'in-flight' };
      if (options.fingerprint !== undefined) value.fingerprint = options.fingerprint;
      this.idempotency.set(id, { value, expiresAt: this.now() + options.inFlightTtlMs });
      return 'new';
    }
    const stored = entry.value.fingerprint;
    if (stored !== undefined && options.fingerprint !== undefined && stored !== options.fingerprint) return { state: 'key-reused' };
    if (entry.value.state === 'completed') return { state: 'completed', response: structuredClone(entry.value.response) };
    return { state: 'in-flight' };
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('ttlMs', ttlMs);
    checkStatusCode('response.statusCode', response.statusCode);
    const id = this.keys.idempotency(appId, key);
    const fingerprint = this.live(this.idempotency, id)?.value.fingerprint;
    const value: IdempotencyEntry = { state: 'completed', response: structuredClone(response) };
    if (fingerprint !== undefined) value.fingerprint = fingerprint;
    this.idempotency.set(id, { value, expiresAt: this.now() + ttlMs });
  }

  async abandonIdempotent(appId: string, key: string): Promise<void> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    const id = this.keys.idempotency(appId, key);
    if (this.live(this.idempotency, id)?.value.state === 'in-flight') this.idempotency.delete(id);
  }

  async getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    const entry = this.live(this.idempotency, this.keys.idempotency(appId, key));
    if (!entry) return undefined;
    return entry.value.state === 'completed' ? { state: 'completed', response: structuredClone(entry.value.response) } : { state: 'in-flight' };
  }

  async hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision> {
    this.assertOpen();
    checkKey('appId', appId);
    checkPositiveInteger('limitPerSecond', limitPerSecond, MAX_LIMIT_PER_SECOND);
    const now = this.now();
    const decision = decideGcra(this.live(this.rates, appId)?.value, Math.round(now * 1000), limitPerSecond);
    if (decision.allowed) this.rates.set(appId, { value: decision.tatUs, expiresAt: now + decision.ttlMs });
    return { allowed: decision.allowed, retryAfterMs: decision.retryAfterMs };
  }

  async incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    for (const [name, delta] of Object.entries(deltas)) {
      if (!(ORACLE_COUNTER_NAMES as readonly string[]).includes(name)) {
        throw new UhlpError('UHLP_STATE_INPUT_INVALID', `unknown oracle counter "${name}"`, { field: `deltas.${name}` });
      }
      checkCounterDelta(`deltas.${name}`, delta);
    }
    const id = this.keys.oracleCounters(appId, componentId);
    const counters = this.oracle.get(id) ?? zeroCounters();
    for (const name of ORACLE_COUNTER_NAMES) counters[name] += deltas[name] ?? 0;
    this.oracle.set(id, counters);
    return { ...counters };
  }

  async getOracleCounters(appId: string, componentId: string): Promise<OracleCounters> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    return { ...(this.oracle.get(this.keys.oracleCounters(appId, componentId)) ?? zeroCounters()) };
  }

  async resetOracleCounters(appId: string, componentId: string): Promise<void> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    this.oracle.delete(this.keys.oracleCounters(appId, componentId));
  }

  async addOracleSample(
    scope: OracleSampleScope,
    sample: OracleSampleInput,
    options: OracleSampleOptions,
  ): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }> {
    this.assertOpen();
    checkOracleSample(scope, sample, options);
    const key = this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision);
    const reservoir = this.live(this.oracleSamples, key)?.value ?? { slots: [], bySlotOf: new Map(), stats: { seen: 0, stored: 0, repeats: 0, unstable: 0 } };
    this.oracleSamples.set(key, { value: reservoir, expiresAt: this.now() + options.ttlMs });
    const { stats } = reservoir;
    let outcome: OracleSampleOutcome;
    const held = reservoir.bySlotOf.get(sample.inputHash);
    if (held !== undefined) {
      outcome = 'repeat';
      if (sample.fresh) {
        stats.repeats += 1;
        if (reservoir.slots[held]!.outputHash !== sample.outputHash) {
          stats.unstable += 1;
          outcome = 'unstable';
        }
      }
    } else {
      stats.seen += 1;
      // Algorithm R: the n-th input replaces a held one with probability limit/n.
      let slot: number | undefined;
      if (stats.stored < options.limit) {
        slot = stats.stored;
        stats.stored += 1;
        outcome = 'added';
      } else {
        const draw = options.pick % stats.seen;
        slot = draw < options.limit ? draw : undefined;
        outcome = slot === undefined ? 'passed' : 'replaced';
        if (slot !== undefined) reservoir.bySlotOf.delete(reservoir.slots[slot]!.inputHash);
      }
      if (slot !== undefined) {
        reservoir.slots[slot] = { inputHash: sample.inputHash, outputHash: sample.outputHash, json: sample.json };
        reservoir.bySlotOf.set(sample.inputHash, slot);
      }
    }
    return { outcome, stats: { ...stats } };
  }

  async getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }> {
    this.assertOpen();
    checkOracleScope(scope);
    const reservoir = this.live(this.oracleSamples, this.keys.oracleSamples(scope.appId, scope.componentId, scope.revision))?.value;
    if (reservoir === undefined) return { samples: [], stats: { seen: 0, stored: 0, repeats: 0, unstable: 0 } };
    return { samples: reservoir.slots.map((slot) => slot.json), stats: { ...reservoir.stats } };
  }

  async getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    const record = this.oracleRecords.get(this.keys.oracleRecord(appId, componentId));
    return record === undefined ? undefined : { ...record };
  }

  async putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    checkJsonText('json', json, MAX_ORACLE_RECORD_CHARS);
    checkNonNegativeInteger('expectedVersion', expectedVersion);
    const key = this.keys.oracleRecord(appId, componentId);
    if ((this.oracleRecords.get(key)?.version ?? 0) !== expectedVersion) return undefined;
    this.oracleRecords.set(key, { version: expectedVersion + 1, json });
    return expectedVersion + 1;
  }

  async addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    checkJsonText('json', json, MAX_ORACLE_CANDIDATE_CHARS);
    checkPositiveInteger('keep', keep, MAX_ORACLE_CANDIDATES);
    const key = this.keys.oracleCandidates(appId, componentId);
    this.oracleCandidates.set(key, [json, ...(this.oracleCandidates.get(key) ?? [])].slice(0, keep));
  }

  async listOracleCandidates(appId: string, componentId: string): Promise<string[]> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('componentId', componentId);
    return [...(this.oracleCandidates.get(this.keys.oracleCandidates(appId, componentId)) ?? [])];
  }

  async getLlmTokens(appId: string, day: string): Promise<number> {
    this.assertOpen();
    checkKey('appId', appId);
    checkDay('day', day);
    return this.live(this.llmTokens, this.keys.llmTokens(appId, day))?.value ?? 0;
  }

  async addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number> {
    this.assertOpen();
    checkKey('appId', appId);
    checkDay('day', day);
    checkNonNegativeInteger('tokens', tokens);
    checkTtl('ttlMs', ttlMs);
    const id = this.keys.llmTokens(appId, day);
    const entry = this.live(this.llmTokens, id);
    if (entry) {
      entry.value += tokens;
      return entry.value;
    }
    this.llmTokens.set(id, { value: tokens, expiresAt: this.now() + ttlMs });
    return tokens;
  }

  async getLlmCached(appId: string, key: string): Promise<string | undefined> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    return this.live(this.llmCache, this.keys.llmCache(appId, key))?.value;
  }

  async setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void> {
    this.assertOpen();
    checkKey('appId', appId);
    checkKey('key', key);
    if (typeof value !== 'string') throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'value must be a string', { field: 'value' });
    checkTtl('ttlMs', ttlMs);
    this.llmCache.set(this.keys.llmCache(appId, key), { value, expiresAt: this.now() + ttlMs });
  }

  async createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    this.assertOpen();
    checkKey('id', id);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    if (this.live(this.runs, id)) return false;
    this.runs.set(id, { value: { json, version: 1 }, expiresAt: this.now() + ttlMs });
    this.markActive(id, active);
    return true;
  }

  async getRun(id: string): Promise<StoredRun | undefined> {
    this.assertOpen();
    checkKey('id', id);
    const entry = this.live(this.runs, id);
    return entry ? { ...entry.value } : undefined;
  }

  async updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    this.assertOpen();
    checkKey('id', id);
    checkPositiveInteger('expectedVersion', expectedVersion);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    const entry = this.live(this.runs, id);
    if (!entry || entry.value.version !== expectedVersion) return false;
    this.runs.set(id, { value: { json, version: expectedVersion + 1 }, expiresAt: this.now() + ttlMs });
    this.markActive(id, active);
    return true;
  }

  async listActiveRuns(limit = 1000): Promise<string[]> {
    this.assertOpen();
    checkPositiveInteger('limit', limit);
    const ids: string[] = [];
    for (const id of [...this.activeRuns.keys()]) {
      if (!this.live(this.runs, id)) {
        this.activeRuns.delete(id);
        continue;
      }
      ids.push(id);
      if (ids.length >= limit) break;
    }
    return ids;
  }

  private markActive(id: string, active: boolean): void {
    if (!active) this.activeRuns.delete(id);
    else if (!this.activeRuns.has(id)) this.activeRuns.set(id, true);
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
  }

  private assertOpen(): void {
    if (this.closed) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'the runtime store is closed');
  }

  /** The entry when present and not expired; drops it when expired. */
  private live<T>(map: Map<string, Expiring<T>>, key: string): Expiring<T> | undefined {
    const entry = map.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      map.delete(key);
      return undefined;
    }
    return entry;
  }

  private sweep(): void {
    const now = this.now();
    for (const map of [this.sessions, this.kv, this.leases, this.idempotency, this.rates, this.llmTokens, this.llmCache, this.runs, this.oracleSamples] as Map<string, Expiring<unknown>>[]) {
      for (const [key, entry] of map) if (entry.expiresAt <= now) map.delete(key);
    }
  }
}

function zeroCounters(): OracleCounters {
  return { samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 };
}
