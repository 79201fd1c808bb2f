/**
 * The one place a retry delay is computed (bullmq's `backoffs.ts` is the model).
 * Every retry loop of the project asks it: the wait before retry number `retry`
 * (0 for the first) doubles from `initialMs` per retry up to `maxMs`, and some
 * part of it is random so that callers failing together do not retry together.
 *
 * How much is random is a strategy chosen by name, one per promise a caller
 * made: `equal` is the project's rule; the others exist because a caller
 * documented something else to its users.
 */

/**
 * The random share of each wait, by name: the wait lies in
 * `[ceiling × (1 − share), ceiling]`.
 */
export const BACKOFF_JITTER = {
  /** Half fixed, half random ("equal jitter"): the project's rule. */
  equal: 0.5,
  /**
   * Up to 20 % off, never longer than the ceiling: a delivery policy's retries,
   * as docs/sources.md promises for `backoff.initialMs` / `backoff.maxMs`.
   */
  'up-to-20-percent-off': 0.2,
  /**
   * None: the exact doubling of client-go's per-item rate limiter, which the
   * operator's work queue copies and reports (`addRateLimited` answers the delay).
   */
  none: 0,
} as const satisfies Readonly<Record<string, number>>;

export type BackoffJitter = keyof typeof BACKOFF_JITTER;

export interface BackoffOptions {
  /** The ceiling of the first wait, ms. */
  readonly initialMs: number;
  /** The largest ceiling, ms. */
  readonly maxMs: number;
  /** How much of the wait is random. @defaultValue `'equal'` */
  readonly jitter?: BackoffJitter;
  /** Random source in [0, 1). @defaultValue Math.random */
  readonly random?: () => number;
}

/** Past this many doublings every ceiling is `maxMs`; the bound keeps `2 ** retry` finite. */
const MAX_DOUBLINGS = 64;

/** The wait, in whole ms, before retry number `retry` (0 for the first). */
export function backoffDelay(retry: number, options: BackoffOptions): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(Math.max(0, retry), MAX_DOUBLINGS));
  const share = BACKOFF_JITTER[options.jitter ?? 'equal'];
  if (share === 0) return Math.round(ceiling);
  return Math.round(ceiling * (1 - share) + (options.random ?? Math.random)() * ceiling * share);
}
