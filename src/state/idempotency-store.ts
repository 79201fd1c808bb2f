/**
 * Idempotency records: the first request with an app's Idempotency-Key claims
 * it, its answer is kept for a while, and repeats get that answer
 * (src/turns/idempotency.ts).
 */

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

export interface IdempotencyStore {
  /** Claims an idempotency key of an app, or reports what already holds it. */
  beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin>;
  /** Stores the response of a claimed key for `ttlMs`; repeats within it get this response. */
  completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void>;
  /** Frees an in-flight key (the request failed in a way worth retrying); a completed record stays. */
  abandonIdempotent(appId: string, key: string): Promise<void>;
  getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined>;
}
