/**
 * Deadlines and drains: the one way the project races work against a timer.
 *
 * - `withDeadline`: the work's outcome, or the caller's timeout error once the
 *   time is up. Given a function, the work gets a signal that aborts at the
 *   deadline, so a wait on an event or a waiter list takes its listener away
 *   instead of leaking it.
 * - `drain`: waits for work to settle, but no longer than a bound (shutdowns);
 *   it never fails, and says whether everything settled in time.
 * - `nextEvent`: an emitter's next event, its listener removed at the deadline.
 * - `deadlineSignal`: the AbortSignal form, for APIs that take a signal
 *   (fetch, undici, the LLM providers): aborts after `ms`, or with the caller's
 *   own signal, whichever comes first.
 *
 * Timers are cleared as soon as the work settles and never hold the process
 * open (like `AbortSignal.timeout`): a deadline bounds a wait, it is not work.
 */

/**
 * `work`'s outcome, or a rejection with `onTimeout()` once `ms` have passed
 * first. Given a function, it is called with a signal that aborts at the
 * deadline (after the rejection), for the work to stop and clean up.
 */
export function withDeadline<T>(work: Promise<T> | ((signal: AbortSignal) => Promise<T>), ms: number, onTimeout: () => unknown): Promise<T> {
  const controller = typeof work === 'function' ? new AbortController() : undefined;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(onTimeout());
      controller?.abort();
    }, Math.max(0, ms));
    timer.unref();
  });
  let running: Promise<T>;
  try {
    running = typeof work === 'function' ? work(controller!.signal) : work;
  } catch (error) {
    clearTimeout(timer);
    return Promise.reject(error);
  }
  return Promise.race([running, deadline]).finally(() => clearTimeout(timer));
}

/**
 * Waits until every promise of `work` has settled or `ms` have passed, whichever
 * comes first; never rejects. Resolves true when everything settled in time.
 */
export async function drain(work: Promise<unknown> | Iterable<Promise<unknown>>, ms: number): Promise<boolean> {
  const all = work instanceof Promise ? work.then(noop, noop) : Promise.allSettled(work);
  return withDeadline(
    all.then(() => true),
    ms,
    () => TIMED_OUT,
  ).catch(() => false);
}

/** A signal that aborts after `ms` (with a TimeoutError), or when `signal` aborts, whichever is first. */
export function deadlineSignal(ms: number, signal?: AbortSignal): AbortSignal {
  const timeout = AbortSignal.timeout(Math.max(0, ms));
  return signal === undefined ? timeout : AbortSignal.any([timeout, signal]);
}

/** What `nextEvent` needs of an emitter (node's EventEmitter, ioredis, ...). */
export interface EventSource {
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

/**
 * The arguments of `emitter`'s next `event`, for a wait under `withDeadline`:
 * when `signal` aborts the listener is taken away and the promise rejects with
 * its reason. Unlike `events.once`, an `error` event is no failure here: a
 * client that reconnects reports errors while the caller waits for it to be ready.
 */
export function nextEvent(emitter: EventSource, event: string, signal: AbortSignal): Promise<unknown[]> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onEvent = (...args: unknown[]): void => {
      signal.removeEventListener('abort', onAbort);
      resolve(args);
    };
    const onAbort = (): void => {
      emitter.off(event, onEvent);
      reject(signal.reason);
    };
    emitter.once(event, onEvent);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const TIMED_OUT = Symbol('timed out');

function noop(): void {}
