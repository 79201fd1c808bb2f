/**
 * The one validating wrapper of the runtime store: every argument check both
 * implementations share runs here, in front of them, so that memory and Redis
 * refuse the same input with the same code (`UHLP_STATE_INPUT_INVALID` naming
 * the field, `UHLP_SESSION_ID_INVALID` for a session id) and each
 * implementation only stores. `MemoryRuntimeStore` and `RedisRuntimeStore` are
 * both `CheckedStores`: they hand out their concerns through `withInputChecks`,
 * and nothing reaches an implementation unchecked.
 */
import type { FunctionRef } from '../functions/function-ref.js';
import type { FunctionStore, FunctionVersion, PublishedVersion, RefChangeListener, RefWatch } from '../functions/function-store.js';
import { UhlpError } from '../shared/errors.js';
import type { BeginIdempotentOptions, IdempotencyBegin, IdempotencyRecord, IdempotencyStore, IdempotentClaim, StoredResponse } from './idempotency-store.js';
import { DEFAULT_KV_SCAN_LIMIT, type KvEntry, type KvScanOptions, type KvSetOptions, type KvStore } from './kv-store.js';
import { MAX_FLOW_PRIORITY, type EnterGateOptions, type FlowGate, type FlowStore, type GateEntry, type WaitingGate } from './flow-store.js';
import type { Lease, LeaseStore } from './lease-store.js';
import type { LlmStore } from './llm-store.js';
import {
  MAX_ORACLE_CANDIDATE_CHARS,
  MAX_ORACLE_CANDIDATES,
  MAX_ORACLE_RECORD_CHARS,
  ORACLE_COUNTER_NAMES,
  type OracleCounters,
  type OracleSampleInput,
  type OracleSampleOptions,
  type OracleSampleOutcome,
  type OracleSampleScope,
  type OracleSampleStats,
  type OracleStore,
} from './oracle-store.js';
import { MAX_LIMIT_PER_SECOND } from './rate-limit-gcra.js';
import type { RateLimitDecision, RateLimitStore } from './rate-limit-store.js';
import { DEFAULT_ACTIVE_RUNS_LIMIT, type RunStore, type StoredRun } from './run-store.js';
import type { RuntimeStores } from './runtime-store.js';
import {
  checkCounterDelta,
  checkDay,
  checkJsonText,
  checkKey,
  checkNonNegativeInteger,
  checkOracleSample,
  checkOracleScope,
  checkPositiveInteger,
  checkPrefix,
  checkRunJson,
  checkStatusCode,
  checkString,
  checkTtl,
} from './runtime-store-input.js';
import { assertSessionId } from './session-id.js';
import type { CreateSessionInput, SessionRecord, SessionStore } from './session-store.js';

/**
 * What both runtime stores are made of: each concern's store, behind the checks.
 * The interface of the same name gives the class its concern fields, which the
 * constructor sets from `withInputChecks`, so the list of concerns is written
 * once (RuntimeStores).
 */
export interface CheckedStores extends RuntimeStores {}

export abstract class CheckedStores {
  protected constructor(stores: RuntimeStores) {
    Object.assign(this, withInputChecks(stores));
  }
}

/** The same stores, each behind the checks of its arguments. */
export function withInputChecks(stores: RuntimeStores): RuntimeStores {
  return {
    sessions: new CheckedSessionStore(stores.sessions),
    kv: new CheckedKvStore(stores.kv),
    leases: new CheckedLeaseStore(stores.leases),
    idempotency: new CheckedIdempotencyStore(stores.idempotency),
    rateLimits: new CheckedRateLimitStore(stores.rateLimits),
    oracle: new CheckedOracleStore(stores.oracle),
    llm: new CheckedLlmStore(stores.llm),
    runs: new CheckedRunStore(stores.runs),
    flows: new CheckedFlowStore(stores.flows),
    functions: new CheckedFunctionStore(stores.functions),
  };
}

class CheckedSessionStore implements SessionStore {
  constructor(private readonly inner: SessionStore) {}

  async createSession(input: CreateSessionInput): Promise<SessionRecord> {
    checkKey('appId', input.appId);
    checkTtl('ttlMs', input.ttlMs);
    // Ids become paths (tmp/<sid>/, output/<sid>/): only a well-formed one is stored.
    if (input.id !== undefined) assertSessionId(input.id, 'id');
    return this.inner.createSession(input);
  }

  async getSession(id: string): Promise<SessionRecord | undefined> {
    checkKey('id', id);
    return this.inner.getSession(id);
  }

  async touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined> {
    checkKey('id', id);
    checkTtl('ttlMs', ttlMs);
    return this.inner.touchSession(id, ttlMs);
  }

