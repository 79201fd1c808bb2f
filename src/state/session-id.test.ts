import { describe, expect, it } from 'vitest';
import { assertSessionId, createSessionIdGenerator, isSessionId, newSessionId, sessionIdTime } from './session-id.js';

describe('session ids', () => {
  it('has the form SES-<timestamp>-<random> and encodes its creation time', () => {
    const next = createSessionIdGenerator({ now: () => Date.UTC(2026, 10, 22, 2, 17, 12, 345) });
    const id = next();
    expect(id).toMatch(/^SES-20261122T021712345Z-[0-9A-Z]{16}$/);
    expect(isSessionId(id)).toBe(true);
    expect(sessionIdTime(id).toISOString()).toBe('2026-11-22T02:17:12.345Z');
  });

  it('is strictly increasing within one millisecond, across a clock step back, and over time', () => {
    const clock = [1000, 1000, 1000, 999, 2000];
    const next = createSessionIdGenerator({ now: () => clock.shift() ?? 3000, randomBytes: () => new Uint8Array(10).fill(255) });
    const ids = Array.from({ length: 6 }, () => next());
    // All-ones random bytes would overflow on increment if the generator did not start below the top.
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('does not collide across 100000 ids made as fast as possible', () => {
    const ids = Array.from({ length: 100_000 }, () => newSessionId());
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).toEqual([...ids].sort());
  });

  it.each(['', 'SES-1-2', '../SES-20261122T021712345Z-0123456789ABCDEF', 'SES-20261122T021712345Z-0123456789ABCDEU', 'SES-20261122T021712345Z-0123456789abcdef'])(
    'refuses %j',
    (bad) => {
      expect(() => assertSessionId(bad)).toThrow(expect.objectContaining({ code: 'UHLP_SESSION_ID_INVALID' }) as Error);
    },
  );
});
