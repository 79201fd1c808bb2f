import { describe, expect, it } from 'vitest';
import { retryDelayMs, type DeliveryPolicy } from './source-routes.js';

/** A delivery policy with the documented defaults of `backoff` (docs/sources.md). */
const policy: DeliveryPolicy = {
  concurrency: 1,
  maxAttempts: 5,
  initialBackoffMs: 200,
  maxBackoffMs: 30_000,
  maxAgeMs: undefined,
  deadLetter: true,
  leaseMs: 60_000,
  readAhead: 0,
};

describe('retryDelayMs', () => {
  // docs/sources.md: "wait before attempt 2, doubled for each later attempt, capped at maxMs, up to 20 % jitter off".
  it.each([
    { attempt: 1, random: 0, wait: 160 },
    { attempt: 1, random: 0.999_999, wait: 200 },
    { attempt: 2, random: 0, wait: 320 },
    { attempt: 4, random: 0.5, wait: 1440 },
    { attempt: 12, random: 0.999_999, wait: 30_000 },
    { attempt: 100, random: 0, wait: 24_000 },
  ])('after attempt $attempt (draw $random) waits $wait ms', ({ attempt, random, wait }) => {
    expect(retryDelayMs(policy, attempt, () => random)).toBe(wait);
  });

  it('never waits under 1 ms', () => {
    expect(retryDelayMs({ ...policy, initialBackoffMs: 1, maxBackoffMs: 1 }, 1, () => 0.99)).toBe(1);
  });
});
