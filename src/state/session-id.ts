/**
 * Session ids: `SES-<timestamp>-<random>` (FR-RT-004). The timestamp is the UTC
 * creation time in a fixed-width compact ISO form, so ids sort by creation time as
 * plain strings; the random part is 16 Crockford base32 digits (79 random bits,
 * the top bit kept clear so increments cannot overflow). Within one
 * process, ids made in the same millisecond are strictly increasing (the random
 * part is incremented, as ULID's monotonic mode does), so a generator never
 * repeats an id; across processes, 79 random bits make a collision negligible.
 * Ids are also directory names (ledger paths), so the alphabet is path-safe.
 */
import { randomBytes as nodeRandomBytes } from 'node:crypto';
import { UhlpError } from '../errors.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const RANDOM_CHARS = 16; // 16 x 5 bits = 80 bits
export const SESSION_ID_PATTERN = /^SES-(\d{8}T\d{9}Z)-([0-9A-HJKMNP-TV-Z]{16})$/;

export interface SessionIdGeneratorOptions {
  /** Clock in epoch milliseconds. @defaultValue `Date.now` */
  now?: () => number;
  /** Source of random bytes. @defaultValue `crypto.randomBytes` */
  randomBytes?: (size: number) => Uint8Array;
}

export type SessionIdGenerator = () => string;

/** Makes a generator whose ids are strictly increasing for the life of the generator. */
export function createSessionIdGenerator(options: SessionIdGeneratorOptions = {}): SessionIdGenerator {
  const now = options.now ?? Date.now;
  const randomBytes = options.randomBytes ?? ((size: number) => nodeRandomBytes(size));
  let lastTime = -1;
  let lastRandom: number[] = [];

  return () => {
    // A clock that steps backwards must not break ordering: keep the last time.
    const time = Math.max(now(), lastTime);
    if (time === lastTime) {
      lastRandom = incrementBase32(lastRandom);
    } else {
      lastTime = time;
      lastRandom = randomDigits(randomBytes(10));
      // Clearing the top bit leaves room for 2^79 increments within this millisecond.
      lastRandom[0] = lastRandom[0]! & 0b01111;
    }
    return `SES-${formatTimestamp(time)}-${lastRandom.map((d) => CROCKFORD[d]).join('')}`;
  };
}

const defaultGenerator = createSessionIdGenerator();

/** A new session id from the process-wide generator. */
export function newSessionId(): string {
  return defaultGenerator();
}

export function isSessionId(value: string): boolean {
  return SESSION_ID_PATTERN.test(value);
}

/** Throws `UHLP_SESSION_ID_INVALID` unless `value` is a session id; ids become paths, so this guards them. */
export function assertSessionId(value: string, field = 'sessionId'): void {
  if (!isSessionId(value)) {
    throw new UhlpError('UHLP_SESSION_ID_INVALID', `${field} "${String(value).slice(0, 80)}" is not a session id (SES-<timestamp>-<random>)`, { field });
  }
}

/** The creation time encoded in a session id. */
export function sessionIdTime(id: string): Date {
  const match = SESSION_ID_PATTERN.exec(id);
  if (!match?.[1]) throw new UhlpError('UHLP_SESSION_ID_INVALID', `"${id.slice(0, 80)}" is not a session id`, { field: 'sessionId' });
  const t = match[1];
  return new Date(
    `${t.slice(0, 4)}-${t.slice(4, 6)}-${t.slice(6, 8)}T${t.slice(9, 11)}:${t.slice(11, 13)}:${t.slice(13, 15)}.${t.slice(15, 18)}Z`,
  );
}

function formatTimestamp(ms: number): string {
  // 20261122T021712345Z: the ISO string without separators, still fixed width.
  return new Date(ms).toISOString().replace(/[-:.]/g, '');
}

function randomDigits(bytes: Uint8Array): number[] {
  const digits: number[] = [];
  let buffer = 0;
  let bits = 0;
  for (const byte of bytes) {
    buffer = (buffer << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      digits.push((buffer >> bits) & 31);
    }
    buffer &= (1 << bits) - 1;
  }
  return digits.slice(0, RANDOM_CHARS);
}

function incrementBase32(digits: number[]): number[] {
  const next = [...digits];
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i]! < 31) {
      next[i]! += 1;
      return next;
    }
    next[i] = 0;
  }
  // 2^80 ids in one millisecond cannot happen; failing loudly beats wrapping.
  throw new Error('session id random part overflowed within one millisecond');
}
