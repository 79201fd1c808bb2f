/**
 * Normalizes an incoming HTTP request into the contract's `httpDetails`. The
 * body is passed byte for byte: as UTF-8 text when it is valid UTF-8, else as
 * base64, so binary uploads survive the JSON hop to the sandbox.
 */
import { isUtf8 } from 'node:buffer';
import type { IncomingHttpHeaders } from 'node:http';
import type { HttpDetails, HttpMethod } from '../contract/execute-contract.js';
import { UhlpError } from '../errors.js';

export interface SplitUrl {
  path: string;
  /** Without the leading `?`; empty when there is none. */
  query: string;
}

export function splitUrl(url: string): SplitUrl {
  const q = url.indexOf('?');
  const hash = url.indexOf('#');
  const end = hash === -1 ? url.length : hash;
  return q === -1 || q > end ? { path: url.slice(0, end), query: '' } : { path: url.slice(0, q), query: url.slice(q + 1, end) };
}

export function parseQuery(query: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  if (!query) return out;
  for (const [key, value] of new URLSearchParams(query)) {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  }
  return out;
}

export function flattenHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
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

export function buildHttpDetails(input: HttpDetailsInput): HttpDetails {
  const body = input.body ?? Buffer.alloc(0);
  const utf8 = isUtf8(body);
  return {
    method: input.method as HttpMethod,
    path: input.query ? `${input.appPath}?${input.query}` : input.appPath,
    routePattern: input.routePattern,
    pathParameters: input.pathParameters,
    queryParameters: parseQuery(input.query),
    headers: flattenHeaders(input.headers),
    body: utf8 ? body.toString('utf8') : body.toString('base64'),
    bodyEncoding: utf8 ? 'utf8' : 'base64',
  };
}

const REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** Accepts a client's X-Request-ID when it is short visible ASCII; otherwise the core makes one. */
export function acceptRequestId(header: string | string[] | undefined): string | undefined {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : undefined;
}

export function badPathError(segment: string): UhlpError {
  return new UhlpError('UHLP_BAD_REQUEST', `path segment "${segment}" is not valid percent-encoding`, { field: 'path' });
}
