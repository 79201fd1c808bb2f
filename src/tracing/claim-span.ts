/**
 * The wait for a sandbox, on the execution's span. A claim that waited (no
 * warm sandbox free, or a retry on a fresh one) is the span `uhlp.claim`,
 * because the wait is what a slow turn is looked at for; a warm hit (most
 * turns, microseconds) is two attributes of `uhlp.execution` instead of a span
 * of its own, from a set made once per pool.
 */
import { epochMs, recordSpan, recordsUnder, trace, type Attributes } from './spans.js';

const hitAttributes = new Map<string, Attributes>();

/** @param acquiring, acquired performance.now() readings around the claim */
export function recordClaim(pool: string, hit: boolean, attempt: number, acquiring: number, acquired: number): void {
  if (!recordsUnder()) return;
  if (hit && attempt === 1) {
    let attributes = hitAttributes.get(pool);
    if (attributes === undefined) {
      attributes = Object.freeze({ 'uhlp.pool': pool, 'uhlp.sandbox.hit': true });
      hitAttributes.set(pool, attributes);
    }
    trace.getActiveSpan()?.setAttributes(attributes);
    return;
  }
  recordSpan('uhlp.claim', epochMs(acquiring), epochMs(acquired), { 'uhlp.pool': pool, 'uhlp.sandbox.hit': hit, 'uhlp.attempt': attempt });
}
