import type { FunctionStore } from '../functions/function-store.js';

/**
 * The runtime state of a core: sessions, kv, sandbox leases, idempotency records,
 * per-app rate-limit counters, the optimization oracle's counters, the LLM
 * layer's daily token counts and answer cache, and workflow run records. Two
 * implementations pass one shared test suite: `MemoryRuntimeStore` (the embedded
 * default) and `RedisRuntimeStore` (production, shared by every core replica).
 *
 * Every method may reject with `UHLP_STATE_UNAVAILABLE` (503) when the backing
 * service is down, and with `UHLP_STATE_INPUT_INVALID` (400) for a bad argument.
 * Times are epoch milliseconds; TTLs are positive integer milliseconds.
 */

export interface SessionRecord {
  id: string;
  appId: string;
  createdAt: number;
  lastSeenAt: number;
  /** When the session expires unless touched again. */
  expiresAt: number;
  /** Turns taken so far; `nextTurn` returns 1 for the first turn. */
  turns: number;
  /** Free JSON data the caller attached at creation. */
  data: Record<string, unknown>;
}

export interface CreateSessionInput {
  appId: string;
  ttlMs: number;
  /** The id to use; a fresh `SES-...` id when omitted. */
  id?: string;
  data?: Record<string, unknown>;
}

export interface KvEntry {
  key: string;
  value: string;
}

export interface KvSetOptions {
  /** Expire the key after this many milliseconds. @defaultValue no expiry */
  ttlMs?: number;
}

export interface KvScanOptions {
  /** Return at most this many entries (sorted by key). @defaultValue 1000 */
  limit?: number;
}

export interface Lease {
  resource: string;
  owner: string;
  expiresAt: number;
}

/** What an HTTP answer needs to be replayed for a repeated Idempotency-Key. */
export interface StoredResponse {
  statusCode: number;
  headers: Record<string, string>;
  body: string;
}

export interface BeginIdempotentOptions {
  /**
   * How long the in-flight marker lives if `complete`/`abandon` never comes (a
   * crashed core); after it a repeat runs again.
   */
  inFlightTtlMs: number;
  /**
   * A digest of the request (method, path, body). A repeat with another
   * fingerprint is answered `key-reused`. @defaultValue no check
   */
  fingerprint?: string;
}

export type IdempotencyBegin =
  | 'new'
  | { state: 'in-flight' }
  | { state: 'completed'; response: StoredResponse }
  | { state: 'key-reused' };

export type IdempotencyRecord = { state: 'in-flight' } | { state: 'completed'; response: StoredResponse };

export interface RateLimitDecision {
  allowed: boolean;
  /** 0 when allowed; otherwise the wait after which a hit would be allowed. */
  retryAfterMs: number;
}

/**
 * Counters the optimization oracle keeps per (app, component), never reset by
 * the oracle: it reads a stage's share as the difference from the stage's start.
 * `samples`: LLM answers sampled; `hits`: requests the generated code answered;
 * `agreements`/`disagreements`: live comparisons of code and LLM; `declines`:
 * inputs the code declined; `tokensSaved`: LLM tokens the code's answers saved.
 */
export const ORACLE_COUNTER_NAMES = ['samples', 'hits', 'agreements', 'disagreements', 'declines', 'tokensSaved'] as const;
export type OracleCounterName = (typeof ORACLE_COUNTER_NAMES)[number];
export type OracleCounters = Record<OracleCounterName, number>;

/** A workflow run record as the store keeps it: JSON text (src/workflow-runs/run-record.ts owns its shape) and its version. */
export interface StoredRun {
  readonly json: string;
  /** 1 when created; each update adds one. */
  readonly version: number;
}

/** Longest sample, record and candidate (JSON text) the stores take. */
export const MAX_ORACLE_SAMPLE_CHARS = 64 * 1024;
export const MAX_ORACLE_RECORD_CHARS = 64 * 1024;
export const MAX_ORACLE_CANDIDATE_CHARS = 512 * 1024;
/** Largest reservoir, and most candidates kept, per component. */
export const MAX_ORACLE_SAMPLES = 10_000;
export const MAX_ORACLE_CANDIDATES = 100;

