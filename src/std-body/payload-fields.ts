/**
 * Small readers shared by the std-body endpoints' payload parsers: each answers
 * either the value or the field at fault, never throws.
 */

export interface PayloadError {
  readonly field: string;
  readonly message: string;
}

export type ParsedPayload<T> = { readonly ok: true; readonly request: T } | { readonly ok: false; readonly error: PayloadError };

/** A limit from the payload, clamped into [min, max]; absent means the default, a non-number is invalid. */
export function clampLimit(
  payload: Record<string, unknown>,
  field: string,
  fallback: number,
  min: number,
  max: number,
): ParsedPayload<number> {
  const value = payload[field];
  if (value === undefined) return { ok: true, request: fallback };
  if (typeof value !== 'number' || Number.isNaN(value)) return invalid(field, `${field} must be a number`);
  return { ok: true, request: Math.min(max, Math.max(min, Math.floor(value))) };
}

export function invalid(field: string, message: string): { ok: false; error: PayloadError } {
  return { ok: false, error: { field, message } };
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