  async nextTurn(id: string): Promise<number> {
    checkKey('id', id);
    return this.inner.nextTurn(id);
  }

  async deleteSession(id: string): Promise<boolean> {
    checkKey('id', id);
    return this.inner.deleteSession(id);
  }
}

class CheckedKvStore implements KvStore {
  constructor(private readonly inner: KvStore) {}

  async kvGet(key: string): Promise<string | undefined> {
    checkKey('key', key);
    return this.inner.kvGet(key);
  }

  async kvSet(key: string, value: string, options: KvSetOptions = {}): Promise<void> {
    checkKey('key', key);
    checkString('value', value);
    if (options.ttlMs !== undefined) checkTtl('ttlMs', options.ttlMs);
    return this.inner.kvSet(key, value, options);
  }

  async kvDelete(key: string): Promise<boolean> {
    checkKey('key', key);
    return this.inner.kvDelete(key);
  }

  async kvScan(prefix: string, options: KvScanOptions = {}): Promise<KvEntry[]> {
    checkPrefix('prefix', prefix);
    const limit = options.limit ?? DEFAULT_KV_SCAN_LIMIT;
    checkPositiveInteger('limit', limit);
    return this.inner.kvScan(prefix, { limit });
  }
}

class CheckedLeaseStore implements LeaseStore {
  constructor(private readonly inner: LeaseStore) {}

  async acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    return this.inner.acquireLease(resource, owner, ttlMs);
  }

  async renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    checkTtl('ttlMs', ttlMs);
    return this.inner.renewLease(resource, owner, ttlMs);
  }

  async releaseLease(resource: string, owner: string): Promise<boolean> {
    checkKey('resource', resource);
    checkKey('owner', owner);
    return this.inner.releaseLease(resource, owner);
  }

  async getLease(resource: string): Promise<Lease | undefined> {
    checkKey('resource', resource);
    return this.inner.getLease(resource);
  }
}

class CheckedIdempotencyStore implements IdempotencyStore {
  constructor(private readonly inner: IdempotencyStore) {}

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('inFlightTtlMs', options.inFlightTtlMs);
    return this.inner.beginIdempotent(appId, key, options);
  }

  async beginIdempotentMany(appId: string, claims: readonly IdempotentClaim[]): Promise<IdempotencyBegin[]> {
    checkKey('appId', appId);
    for (const claim of claims) {
      checkKey('key', claim.key);
      checkTtl('inFlightTtlMs', claim.inFlightTtlMs);
    }
    return this.inner.beginIdempotentMany(appId, claims);
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    checkTtl('ttlMs', ttlMs);
    checkStatusCode('response.statusCode', response.statusCode);
    return this.inner.completeIdempotent(appId, key, response, ttlMs);
  }

  async abandonIdempotent(appId: string, key: string): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    return this.inner.abandonIdempotent(appId, key);
  }

  async getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined> {
    checkKey('appId', appId);
    checkKey('key', key);
    return this.inner.getIdempotent(appId, key);
  }
}

class CheckedRateLimitStore implements RateLimitStore {
  constructor(private readonly inner: RateLimitStore) {}

  async hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision> {
    checkKey('appId', appId);
    checkPositiveInteger('limitPerSecond', limitPerSecond, MAX_LIMIT_PER_SECOND);
    return this.inner.hitRateLimit(appId, limitPerSecond);
  }
}

class CheckedFlowStore implements FlowStore {
  constructor(private readonly inner: FlowStore) {}

  async enterGate(gate: FlowGate, holder: string, options: EnterGateOptions): Promise<GateEntry> {
    checkGate(gate);
    checkKey('holder', holder);
    checkPositiveInteger('limit', options?.limit, 1_000_000);
    checkTtl('holdMs', options.holdMs);
    checkTtl('waitTtlMs', options.waitTtlMs);
    if (!Number.isSafeInteger(options.priority) || Math.abs(options.priority) > MAX_FLOW_PRIORITY) {
      throw new UhlpError('UHLP_STATE_INPUT_INVALID', `priority must be an integer within ±${MAX_FLOW_PRIORITY}, got ${String(options.priority)}`, { field: 'priority' });
    }
    return this.inner.enterGate(gate, holder, options);
  }

  async renewGate(gate: FlowGate, holder: string, holdMs: number): Promise<boolean> {
    checkGate(gate);
    checkKey('holder', holder);
    checkTtl('holdMs', holdMs);
    return this.inner.renewGate(gate, holder, holdMs);
  }

