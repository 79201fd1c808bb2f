import { describe, expect, it } from 'vitest';
import { backoffDelay, type BackoffOptions } from './backoff.js';

describe('backoffDelay', () => {
  const at = (random: number) => (): number => random;
  const cases: Array<{ name: string; retry: number; options: BackoffOptions; wait: number }> = [
    { name: 'equal jitter, lowest draw: half the ceiling', retry: 0, options: { initialMs: 100, maxMs: 10_000, random: at(0) }, wait: 50 },
    { name: 'equal jitter, middle draw', retry: 0, options: { initialMs: 100, maxMs: 10_000, random: at(0.5) }, wait: 75 },
    { name: 'equal jitter, highest draw: nearly the ceiling', retry: 0, options: { initialMs: 100, maxMs: 10_000, random: at(0.999) }, wait: 100 },
    { name: 'the ceiling doubles per retry', retry: 3, options: { initialMs: 100, maxMs: 10_000, random: at(0.5) }, wait: 600 },
    { name: 'the ceiling stops at maxMs', retry: 10, options: { initialMs: 100, maxMs: 1000, random: at(0.5) }, wait: 750 },
    { name: 'a huge retry count stays at maxMs', retry: 5000, options: { initialMs: 100, maxMs: 1000, random: at(0) }, wait: 500 },
    { name: 'an initial wait of 0 stays 0 however many retries', retry: 5000, options: { initialMs: 0, maxMs: 1000, random: at(0.5) }, wait: 0 },
    { name: 'a negative retry counts as the first', retry: -1, options: { initialMs: 100, maxMs: 1000, random: at(0) }, wait: 50 },
    { name: 'no jitter: exact doubling', retry: 2, options: { initialMs: 10, maxMs: 1000, jitter: 'none', random: at(0.3) }, wait: 40 },
    { name: 'no jitter: capped', retry: 20, options: { initialMs: 10, maxMs: 50, jitter: 'none' }, wait: 50 },
    { name: 'up to 20% off, lowest draw: 80% of the ceiling', retry: 1, options: { initialMs: 200, maxMs: 30_000, jitter: 'up-to-20-percent-off', random: at(0) }, wait: 320 },
    { name: 'up to 20% off, highest draw: never past the ceiling', retry: 1, options: { initialMs: 200, maxMs: 30_000, jitter: 'up-to-20-percent-off', random: at(0.999_999) }, wait: 400 },
  ];
  it.each(cases)('$name', ({ retry, options, wait }) => {
    expect(backoffDelay(retry, options)).toBe(wait);
  });

  it('draws from Math.random by default, inside the strategy\'s range', () => {
    for (let i = 0; i < 200; i++) {
      const wait = backoffDelay(2, { initialMs: 100, maxMs: 10_000 });
      expect(wait).toBeGreaterThanOrEqual(200);
      expect(wait).toBeLessThanOrEqual(400);
    }
  });
});
