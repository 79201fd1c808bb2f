/**
 * The std-body web endpoint (`tool.web.fetch` / `cap.std.web.fetch`), following
 * the body-endpoints document's algorithm: parse, check the scheme, clamp
 * limits, fetch, and map timeout / transport error / response to outcomes. An
 * HTTP error status is still an `applied` fetch. The fetch itself is the
 * guarded fetch, so the app's web policy (passed in the payload by the core,
 * with the narrower host list a caller may add: `narrowHosts`) and the
 * private-address refusal hold on every redirect hop.
 */
import { randomUUID } from 'node:crypto';
import { isUhlpError } from '../shared/errors.js';
import { type GuardedFetchDependencies, type WebPolicy, guardedFetch } from '../net/guarded-fetch.js';
import type { EgressCredential } from '../net/egress-credentials.js';
import type { EndpointOutcome } from '../spine/spine-protocol.js';
import { type ParsedPayload, type PayloadError, clampLimit, invalid, isObject } from './payload-fields.js';

export const WEB_AFFORDANCE = 'tool.web.fetch';
export const WEB_CAPABILITY = 'cap.std.web.fetch';

/** Hard limits: a payload may ask for less, never for more. */
export const WEB_LIMITS = Object.freeze({
  defaultTimeoutMs: 10_000,
  maxTimeoutMs: 60_000,
  defaultBodyBytes: 1024 * 1024,
  maxBodyBytes: 10 * 1024 * 1024,
  defaultRedirects: 5,
  maxRedirects: 10,
  maxRequestBodyBytes: 1024 * 1024,
});

/** A validated fetch request: what to fetch and the policy it must obey, limits clamped. */
export interface WebFetchRequest {
  readonly url: URL;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly policy: WebPolicy & { timeoutMs: number; maxBodyBytes: number; maxRedirects: number };
}

const METHOD = /^[A-Za-z]{1,16}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,256}$/;

export function parseWebFetchRequest(payload: unknown): ParsedPayload<WebFetchRequest> | { ok: false; unsupportedScheme: string } {
  if (!isObject(payload)) return invalid('payload', 'payload must be an object');
  const rawUrl = payload['url'];
  if (typeof rawUrl !== 'string' || rawUrl === '') return invalid('url', 'url must be a non-empty string');
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return invalid('url', 'url is not a valid absolute URL');
  }
  const method = payload['method'] ?? 'GET';
  if (typeof method !== 'string' || !METHOD.test(method)) return invalid('method', 'method must be an HTTP method name');

  const headers: Record<string, string> = {};
  const rawHeaders = payload['headers'];
  if (rawHeaders !== undefined) {
    if (!isObject(rawHeaders)) return invalid('headers', 'headers must be an object of strings');
    for (const [name, value] of Object.entries(rawHeaders)) {
      if (!HEADER_NAME.test(name)) return invalid(`headers.${name}`, 'not a valid header name');
      if (typeof value !== 'string' || /[\r\n\0]/.test(value)) return invalid(`headers.${name}`, 'header values must be strings without CR, LF or NUL');
      headers[name] = value;
    }
  }
  const body = payload['body'];
  if (body !== undefined && typeof body !== 'string') return invalid('body', 'body must be a string');
  if (body !== undefined && Buffer.byteLength(body) > WEB_LIMITS.maxRequestBodyBytes) {
    return invalid('body', `body is over ${WEB_LIMITS.maxRequestBodyBytes} bytes`);
  }

  const lists: Partial<Record<'allowHosts' | 'narrowHosts' | 'methods' | 'allowPrivate', string[]>> = {};
  for (const field of ['allowHosts', 'narrowHosts', 'methods', 'allowPrivate'] as const) {
    const value = payload[field];
    if (value === undefined) continue;
    if (!Array.isArray(value) || !value.every((entry) => typeof entry === 'string')) return invalid(field, `${field} must be an array of strings`);
    lists[field] = value as string[];
  }

  const inject = parseCredentials(payload['inject']);
  if (inject !== undefined && !Array.isArray(inject)) return inject;

  // Step 2 of the algorithm: the scheme is checked before anything is clamped or fetched.
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, unsupportedScheme: url.protocol.slice(0, -1) };

  const timeoutMs = clampLimit(payload, 'timeoutMs', WEB_LIMITS.defaultTimeoutMs, 1, WEB_LIMITS.maxTimeoutMs);
  if (!timeoutMs.ok) return timeoutMs;
  const maxBodyBytes = clampLimit(payload, 'maxBodyBytes', WEB_LIMITS.defaultBodyBytes, 0, WEB_LIMITS.maxBodyBytes);
  if (!maxBodyBytes.ok) return maxBodyBytes;
  const maxRedirects = clampLimit(payload, 'maxRedirects', WEB_LIMITS.defaultRedirects, 0, WEB_LIMITS.maxRedirects);
  if (!maxRedirects.ok) return maxRedirects;

  return {
    ok: true,
    request: {
      url,
      method: method.toUpperCase(),
      headers,
      ...(body !== undefined ? { body } : {}),
      policy: { ...lists, ...(inject !== undefined ? { inject } : {}), timeoutMs: timeoutMs.request, maxBodyBytes: maxBodyBytes.request, maxRedirects: maxRedirects.request },
    },
  };
}