  async leaveGate(gate: FlowGate, holder: string): Promise<void> {
    checkGate(gate);
    checkKey('holder', holder);
    return this.inner.leaveGate(gate, holder);
  }

  async markLatest(gate: FlowGate, holder: string, ttlMs: number): Promise<void> {
    checkGate(gate);
    checkKey('holder', holder);
    checkTtl('ttlMs', ttlMs);
    return this.inner.markLatest(gate, holder, ttlMs);
  }

  async latest(gate: FlowGate): Promise<string | undefined> {
    checkGate(gate);
    return this.inner.latest(gate);
  }

  async waitingGates(app?: string, limit?: number): Promise<WaitingGate[]> {
    if (app !== undefined) checkKey('app', app);
    if (limit !== undefined) checkPositiveInteger('limit', limit, 10_000);
    return this.inner.waitingGates(app, limit);
  }
}

function checkGate(gate: FlowGate): void {
  checkKey('gate.app', gate?.app);
  checkKey('gate.scope', gate.scope);
  if (gate.kind !== 'concurrency' && gate.kind !== 'throttle' && gate.kind !== 'debounce') {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'gate.kind must be concurrency, throttle or debounce', { field: 'gate.kind' });
  }
  checkPrefix('gate.key', gate.key);
}

class CheckedOracleStore implements OracleStore {
  constructor(private readonly inner: OracleStore) {}

  async incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters> {
    checkComponent(appId, componentId);
    for (const [name, delta] of Object.entries(deltas)) {
      if (!(ORACLE_COUNTER_NAMES as readonly string[]).includes(name)) {
        throw new UhlpError('UHLP_STATE_INPUT_INVALID', `unknown oracle counter "${name}"`, { field: `deltas.${name}` });
      }
      checkCounterDelta(`deltas.${name}`, delta);
    }
    return this.inner.incrOracleCounters(appId, componentId, deltas);
  }

  async getOracleCounters(appId: string, componentId: string): Promise<OracleCounters> {
    checkComponent(appId, componentId);
    return this.inner.getOracleCounters(appId, componentId);
  }

  async resetOracleCounters(appId: string, componentId: string): Promise<void> {
    checkComponent(appId, componentId);
    return this.inner.resetOracleCounters(appId, componentId);
  }

  async addOracleSample(
    scope: OracleSampleScope,
    sample: OracleSampleInput,
    options: OracleSampleOptions,
  ): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }> {
    checkOracleSample(scope, sample, options);
    return this.inner.addOracleSample(scope, sample, options);
  }

  async getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }> {
    checkOracleScope(scope);
    return this.inner.getOracleSamples(scope);
  }

  async getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined> {
    checkComponent(appId, componentId);
    return this.inner.getOracleRecord(appId, componentId);
  }

  async putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined> {
    checkComponent(appId, componentId);
    checkJsonText('json', json, MAX_ORACLE_RECORD_CHARS);
    checkNonNegativeInteger('expectedVersion', expectedVersion);
    return this.inner.putOracleRecord(appId, componentId, json, expectedVersion);
  }

  async addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void> {
    checkComponent(appId, componentId);
    checkJsonText('json', json, MAX_ORACLE_CANDIDATE_CHARS);
    checkPositiveInteger('keep', keep, MAX_ORACLE_CANDIDATES);
    return this.inner.addOracleCandidate(appId, componentId, json, keep);
  }

  async listOracleCandidates(appId: string, componentId: string): Promise<string[]> {
    checkComponent(appId, componentId);
    return this.inner.listOracleCandidates(appId, componentId);
  }
}

class CheckedLlmStore implements LlmStore {
  constructor(private readonly inner: LlmStore) {}

  async getLlmTokens(appId: string, day: string): Promise<number> {
    checkKey('appId', appId);
    checkDay('day', day);
    return this.inner.getLlmTokens(appId, day);
  }

  async addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number> {
    checkKey('appId', appId);
    checkDay('day', day);
    checkNonNegativeInteger('tokens', tokens);
    checkTtl('ttlMs', ttlMs);
    return this.inner.addLlmTokens(appId, day, tokens, ttlMs);
  }

  async getLlmCached(appId: string, key: string): Promise<string | undefined> {
    checkKey('appId', appId);
    checkKey('key', key);
    return this.inner.getLlmCached(appId, key);
  }

  async setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void> {
    checkKey('appId', appId);
    checkKey('key', key);
    checkString('value', value);
    checkTtl('ttlMs', ttlMs);
    return this.inner.setLlmCached(appId, key, value, ttlMs);
  }
}

class CheckedRunStore implements RunStore {
  constructor(private readonly inner: RunStore) {}

