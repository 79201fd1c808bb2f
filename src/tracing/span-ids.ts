/**
 * Trace and span ids from a pooled random buffer: one randomFillSync per 4 KiB
 * (about 170 spans' ids) instead of a random draw per id. The bytes are the
 * operating system's cryptographic randomness, as the SDK's RandomIdGenerator's
 * are; an all-zero id (invalid in W3C trace context) is drawn again.
 */
import { randomFillSync } from 'node:crypto';

const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let next = POOL_BYTES;

function randomHex(bytes: number): string {
  for (;;) {
    if (next + bytes > POOL_BYTES) {
      randomFillSync(pool);
      next = 0;
    }
    let zero = true;
    for (let i = next; i < next + bytes; i++) {
      if (pool[i] !== 0) {
        zero = false;
        break;
      }
    }
    const hex = pool.toString('hex', next, next + bytes);
    next += bytes;
    if (!zero) return hex;
  }
}

/** 32 lowercase hex digits, never all zero. */
export function randomTraceId(): string {
  return randomHex(16);
}

/** 16 lowercase hex digits, never all zero. */
export function randomSpanId(): string {
  return randomHex(8);
}
