import { describe, expect, it } from 'vitest';
import { decideGcra } from './rate-limit-gcra.js';

/** Runs hits at the given times (ms) and returns [allowed, retryAfterMs] for each. */
function run(limit: number, timesMs: number[]): Array<[boolean, number]> {
  let tat: number | undefined;
  return timesMs.map((t) => {
    const decision = decideGcra(tat, Math.round(t * 1000), limit);
    if (decision.allowed) tat = decision.tatUs;
    return [decision.allowed, decision.retryAfterMs];
  });
}

describe('decideGcra', () => {
  it.each<[string, number, number[], Array<[boolean, number]>]>([
    ['a burst of the limit, then one per interval', 2, [0, 0, 0, 499, 500, 500], [[true, 0], [true, 0], [false, 500], [false, 1], [true, 0], [false, 500]]],
    ['limit 1: one per second, no more, no less', 1, [0, 999, 1000, 1999, 2000], [[true, 0], [false, 1], [true, 0], [false, 1], [true, 0]]],
    ['an idle period refills the whole burst, and no more', 3, [0, 0, 0, 5000, 5000, 5000, 5000], [[true, 0], [true, 0], [true, 0], [true, 0], [true, 0], [true, 0], [false, 334]]],
  ])('%s', (_case, limit, times, expected) => {
    expect(run(limit, times)).toEqual(expected);
  });

  it('allows exactly the limit at once, for any limit, at real epoch times', () => {
    for (const limit of [1, 3, 7, 9, 11, 13, 333, 1000, 7919, 1_000_000]) {
      const decisions = run(limit, Array(limit + 1).fill(1_763_780_000_123.456));
      expect(decisions.filter(([allowed]) => allowed)).toHaveLength(limit);
    }
  });

  it('is allowed again exactly when the retry delay has passed', () => {
    let tat: number | undefined;
    const start = 50_250_500;
    for (let i = 0; i < 7; i++) tat = decideGcra(tat, start, 7).tatUs;
    const denied = decideGcra(tat, start, 7);
    expect(denied.allowed).toBe(false);
    expect(decideGcra(tat, start + denied.retryAfterMs * 1000, 7).allowed).toBe(true);
    expect(decideGcra(tat, start + (denied.retryAfterMs - 1) * 1000, 7).allowed).toBe(false);
  });

  it('sustains the limit over a long run of evenly spaced hits', () => {
    const times = Array.from({ length: 10_000 }, (_, i) => i * 25); // 40 hits per second offered for 250 s
    const allowed = run(10, times).filter(([ok]) => ok).length;
    // 250 s at 10/s plus the first burst of 10; nothing more, nothing lost.
    expect(allowed).toBeGreaterThanOrEqual(2499 + 10);
    expect(allowed).toBeLessThanOrEqual(2500 + 10);
  });
});
