import { describe, expect, it } from 'vitest';
import { decideSlidingWindow, type WindowState } from './sliding-window.js';

function run(limit: number, times: number[]): Array<{ allowed: boolean; retryAfterMs: number }> {
  let state: WindowState | undefined;
  return times.map((t) => {
    const decision = decideSlidingWindow(state, t, limit);
    state = decision.state;
    return { allowed: decision.allowed, retryAfterMs: decision.retryAfterMs };
  });
}

describe('decideSlidingWindow', () => {
  it.each([
    // [case, limit, hit times (ms), expected decisions]
    ['fills a fresh window, then waits for the next one', 2, [10_000, 10_100, 10_200], [[true, 0], [true, 0], [false, 800 + 0 + 500]]],
    ['a full previous window decays linearly', 2, [10_000, 10_500, 11_000, 11_400], [[true, 0], [true, 0], [false, 500], [false, 100]]],
    // The previous window's count is assumed spread evenly over it, so half of it still counts at 11_500.
    ['limit 1 in consecutive windows', 1, [10_000, 11_500, 11_999, 12_000], [[true, 0], [false, 500], [false, 1], [true, 0]]],
    ['a gap of two windows forgets everything', 1, [10_000, 12_000], [[true, 0], [true, 0]]],
  ])('%s', (_case, limit, times, expected) => {
    expect(run(limit, times).map((d) => [d.allowed, d.retryAfterMs])).toEqual(expected);
  });

  it('is allowed again exactly when the retry delay has passed', () => {
    let state: WindowState | undefined;
    let t = 50_250;
    for (let i = 0; i < 7; i++) state = decideSlidingWindow(state, t, 7).state;
    const denied = decideSlidingWindow(state, t, 7);
    expect(denied.allowed).toBe(false);
    t += denied.retryAfterMs;
    expect(decideSlidingWindow(state, t, 7).allowed).toBe(true);
    expect(decideSlidingWindow(state, t - 1, 7).allowed).toBe(false);
  });

  it('does not count denied hits', () => {
    const state: WindowState = { window: 10, current: 3, previous: 0 };
    const denied = decideSlidingWindow(state, 10_500, 3);
    expect(denied.state).toEqual(state);
  });
});