  async createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    checkKey('id', id);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    return this.inner.createRun(id, json, ttlMs, active);
  }

  async getRun(id: string): Promise<StoredRun | undefined> {
    checkKey('id', id);
    return this.inner.getRun(id);
  }

  async updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean> {
    checkKey('id', id);
    checkPositiveInteger('expectedVersion', expectedVersion);
    checkRunJson(json);
    checkTtl('ttlMs', ttlMs);
    return this.inner.updateRun(id, expectedVersion, json, ttlMs, active);
  }

  async markRunCancel(id: string, ttlMs: number): Promise<void> {
    checkKey('id', id);
    checkTtl('ttlMs', ttlMs);
    return this.inner.markRunCancel(id, ttlMs);
  }

  async runCancelMarked(id: string): Promise<boolean> {
    checkKey('id', id);
    return this.inner.runCancelMarked(id);
  }

  async listActiveRuns(limit = DEFAULT_ACTIVE_RUNS_LIMIT): Promise<string[]> {
    checkPositiveInteger('limit', limit);
    return this.inner.listActiveRuns(limit);
  }

  async joinSessionQueue(sessionId: string, ticket: string, max: number, ttlMs: number): Promise<number> {
    checkKey('sessionId', sessionId);
    checkKey('ticket', ticket);
    checkPositiveInteger('max', max);
    checkTtl('ttlMs', ttlMs);
    return this.inner.joinSessionQueue(sessionId, ticket, max, ttlMs);
  }

  async sessionQueueHead(sessionId: string, ticket: string, ttlMs: number): Promise<boolean | undefined> {
    checkKey('sessionId', sessionId);
    checkKey('ticket', ticket);
    checkTtl('ttlMs', ttlMs);
    return this.inner.sessionQueueHead(sessionId, ticket, ttlMs);
  }

  async leaveSessionQueue(sessionId: string, ticket: string): Promise<void> {
    checkKey('sessionId', sessionId);
    checkKey('ticket', ticket);
    return this.inner.leaveSessionQueue(sessionId, ticket);
  }
}

class CheckedFunctionStore implements FunctionStore {
  constructor(private readonly inner: FunctionStore) {}

  async putBundle(tenant: string, sha256: string, bytes: Uint8Array): Promise<void> {
    checkKey('tenant', tenant);
    checkKey('sha256', sha256);
    return this.inner.putBundle(tenant, sha256, bytes);
  }

  async getBundle(tenant: string, sha256: string): Promise<Buffer | undefined> {
    checkKey('tenant', tenant);
    checkKey('sha256', sha256);
    return this.inner.getBundle(tenant, sha256);
  }

  async publishVersion(tenant: string, namespace: string, fn: string, sha256: string): Promise<PublishedVersion> {
    checkFunction(tenant, namespace, fn);
    checkKey('sha256', sha256);
    return this.inner.publishVersion(tenant, namespace, fn, sha256);
  }

  async listVersions(tenant: string, namespace: string, fn: string): Promise<FunctionVersion[]> {
    checkFunction(tenant, namespace, fn);
    return this.inner.listVersions(tenant, namespace, fn);
  }

  async setAlias(tenant: string, namespace: string, fn: string, alias: string, version: number): Promise<void> {
    checkFunction(tenant, namespace, fn);
    checkKey('alias', alias);
    return this.inner.setAlias(tenant, namespace, fn, alias, version);
  }

  async listAliases(tenant: string, namespace: string, fn: string): Promise<Record<string, number>> {
    checkFunction(tenant, namespace, fn);
    return this.inner.listAliases(tenant, namespace, fn);
  }

  async resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined> {
    checkFunction(tenant, namespace, fn);
    return this.inner.resolve(tenant, namespace, fn, ref);
  }

  async appendLogs(activationId: string, chunk: string, ttlMs: number): Promise<void> {
    checkKey('activationId', activationId);
    checkTtl('ttlMs', ttlMs);
    return this.inner.appendLogs(activationId, chunk, ttlMs);
  }

  async readLogs(activationId: string): Promise<string[] | undefined> {
    checkKey('activationId', activationId);
    return this.inner.readLogs(activationId);
  }

  watchRefs(listener: RefChangeListener): RefWatch {
    return this.inner.watchRefs(listener);
  }
}

function checkComponent(appId: string, componentId: string): void {
  checkKey('appId', appId);
  checkKey('componentId', componentId);
}

function checkFunction(tenant: string, namespace: string, fn: string): void {
  checkKey('tenant', tenant);
  checkKey('namespace', namespace);
  checkKey('function', fn);
}
