/**
 * The argument checks of the runtime store's validating wrapper
 * (validating-stores.ts), so that memory and Redis refuse the same input with
 * the same code (`UHLP_STATE_INPUT_INVALID`, naming the field).
 */
import { UhlpError } from '../shared/errors.js';
import {
  MAX_ORACLE_SAMPLE_CHARS,
  MAX_ORACLE_SAMPLES,
  type OracleSampleInput,
  type OracleSampleOptions,
  type OracleSampleScope,
} from './oracle-store.js';

/** Longest key, resource, owner or id accepted; longer ones are almost surely a bug. */
export const MAX_KEY_LENGTH = 1024;

export function checkKey(field: string, value: string): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_KEY_LENGTH) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a string of 1 to ${MAX_KEY_LENGTH} characters`, { field });
  }
}

/** Accepts the empty string (a scan of everything). */
export function checkPrefix(field: string, value: string): void {
  if (typeof value !== 'string' || value.length > MAX_KEY_LENGTH) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a string of at most ${MAX_KEY_LENGTH} characters`, { field });
  }
}

export function checkString(field: string, value: string): void {
  if (typeof value !== 'string') throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a string`, { field });
}

export function checkTtl(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a positive integer of milliseconds, got ${String(value)}`, { field });
  }
}

export function checkPositiveInteger(field: string, value: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!Number.isSafeInteger(value) || value <= 0 || value > max) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be an integer from 1 to ${max}, got ${String(value)}`, { field });
  }
}

export function checkCounterDelta(field: string, value: number): void {
  if (!Number.isSafeInteger(value)) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be an integer, got ${String(value)}`, { field });
  }
}

export function checkStatusCode(field: string, value: number): void {
  if (!Number.isInteger(value) || value < 100 || value > 599) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be an HTTP status 100-599, got ${String(value)}`, { field });
  }
}

/** A UTC day as `YYYY-MM-DD`, the unit of LLM token budgets. */
export function checkDay(field: string, value: string): void {
  if (typeof value !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(value)) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a UTC day as YYYY-MM-DD, got ${JSON.stringify(String(value)).slice(0, 40)}`, { field });
  }
}

export function checkNonNegativeInteger(field: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be an integer of 0 or more, got ${String(value)}`, { field });
  }
}

/** A run record is JSON text the run service made; anything else is a bug worth refusing. */
export function checkRunJson(value: string): void {
  if (typeof value !== 'string' || !value.startsWith('{')) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'a run record is the JSON text of an object', { field: 'json' });
  }
}

/** A JSON text of at most `max` characters (what the stores keep for the oracle). */
export function checkJsonText(field: string, value: string, max: number): void {
  if (typeof value !== 'string' || value.length === 0 || value.length > max) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a string of 1 to ${max} characters`, { field });
  }
}

/** A lower-case hex hash of 16 to 128 digits. */
export function checkHash(field: string, value: string): void {
  if (typeof value !== 'string' || !/^[0-9a-f]{16,128}$/.test(value)) {
    throw new UhlpError('UHLP_STATE_INPUT_INVALID', `${field} must be a hex hash, got ${JSON.stringify(String(value)).slice(0, 40)}`, { field });
  }
}

export function checkOracleScope(scope: OracleSampleScope): void {
  checkKey('appId', scope?.appId);
  checkKey('componentId', scope.componentId);
  checkKey('revision', scope.revision);
}

/** The arguments of addOracleSample, checked the same way by both stores. */
export function checkOracleSample(scope: OracleSampleScope, sample: OracleSampleInput, options: OracleSampleOptions): void {
  checkOracleScope(scope);
  checkHash('inputHash', sample?.inputHash);
  checkHash('outputHash', sample.outputHash);
  checkJsonText('json', sample.json, MAX_ORACLE_SAMPLE_CHARS);
  if (typeof sample.fresh !== 'boolean') throw new UhlpError('UHLP_STATE_INPUT_INVALID', 'fresh must be a boolean', { field: 'fresh' });
  checkPositiveInteger('limit', options?.limit, MAX_ORACLE_SAMPLES);
  checkTtl('ttlMs', options.ttlMs);
  checkNonNegativeInteger('pick', options.pick);
}
