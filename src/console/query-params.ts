/**
 * The console API's query and body values: each parsed once, with the field at
 * fault named in a UHLP_BAD_REQUEST. Values are attacker-controlled; what is
 * echoed back in a message is cut short.
 */
import { UhlpError } from '../shared/errors.js';

const NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,251}[A-Za-z0-9])?$/;

function bad(field: string, expected: string): never {
  throw new UhlpError('UHLP_BAD_REQUEST', `${field} must be ${expected}`, { field });
}

/** An app, component, pool or queue name; undefined when absent or empty. */
export function optionalName(value: unknown, field: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !NAME.test(value)) bad(field, 'a name (letters, digits, "-", "_", ".")');
  return value;
}

export function requiredName(value: unknown, field: string): string {
  return optionalName(value, field) ?? bad(field, 'given');
}

/** One of `allowed`; undefined when absent or empty. */
export function optionalChoice<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) bad(field, `one of ${allowed.join(', ')}`);
  return value as T;
}

/** A whole number within bounds, or `fallback` when absent. */
export function integerParam(value: unknown, field: string, fallback: number, min: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  const number = typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  if (!Number.isInteger(number) || number < min || number > max) bad(field, `a whole number from ${min} to ${max}`);
  return number;
}

/** A time as an ISO date-time or epoch milliseconds, in epoch ms; undefined when absent. */
export function optionalTime(value: unknown, field: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string' || value.length > 64) bad(field, 'an ISO time or epoch milliseconds');
  const ms = /^\d{1,15}$/.test(value) ? Number(value) : Date.parse(value);
  if (!Number.isFinite(ms)) bad(field, 'an ISO time or epoch milliseconds');
  return ms;
}

/** A JSON object body (fastify hands the core's routes a Buffer). */
export function jsonObjectBody(raw: unknown, maxBytes = 64 * 1024): Record<string, unknown> {
  if (!Buffer.isBuffer(raw) || raw.length === 0) bad('body', 'a JSON object');
  if (raw.length > maxBytes) bad('body', `at most ${maxBytes} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(raw.toString('utf8'));
  } catch {
    bad('body', 'a JSON object');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) bad('body', 'a JSON object');
  return value as Record<string, unknown>;
}
