/**
 * The rate-limit arithmetic: GCRA, the generic cell rate algorithm, which is a
 * token bucket kept as one number. An app with `limitPerSecond` L may send up to
 * L requests at once and then one every 1/L s; the long-run rate is L per second,
 * and the wait before the next allowed request is exact. One number per app (the
 * theoretical arrival time, TAT) is all the state, so a check is one small atomic
 * update. Denied hits change nothing.
 *
 * Times are integer microseconds, so this module and `lua/rate-limit-1.lua` (which
 * implements exactly this; keep the two in step) compute the same answers with no
 * float drift. The interval is rounded down to whole microseconds, which raises
 * the long-run rate by under 0.3% for limits up to 10^4 (not at all for divisors of
 * 10^6); a burst is still exactly L.
 */

/** L requests fit in this period at once. */
export const RATE_PERIOD_US = 1_000_000;

/** Above this the interval would be under one microsecond. */
export const MAX_LIMIT_PER_SECOND = RATE_PERIOD_US;

export interface GcraDecision {
  allowed: boolean;
  retryAfterMs: number;
  /** The TAT to store when allowed (epoch µs); unchanged when denied. */
  tatUs: number;
  /** How long the stored TAT matters; after it, a fresh bucket is the same. */
  ttlMs: number;
}

export function decideGcra(storedTatUs: number | undefined, nowUs: number, limit: number): GcraDecision {
  const interval = Math.floor(RATE_PERIOD_US / limit);
  const tat = Math.max(storedTatUs ?? nowUs, nowUs);
  // L intervals, not the whole period: with the interval rounded down, the period would fit more than L.
  const burst = limit * interval;
  const ahead = tat + interval - nowUs;
  if (ahead <= burst) {
    return { allowed: true, retryAfterMs: 0, tatUs: tat + interval, ttlMs: Math.max(1, Math.ceil(ahead / 1000)) };
  }
  return { allowed: false, retryAfterMs: Math.max(1, Math.ceil((ahead - burst) / 1000)), tatUs: tat, ttlMs: Math.max(1, Math.ceil((tat - nowUs) / 1000)) };
}
