/**
 * The one backoff rule of the project, for every retry loop: the wait before
 * retry number `retry` (0 for the first) doubles from `initialMs` per retry up
 * to `maxMs`, and is half fixed, half random ("equal jitter"), so that callers
 * failing together do not retry together.
 */

export interface BackoffOptions {
  /** The ceiling of the first wait, ms. */
  readonly initialMs: number;
  /** The largest ceiling, ms. */
  readonly maxMs: number;
  /** Random source in [0, 1). @defaultValue Math.random */
  readonly random?: () => number;
}

export function backoffDelay(retry: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** retry);
  return Math.round(ceiling / 2 + (options.random ?? Math.random)() * (ceiling / 2));
}
