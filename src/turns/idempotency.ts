/**
 * `Idempotency-Key` at ingress. The first request with a key runs; a repeat of a
 * completed one within the TTL gets the stored answer without running the
 * component again; a repeat of one still running waits for it (bounded), then
 * gets 409. The key is bound to the request's fingerprint: the same key with a
 * different request is refused. Only answers the component produced are stored;
 * a core-side failure (502/503/504) frees the key so the client can retry.
 */
import { createHash } from 'node:crypto';
import { UhlpError } from '../shared/errors.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import { waitForIdempotentCompletion } from '../state/idempotency-wait.js';
import type { IdempotencyBegin, IdempotencyStore, StoredResponse } from '../state/idempotency-store.js';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
export const REPLAYED_HEADER = 'idempotent-replayed';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export interface IdempotencyOptions {
  readonly store: IdempotencyStore;
  readonly appId: string;
  readonly key: string;
  /** Digest of what makes two requests "the same": method, path, body. */
  readonly fingerprint: string;
  readonly ttlMs: number;
  /** Life of the in-flight marker if the core dies mid-request. */
  readonly inFlightTtlMs: number;
  /** How long a repeat waits for its twin still running. */
  readonly waitMs: number;
  /** Keep only answers with a status under 400; a failure frees the key. @defaultValue false */
  readonly successOnly?: boolean;
  /**
   * Hands the answer to keep to the caller, which completes the record itself
   * (a delivery, with its acknowledgement: TurnEvent.once.complete) instead of
   * the store at once; the record stays in flight until then.
   * @defaultValue the store's completeIdempotent, awaited before the answer returns
   */
  readonly complete?: (response: StoredResponse, ttlMs: number) => void;
  /**
   * The key's claim, made already by the caller (a delivery claims a read's
   * records in one step): answered as `beginIdempotent` would have answered it.
   * @defaultValue claimed here
   */
  readonly begun?: IdempotencyBegin;
}

export function checkIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
    throw new UhlpError('UHLP_BAD_REQUEST', 'Idempotency-Key must be 1-255 visible ASCII characters', { field: 'Idempotency-Key' });
  }
  return value;
}

export function requestFingerprint(method: string, url: string, body: Buffer | undefined): string {
  const hash = createHash('sha256').update(method).update('\0').update(url).update('\0');
  if (body) hash.update(body);
  return hash.digest('hex');
}

/** Runs `execute` at most once per key; returns its answer or the stored one. */
export async function runIdempotent(
  options: IdempotencyOptions,
  execute: () => Promise<FinalResponse>,
): Promise<{ response: FinalResponse; replayed: boolean }> {
  const { store, appId, key } = options;
  for (let attempt = 0; attempt < 2; attempt++) {
    const begun = attempt === 0 && options.begun !== undefined ? options.begun : await store.beginIdempotent(appId, key, { inFlightTtlMs: options.inFlightTtlMs, fingerprint: options.fingerprint });
    if (begun === 'new') return { response: await executeOnce(options, execute), replayed: false };
    if (begun.state === 'completed') return { response: fromStored(begun.response), replayed: true };
    if (begun.state === 'key-reused') {
      throw new UhlpError('UHLP_IDEMPOTENCY_KEY_REUSED', `Idempotency-Key "${key}" was used for a different request`, { field: 'Idempotency-Key' });
    }
    const waited = await waitForIdempotentCompletion(store, appId, key, { timeoutMs: options.waitMs });
    if (waited.state === 'completed') return { response: fromStored(waited.response), replayed: true };
    if (waited.state === 'in-flight') {
      throw new UhlpError('UHLP_IDEMPOTENCY_IN_FLIGHT', `a request with Idempotency-Key "${key}" is still running`, { field: 'Idempotency-Key' });
    }
    // The twin gave the key up (it failed in a retryable way): claim it again.
  }
  throw new UhlpError('UHLP_IDEMPOTENCY_IN_FLIGHT', `Idempotency-Key "${key}" is contended; retry`, { field: 'Idempotency-Key' });
}

async function executeOnce(options: IdempotencyOptions, execute: () => Promise<FinalResponse>): Promise<FinalResponse> {
  let response: FinalResponse;
  try {
    response = await execute();
  } catch (error) {
    await options.store.abandonIdempotent(options.appId, options.key).catch(() => undefined);
    throw error;
  }
  if (options.successOnly === true && response.status >= 400) {
    // A delivery that failed is retried: the next attempt must run, not replay this answer.
    await options.store.abandonIdempotent(options.appId, options.key).catch(() => undefined);
    return response;
  }
  if (options.complete !== undefined) options.complete(toStored(response), options.ttlMs);
  else await options.store.completeIdempotent(options.appId, options.key, toStored(response), options.ttlMs);
  return response;
}

function toStored(response: FinalResponse): StoredResponse {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(response.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  // Bodies may be binary: stored as base64 and decoded on replay.
  const body = typeof response.body === 'string' ? Buffer.from(response.body, 'utf8') : response.body;
  return { statusCode: response.status, headers, body: body.toString('base64') };
}

function fromStored(stored: StoredResponse): FinalResponse {
  return { status: stored.statusCode, headers: { ...stored.headers }, body: Buffer.from(stored.body, 'base64') };
}
