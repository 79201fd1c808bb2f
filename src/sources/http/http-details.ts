/**
 * Normalizes an incoming HTTP request into the contract's `httpDetails`. The
 * body is passed byte for byte: as UTF-8 text when it is valid UTF-8, else as
 * base64, so binary uploads survive the JSON hop to the sandbox.
 *
 * The request data is built with every object's keys in code-unit order, so its
 * JSON.stringify text is its canonical JSON (shared/canonical-json.ts): the text
 * the sandbox gets is the text the turn ledger hashes, and it is written once.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { HttpDetails, HttpMethod, RequestData } from '../../contract/execute-contract.js';
import { UhlpError } from '../../shared/errors.js';

/** The query's parameters, keys in code-unit order; a repeated key becomes an array of its values. */
export function parseQuery(query: string): Record<string, string | string[]> {
  if (!query) return {};
  // No prototype: `?constructor=1` or `?__proto__=1` are parameters like any other.
  const out: Record<string, string | string[]> = Object.create(null);
  for (const [key, value] of new URLSearchParams(query)) {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  }
  return sortedKeys(out);
}

/** Headers as strings (repeats joined with ", "), names in code-unit order. */
export function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const name of Object.keys(headers).sort()) {
    const value = headers[name];
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** A copy with its keys in code-unit order (what canonical JSON writes them in). */
function sortedKeys<T>(record: Readonly<Record<string, T>>): Record<string, T> {
  const keys = Object.keys(record);
  if (keys.length < 2) return record;
  const out: Record<string, T> = Object.create(null);
  for (const key of keys.sort()) out[key] = record[key]!;
  return out;
}

export interface HttpDetailsInput {
  method: string;
  /** The path the app routes on, and the query string of the request. */
  appPath: string;
  query: string;
  routePattern: string;
  pathParameters: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: Buffer | undefined;
}

/** The `httpDetails` of a request; its keys (and those of every map in it) are in code-unit order. */
export function buildHttpDetails(input: HttpDetailsInput): HttpDetails {
  const body = input.body;
  const utf8 = body === undefined || body.length === 0 || isUtf8(body);
  // Written in code-unit order of the keys: see the module comment.
  return {
    body: body === undefined ? '' : utf8 ? body.toString('utf8') : body.toString('base64'),
    bodyEncoding: utf8 ? 'utf8' : 'base64',
    headers: flattenHeaders(input.headers),
    method: input.method as HttpMethod,
    path: input.query ? `${input.appPath}?${input.query}` : input.appPath,
    pathParameters: sortedKeys(input.pathParameters),
    queryParameters: parseQuery(input.query),
    routePattern: input.routePattern,
  };
}

/** The JSON text of an HTTP request's request data, which is also its canonical JSON. */
export function httpRequestDataJson(input: HttpDetailsInput): string {
  const data: RequestData = { httpDetails: buildHttpDetails(input), source: 'http' };
  return JSON.stringify(data);
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Accepts a client's X-Request-ID when it is short visible ASCII; otherwise the core makes one. */
export function acceptRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined;
}

export function badPathError(segment: string): UhlpError {
  return new UhlpError('UHLP_BAD_REQUEST', `path segment "${segment}" is not valid percent-encoding`, { field: 'path' });
}