/** Where one LLM component's samples live: its app, its id, and the revision of its llm definition. */
export interface OracleSampleScope {
  readonly appId: string;
  readonly componentId: string;
  /** A hash of what the component's answers depend on (its llm block and the files it names). */
  readonly revision: string;
}

/** One (inputs, output) sample as the oracle hands it to the store. */
export interface OracleSampleInput {
  /** Hash of the sample's canonical inputs (hex): the same inputs have the same hash. */
  readonly inputHash: string;
  /** Hash of the canonical output (hex). */
  readonly outputHash: string;
  /** The whole sample as JSON text, at most MAX_ORACLE_SAMPLE_CHARS. */
  readonly json: string;
  /** A fresh answer (not one from the answer cache): only those tell whether outputs are stable. */
  readonly fresh: boolean;
}

export interface OracleSampleOptions {
  /** Samples held at most (the reservoir's size), 1 - MAX_ORACLE_SAMPLES. */
  readonly limit: number;
  /** The scope's samples expire this long after the last one came. */
  readonly ttlMs: number;
  /** A random non-negative integer: the reservoir's draw (the caller's, so the stores agree and tests can fix it). */
  readonly pick: number;
}

export interface OracleSampleStats {
  /** Distinct inputs seen (first sightings, held or not). */
  seen: number;
  /** Samples held, at most the limit. */
  stored: number;
  /** Fresh answers to an input whose sample is held. */
  repeats: number;
  /** Of those, answers whose output differed from the held sample's. */
  unstable: number;
}

/**
 * What became of a sample: `added` (the reservoir had room), `replaced` (it
 * took a held sample's place), `passed` (a new input the reservoir did not
 * take), `repeat` (a held input answered the same, or answered from the
 * cache), `unstable` (a held input answered differently).
 */
export type OracleSampleOutcome = 'added' | 'replaced' | 'passed' | 'repeat' | 'unstable';

export interface RuntimeStore {
  /** Which implementation, for logs and /readyz: `memory` or `redis`. */
  readonly kind: 'memory' | 'redis';

  createSession(input: CreateSessionInput): Promise<SessionRecord>;
  getSession(id: string): Promise<SessionRecord | undefined>;
  /** Marks the session seen now and extends its life to `ttlMs` from now; undefined when gone. */
  touchSession(id: string, ttlMs: number): Promise<SessionRecord | undefined>;
  /** Atomically counts one more turn; throws `UHLP_SESSION_NOT_FOUND` when the session is gone. */
  nextTurn(id: string): Promise<number>;
  deleteSession(id: string): Promise<boolean>;

  kvGet(key: string): Promise<string | undefined>;
  kvSet(key: string, value: string, options?: KvSetOptions): Promise<void>;
  kvDelete(key: string): Promise<boolean>;
  /** Entries whose key starts with `prefix`, sorted by key. */
  kvScan(prefix: string, options?: KvScanOptions): Promise<KvEntry[]>;

  /** Takes the lease when free or already held by `owner` (then it is renewed); undefined when held by another. */
  acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends a lease `owner` holds; false when it expired or another owner holds it. */
  renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Drops a lease `owner` holds; false when it did not hold it. */
  releaseLease(resource: string, owner: string): Promise<boolean>;
  getLease(resource: string): Promise<Lease | undefined>;

  /** Claims an idempotency key of an app, or reports what already holds it. */
  beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin>;
  /** Stores the response of a claimed key for `ttlMs`; repeats within it get this response. */
  completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void>;
  /** Frees an in-flight key (the request failed in a way worth retrying); a completed record stays. */
  abandonIdempotent(appId: string, key: string): Promise<void>;
  getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined>;

