import { describe, expect, it } from 'vitest';
import { isOrphaned, UNCLAIMED_RUN_GRACE_MS } from './orphan-sweeper.js';

describe('isOrphaned (a running run with no lease)', () => {
  const now = Date.parse('2026-11-30T01:00:00.000Z');
  const at = (msAgo: number): string => new Date(now - msAgo).toISOString();

  it('leaves a run no execution has claimed to its creator for the grace, whose lease may be a stalled write away', () => {
    expect(isOrphaned({ attempts: 0, updatedAt: at(0) }, now)).toBe(false);
    expect(isOrphaned({ attempts: 0, updatedAt: at(10_000) }, now)).toBe(false);
    expect(isOrphaned({ attempts: 0, updatedAt: at(UNCLAIMED_RUN_GRACE_MS - 1) }, now)).toBe(false);
  });

  it('takes an unclaimed run once the grace has passed: its creator died before claiming it', () => {
    expect(isOrphaned({ attempts: 0, updatedAt: at(UNCLAIMED_RUN_GRACE_MS) }, now)).toBe(true);
  });

  it('takes a claimed run whose lease lapsed at once, however recent its last checkpoint', () => {
    expect(isOrphaned({ attempts: 1, updatedAt: at(0) }, now)).toBe(true);
    expect(isOrphaned({ attempts: 3, updatedAt: at(5_000) }, now)).toBe(true);
  });

  it('takes a record whose time cannot be read rather than leaving it for good', () => {
    expect(isOrphaned({ attempts: 0, updatedAt: 'not a time' }, now)).toBe(true);
  });
});