/**
 * The credentials the core resolved for this fetch (never the script: the core
 * builds this payload). A malformed one is a payload error that does not quote it.
 */
function parseCredentials(raw: unknown): EgressCredential[] | { ok: false; error: PayloadError } | undefined {
  if (raw === undefined) return undefined;
  const bad = (i: number): { ok: false; error: PayloadError } => invalid(`inject.${i}`, 'not a credential');
  if (!Array.isArray(raw)) return invalid('inject', 'inject must be an array');
  const out: EgressCredential[] = [];
  for (const [i, entry] of raw.entries()) {
    if (!isObject(entry)) return bad(i);
    const { origin, pathPrefix, methods, header, query, value } = entry;
    if (typeof origin !== 'string' || typeof value !== 'string' || /[\r\n\0]/.test(value)) return bad(i);
    if ((typeof header === 'string') === (typeof query === 'string')) return bad(i);
    if (pathPrefix !== undefined && typeof pathPrefix !== 'string') return bad(i);
    if (methods !== undefined && (!Array.isArray(methods) || !methods.every((m) => typeof m === 'string'))) return bad(i);
    out.push({
      origin,
      value,
      ...(typeof header === 'string' ? { header } : { query: query as string }),
      ...(pathPrefix !== undefined ? { pathPrefix } : {}),
      ...(methods !== undefined ? { methods: methods as string[] } : {}),
    });
  }
  return out;
}

/** Runs a validated request. Never rejects: every failure is a `rejected` outcome. */
export async function runWebFetch(request: WebFetchRequest, dependencies: GuardedFetchDependencies = {}): Promise<EndpointOutcome> {
  try {
    const response = await guardedFetch(
      { url: request.url.href, method: request.method, headers: request.headers, ...(request.body !== undefined ? { body: request.body } : {}) },
      request.policy,
      dependencies,
    );
    const { body, bodyEncoding } = encodeBody(response.body, response.truncated);
    return {
      outcome: 'applied',
      referenceId: `web-${randomUUID()}`,
      observation: {
        status: response.status,
        headers: response.headers,
        body,
        bodyEncoding,
        truncated: response.truncated,
        url: response.url,
        redirects: response.redirects,
        // Which credentials went out (by index), so the core can record their names and versions, never a value.
        ...(response.injected.length > 0 ? { injected: response.injected } : {}),
      },
    };
  } catch (error) {
    if (!isUhlpError(error)) {
      return { outcome: 'rejected', reason: 'network_error', observation: { code: 'UHLP_WEB_NETWORK_ERROR', message: String(error) } };
    }
    const observation = { code: error.code, message: error.message, details: error.details };
    switch (error.code) {
      case 'UHLP_WEB_TIMEOUT':
        return { outcome: 'rejected', reason: 'timeout', observation };
      case 'UHLP_WEB_UNSUPPORTED_SCHEME':
        return { outcome: 'rejected', reason: 'unsupported_scheme', observation };
      case 'UHLP_WEB_INVALID_URL':
        // Only a redirect's Location can get here: the payload's URL was parsed already.
        return { outcome: 'rejected', reason: 'network_error', observation };
      case 'UHLP_WEB_HOST_NOT_ALLOWED':
      case 'UHLP_WEB_METHOD_NOT_ALLOWED':
      case 'UHLP_WEB_ADDRESS_NOT_ALLOWED':
        return { outcome: 'rejected', reason: 'refused', observation };
      default:
        return { outcome: 'rejected', reason: 'network_error', observation };
    }
  }
}

/** The route handler: parse, then run. */
export async function handleWebFetch(payload: unknown, dependencies: GuardedFetchDependencies = {}): Promise<EndpointOutcome> {
  const parsed = parseWebFetchRequest(payload);
  if (!parsed.ok) {
    if ('unsupportedScheme' in parsed) {
      return {
        outcome: 'rejected',
        reason: 'unsupported_scheme',
        observation: { code: 'UHLP_WEB_UNSUPPORTED_SCHEME', message: `scheme ${parsed.unsupportedScheme} is not http or https` },
      };
    }
    return { outcome: 'rejected', reason: 'invalid_payload', observation: parsed.error };
  }
  return runWebFetch(parsed.request, dependencies);
}

/**
 * Text when the bytes are UTF-8, base64 otherwise. A truncated body may end in
 * the middle of a character; that tail does not make the rest binary.
 */
export function encodeBody(bytes: Buffer, truncated: boolean): { body: string; bodyEncoding: 'utf8' | 'base64' } {
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: truncated });
    return { body: text, bodyEncoding: 'utf8' };
  } catch {
    return { body: bytes.toString('base64'), bodyEncoding: 'base64' };
  }
}
