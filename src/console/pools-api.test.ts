import { describe, expect, it } from 'vitest';
import { quantile, windowed } from './pools-api.js';

describe('recent claims from the acquire histogram', () => {
  it.each([
    // Cumulative buckets (le, count): p50 and p99 as histogram_quantile interpolates them.
    [[[0.001, 50], [0.005, 100], [Infinity, 100]], 0.5, 0.001],
    [[[0.001, 0], [0.01, 100], [Infinity, 100]], 0.5, 0.0055],
    [[[0.001, 0], [0.01, 100], [Infinity, 100]], 0.99, 0.00991],
    [[[0.001, 90], [0.01, 98], [Infinity, 100]], 0.99, 0.01],
    [[[0.001, 0], [Infinity, 0]], 0.5, null],
  ] as const)('%j at q=%d is %d', (buckets, q, expected) => {
    const value = quantile(q, buckets as unknown as Array<[number, number]>);
    if (expected === null) expect(value).toBeNull();
    else expect(value).toBeCloseTo(expected, 6);
  });

  it('counts only what came after the baseline snapshot', () => {
    const before = { buckets: new Map([[0.001, 10], [Infinity, 10]]), hits: 8, count: 10 };
    const now = { buckets: new Map([[0.001, 10], [Infinity, 30]]), hits: 9, count: 30 };
    expect(windowed(now, before)).toMatchObject({ count: 20, hits: 1, p50: 0.001 });
    expect(windowed(undefined, undefined)).toEqual({ count: 0, hits: 0, p50: null, p99: null });
  });
});
