/**
 * Idempotency records: the first request with an app's Idempotency-Key claims
 * it, its answer is kept for a while, and repeats get that answer
 * (src/turns/idempotency.ts).
 */
import { checkKey, checkStatusCode, checkTtl } from './runtime-store-input.js';

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

/** One claim of `beginIdempotentMany`. */
export interface IdempotentClaim extends BeginIdempotentOptions {
  readonly key: string;
}

export interface IdempotencyStore {
  /** Claims an idempotency key of an app, or reports what already holds it. */
  beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin>;
  /**
   * Claims several keys of an app in one step, each as `beginIdempotent` claims
   * it (with its own fingerprint and in-flight ttl); the answers in order.
   */
  beginIdempotentMany(appId: string, claims: readonly IdempotentClaim[]): Promise<IdempotencyBegin[]>;
  /** Stores the response of a claimed key for `ttlMs`; repeats within it get this response. */
  completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void>;
  /** Frees an in-flight key (the request failed in a way worth retrying); a completed record stays. */
  abandonIdempotent(appId: string, key: string): Promise<void>;
  getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined>;
}

/**
 * A once-only answer its source keeps itself instead of storing it at once: a
 * delivery settles it with the message's acknowledgement, in the same group
 * commit (DeliveryStore.ack, src/sources/ack-batch.ts). It completes the record
 * exactly as `completeIdempotent(appId, key, response, ttlMs)` does.
 */
export interface KeptAnswer {
  readonly appId: string;
  readonly key: string;
  readonly response: StoredResponse;
  readonly ttlMs: number;
}

/** The validating wrapper's checks of `completeIdempotent`, for a kept answer that does not pass through it. */
export function checkKeptAnswer(answer: KeptAnswer): void {
  checkKey('appId', answer.appId);
  checkKey('key', answer.key);
  checkTtl('ttlMs', answer.ttlMs);
  checkStatusCode('response.statusCode', answer.response.statusCode);
}
