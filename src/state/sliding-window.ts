/**
 * The rate-limit arithmetic: a one-second sliding window estimated from the
 * counts of the current and the previous fixed window (the previous count is
 * weighted by how much of it still overlaps the sliding second). It needs two
 * numbers per app instead of a log of every request, and unlike a plain fixed
 * window it does not let 2x the limit through around a window boundary.
 * `lua/rate-limit-1.lua` implements exactly this; keep the two in step.
 */

export const RATE_WINDOW_MS = 1000;

export interface WindowState {
  /** Index of the fixed window (`floor(ms / 1000)`) `current` counts. */
  window: number;
  current: number;
  previous: number;
}

export interface WindowDecision {
  allowed: boolean;
  retryAfterMs: number;
  /** The state to keep (unchanged counts when denied: denied hits are not counted). */
  state: WindowState;
}

export function decideSlidingWindow(stored: WindowState | undefined, nowMs: number, limit: number): WindowDecision {
  const window = Math.floor(nowMs / RATE_WINDOW_MS);
  let current = 0;
  let previous = 0;
  if (stored && stored.window === window) {
    current = stored.current;
    previous = stored.previous;
  } else if (stored && stored.window === window - 1) {
    previous = stored.current;
  }
  const elapsed = nowMs - window * RATE_WINDOW_MS;
  const estimate = (previous * (RATE_WINDOW_MS - elapsed)) / RATE_WINDOW_MS + current;
  if (estimate + 1 <= limit) {
    return { allowed: true, retryAfterMs: 0, state: { window, current: current + 1, previous } };
  }
  let retryAfterMs: number;
  if (current + 1 <= limit) {
    // Within this window: wait until the previous window's weight has decayed enough.
    const until = RATE_WINDOW_MS * (1 - (limit - 1 - current) / previous);
    retryAfterMs = Math.ceil(until - elapsed);
  } else {
    // This window is full: in the next one, this window's count becomes the decaying part.
    const until = RATE_WINDOW_MS * (1 - (limit - 1) / current);
    retryAfterMs = RATE_WINDOW_MS - elapsed + Math.max(0, Math.ceil(until));
  }
  return { allowed: false, retryAfterMs: Math.max(1, retryAfterMs), state: { window, current, previous } };
}