  /**
   * Counts one request of an app against `limitPerSecond`: a token bucket (GCRA)
   * that lets up to `limitPerSecond` requests through at once and refills at
   * `limitPerSecond` per second. Denied hits are not counted.
   */
  hitRateLimit(appId: string, limitPerSecond: number): Promise<RateLimitDecision>;

  /** Adds the deltas atomically and returns all counters after the update. */
  incrOracleCounters(appId: string, componentId: string, deltas: Partial<OracleCounters>): Promise<OracleCounters>;
  getOracleCounters(appId: string, componentId: string): Promise<OracleCounters>;
  resetOracleCounters(appId: string, componentId: string): Promise<void>;

  /**
   * Offers one sample to a component's reservoir, atomically: a held input's
   * repeat is compared with it (stability), a new input is kept with the
   * reservoir's odds (every input seen has the same chance to be held).
   */
  addOracleSample(scope: OracleSampleScope, sample: OracleSampleInput, options: OracleSampleOptions): Promise<{ outcome: OracleSampleOutcome; stats: OracleSampleStats }>;
  /** The held samples (JSON texts, in slot order) and the stats of a scope. */
  getOracleSamples(scope: OracleSampleScope): Promise<{ samples: string[]; stats: OracleSampleStats }>;
  /** The oracle's record of a component (JSON text) and its version; undefined when none. */
  getOracleRecord(appId: string, componentId: string): Promise<{ version: number; json: string } | undefined>;
  /**
   * Writes the record if its version is still `expectedVersion` (0: no record
   * yet) and returns the new version; undefined when another writer came first.
   */
  putOracleRecord(appId: string, componentId: string, json: string, expectedVersion: number): Promise<number | undefined>;
  /** Keeps a candidate (JSON text) of a component, newest first, at most `keep` of them. */
  addOracleCandidate(appId: string, componentId: string, json: string, keep: number): Promise<void>;
  /** The kept candidates of a component, newest first. */
  listOracleCandidates(appId: string, componentId: string): Promise<string[]>;

  /** Tokens (prompt and completion) an app has spent on one UTC day (`YYYY-MM-DD`); 0 when none. */
  getLlmTokens(appId: string, day: string): Promise<number>;
  /**
   * Adds `tokens` to the app's count of `day` atomically and returns the new
   * count. The count expires `ttlMs` after its first tokens (the caller sets it
   * past the day's end), so old days clean themselves up.
   */
  addLlmTokens(appId: string, day: string, tokens: number, ttlMs: number): Promise<number>;
  /** A cached LLM answer of an app by its request hash (the caller's JSON text); undefined when absent or expired. */
  getLlmCached(appId: string, key: string): Promise<string | undefined>;
  /** Stores an LLM answer of an app for `ttlMs`, replacing any earlier one. */
  setLlmCached(appId: string, key: string, value: string, ttlMs: number): Promise<void>;

  /** cs-js bundles, function versions, aliases and activation logs (function-store.ts). */
  readonly functions: FunctionStore;
  /**
   * Stores a new workflow run record for `ttlMs`; false when a run of that id
   * exists. `active` lists it among the runs a starting core resumes.
   */
  createRun(id: string, json: string, ttlMs: number, active: boolean): Promise<boolean>;
  getRun(id: string): Promise<StoredRun | undefined>;
  /**
   * Replaces a run record if its version is still `expectedVersion` (the new
   * one is `expectedVersion + 1`), atomically, and sets its TTL and whether it
   * is active; false when it changed meanwhile or is gone.
   */
  updateRun(id: string, expectedVersion: number, json: string, ttlMs: number, active: boolean): Promise<boolean>;
  /** Ids of active runs, oldest first, at most `limit` (default 1000); runs that expired are left out. */
  listActiveRuns(limit?: number): Promise<string[]>;

  /** Resolves when the store answers; rejects with `UHLP_STATE_UNAVAILABLE` otherwise. For /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
