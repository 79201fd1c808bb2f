import { describe, expect, it } from 'vitest';
import { assertSessionId, createSessionIdGenerator, isSessionId, newSessionId, SESSION_ID_RANDOM_CHARS, sessionIdTime } from './session-id.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** The random part of an id as its 100 bits, most significant first. */
const bitsOf = (id: string): string =>
  [...id.slice(-SESSION_ID_RANDOM_CHARS)].map((c) => CROCKFORD.indexOf(c).toString(2).padStart(5, '0')).join('');

describe('session ids', () => {
  it('has the form SES-<timestamp>-<20 random digits> and encodes its creation time', () => {
    const next = createSessionIdGenerator({ now: () => Date.UTC(2026, 10, 22, 2, 17, 12, 345) });
    const id = next();
    expect(id).toMatch(/^SES-20261122T021712345Z-[0-9A-Z]{20}$/);
    expect(isSessionId(id)).toBe(true);
    expect(sessionIdTime(id).toISOString()).toBe('2026-11-22T02:17:12.345Z');
  });

  it('carries the first 100 bits of 13 fresh random bytes in every id, within one millisecond too (no increment)', () => {
    const draws: Uint8Array[] = [
      Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
      Uint8Array.from([0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0f]),
      Uint8Array.from([0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0xed, 0xcb, 0xa9, 0x87]),
    ];
    const sizes: number[] = [];
    const next = createSessionIdGenerator({
      now: () => 1000,
      randomBytes: (size) => {
        sizes.push(size);
        return draws.shift()!;
      },
    });
    const ids = [next(), next(), next()];
    expect(sizes).toEqual([13, 13, 13]);
    expect(ids[0]!.endsWith('Z'.repeat(20))).toBe(true);
    // The low nibble of the last byte is beyond the 100 bits: an id made after an all-ones one is all zeros, not its successor.
    expect(ids[1]!.endsWith('0'.repeat(20))).toBe(true);
    const expected = [0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x0f, 0xed, 0xcb, 0xa9, 0x87].map((b) => b.toString(2).padStart(8, '0')).join('').slice(0, 100);
    expect(bitsOf(ids[2]!)).toBe(expected);
  });

  it('orders ids by timestamp, also across a clock step back', () => {
    const clock = [1000, 1000, 999, 2000];
    const next = createSessionIdGenerator({ now: () => clock.shift() ?? 3000 });
    const stamps = Array.from({ length: 5 }, () => next().slice(4, 23));
    expect(stamps).toEqual([...stamps].sort());
    expect(stamps[2]).toBe(stamps[1]);
  });

  it('does not collide across 100000 ids made as fast as possible, and every bit of the random part varies', () => {
    const ids = Array.from({ length: 100_000 }, () => newSessionId());
    expect(new Set(ids).size).toBe(ids.length);
    const stamps = ids.map((id) => id.slice(4, 23));
    expect(stamps).toEqual([...stamps].sort());
    // Each of the 100 bit positions is set in about half of the ids: a stuck bit (or a counter) would show here.
    const ones = new Array<number>(100).fill(0);
    for (const id of ids.slice(0, 4000)) [...bitsOf(id)].forEach((bit, i) => (ones[i]! += bit === '1' ? 1 : 0));
    for (const count of ones) expect(count).toBeGreaterThan(1700);
    for (const count of ones) expect(count).toBeLessThan(2300);
  });

  it.each([
    '',
    'SES-1-2',
    '../SES-20261122T021712345Z-0123456789ABCDEFGHJK',
    'SES-20261122T021712345Z-0123456789ABCDEFGHJU',
    'SES-20261122T021712345Z-0123456789abcdefghjk',
    // The 80-bit form of earlier versions is no longer a session id: those were guessable.
    'SES-20261122T021712345Z-0123456789ABCDEF',
  ])('refuses %j', (bad) => {
    expect(() => assertSessionId(bad)).toThrow(expect.objectContaining({ code: 'UHLP_SESSION_ID_INVALID' }) as Error);
  });
});
