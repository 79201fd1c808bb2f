/**
 * Span times as epoch milliseconds from one monotonic clock read: the
 * performance clock plus its offset to the wall clock, taken again at most
 * once a second. Not `performance.timeOrigin + performance.now()` alone: the
 * monotonic clock drifts from the wall clock over a process's life (tens of
 * milliseconds within minutes on a busy machine), and the SDK's own spans
 * (tool and model calls, anchored to Date.now() as they start) would then sit
 * outside the lean parent they belong to.
 */
const ANCHOR_MS = 1000;
let anchoredAt = -Infinity;
let offset = 0;

/** Epoch milliseconds of a performance.now() reading. */
export function epochMsAt(performanceNow: number): number {
  if (performanceNow - anchoredAt > ANCHOR_MS || performanceNow < anchoredAt) {
    anchoredAt = performance.now();
    offset = Date.now() - anchoredAt;
  }
  return performanceNow + offset;
}

/** Epoch milliseconds now. */
export function epochNowMs(): number {
  return epochMsAt(performance.now());
}
