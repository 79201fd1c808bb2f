/**
 * Turns what a component script returned or threw into the `resultType` + `data`
 * of an /execute response. The rules follow the issue and the cs-js runtime
 * document: an object with a numeric `statusCode` is an HTTP response, a thrown
 * error with a string `code` is an application error, anything else is generic.
 */
import type { ErrorData, HttpResponseData, ResultType } from '../../contract/execute-contract.js';
import type { UhlpError } from '../../shared/errors.js';
import { ScriptBadResultError, ScriptExceptionError } from '../../shared/runner-errors.js';
import type { ScriptPlace } from './script-stack.js';

export interface ScriptResult {
  resultType: ResultType;
  data: unknown;
  /** Figures of the runner's own to add to the answer's `metrics` (the llm-orchestrator's template inputs). @defaultValue none */
  metrics?: Record<string, unknown>;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A registry error as the /execute `error` result: its code, message, the registry's status, and its details. */
export function errorResult(error: UhlpError): ScriptResult {
  const data: ErrorData = { code: error.code, message: error.message, status: error.statusCode };
  if (error.details !== undefined) data.details = error.details;
  return { resultType: 'error', data };
}

function toHeaderMap(headers: unknown): Record<string, string | string[]> | undefined {
  if (!isPlainObject(headers)) return undefined;
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || value === null) continue;
    out[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return out;
}

function hasHeader(headers: Record<string, unknown>, name: string): boolean {
  return Object.keys(headers).some((key) => key.toLowerCase() === name);
}

/** Maps a returned value. Never throws. */
export function resultFromValue(value: unknown): ScriptResult {
  if (isPlainObject(value) && typeof value.statusCode === 'number') {
    const statusCode = value.statusCode;
    if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 599) {
      return errorResult(new ScriptBadResultError(`statusCode must be an integer 100-599, got ${statusCode}`));
    }
    const headers = toHeaderMap(value.headers) ?? {};
    let body: string | undefined;
    if (typeof value.body === 'string') {
      body = value.body;
    } else if (value.body !== undefined && value.body !== null) {
      // A structured body is sent as JSON, the common case for handlers written in
      // the Lambda style that forget to stringify.
      const json = safeStringify(value.body);
      if (json === undefined) return errorResult(new ScriptBadResultError('body is not JSON-serializable'));
      body = json;
      if (!hasHeader(headers, 'content-type')) headers['content-type'] = 'application/json; charset=utf-8';
    }
    const data: HttpResponseData = {
      statusCode,
      headers,
      bodyEncoding: value.isBase64Encoded === true ? 'base64' : 'utf8',
    };
    if (body !== undefined) data.body = body;
    return { resultType: 'httpResponse', data };
  }
  const normalized = value === undefined ? null : value;
  if (safeStringify(normalized) === undefined) {
    return errorResult(new ScriptBadResultError('the returned value is not JSON-serializable'));
  }
  return { resultType: 'generic', data: normalized };
}

/**
 * Maps a thrown value. Never throws. A script exception (no string `code` of its
 * own) carries where it was thrown when the script's `place` is known: the frames
 * of the script's files (`stack`), its message with the place's paths made
 * relative and bounded. An app's own error (a string `code`) is answered as the
 * app made it.
 */
export function resultFromThrown(thrown: unknown, place?: ScriptPlace): ScriptResult {
  if (isPlainObject(thrown) || thrown instanceof Error) {
    const error = thrown as Record<string, unknown>;
    const message = typeof error.message === 'string' ? error.message : String(thrown);
    if (typeof error.code === 'string' && error.code.length > 0) {
      const status = typeof error.status === 'number' ? error.status : typeof error.statusCode === 'number' ? error.statusCode : undefined;
      const details = error.details !== undefined && safeStringify(error.details) !== undefined ? error.details : undefined;
      const data: ErrorData = { code: error.code, message };
      if (details !== undefined) data.details = details;
      if (status !== undefined && Number.isInteger(status)) data.status = status;
      return { resultType: 'error', data };
    }
    return scriptException(message, thrown, place);
  }
  return scriptException(`the script threw ${typeof thrown === 'string' ? JSON.stringify(thrown) : String(thrown)}`, thrown, place);
}

function scriptException(message: string, thrown: unknown, place: ScriptPlace | undefined): ScriptResult {
  const result = errorResult(new ScriptExceptionError(place === undefined ? message : place.message(message)));
  const stack = place?.stackOf(thrown);
  if (stack !== undefined) (result.data as ErrorData).stack = stack;
  return result;
}

function safeStringify(value: unknown): string | undefined {
  try {
    return JSON.stringify(value);
  } catch {
    return undefined;
  }
}
