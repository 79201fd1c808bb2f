/**
 * Waiting for a repeated request's twin: when `beginIdempotent` answers
 * `in-flight`, the ingress can wait for the first request to complete and answer
 * its stored response. Polling the store works the same on memory and Redis and
 * needs no extra connection (a Redis subscriber would); the interval bounds the
 * added latency.
 */
import type { IdempotencyStore, StoredResponse } from './idempotency-store.js';

export interface WaitForIdempotentOptions {
  /** Give up after this long and report `in-flight` (the ingress then answers 409). */
  timeoutMs: number;
  /** Time between two looks at the record. @defaultValue 50 */
  intervalMs?: number;
  /** Stops waiting early (client went away); reports `in-flight`. */
  signal?: AbortSignal;
}

export type WaitForIdempotentResult =
  | { state: 'completed'; response: StoredResponse }
  /** Still running when the wait ended. */
  | { state: 'in-flight' }
  /** The first request was abandoned or its marker expired: the caller may claim the key again. */
  | { state: 'gone' };

export async function waitForIdempotentCompletion(
  store: Pick<IdempotencyStore, 'getIdempotent'>,
  appId: string,
  key: string,
  options: WaitForIdempotentOptions,
): Promise<WaitForIdempotentResult> {
  const intervalMs = options.intervalMs ?? 50;
  const deadline = Date.now() + options.timeoutMs;
  for (;;) {
    const record = await store.getIdempotent(appId, key);
    if (!record) return { state: 'gone' };
    if (record.state === 'completed') return record;
    const left = deadline - Date.now();
    if (left <= 0 || options.signal?.aborted) return { state: 'in-flight' };
    await delay(Math.min(intervalMs, left), options.signal);
  }
}

function delay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
