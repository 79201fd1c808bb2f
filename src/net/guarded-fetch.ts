/**
 * The one HTTP client behind the web capability. It refuses what an app's web
 * policy does not allow and, above all, refuses to be a proxy into the
 * machine's own network (SSRF): names are resolved here, every resolved address
 * must be public unless the exact `host:port` is listed in `allowPrivate`, and
 * the connection is made to the address that was checked (a pinned lookup), so
 * a DNS answer that changes between check and connect (rebinding) cannot slip
 * through. Redirects are followed by hand and every hop is checked again.
 */
import type net from 'node:net';
import { Agent, request } from 'undici';
import { deadlineSignal } from '../shared/deadline.js';
import { UhlpError } from '../shared/errors.js';
import { defaultLookup, refusedAddress, resolveHost, type LookupAll, type ResolvedAddress } from './address-guard.js';
import { bareHost, hostMatches } from '../shared/host-pattern.js';
import { withCredentials, type EgressCredential } from './egress-credentials.js';

export type { LookupAll, ResolvedAddress } from './address-guard.js';

/** What an app's `capabilities.web` allows, plus per-call limits. */
export interface WebPolicy {
  /**
   * Hosts that may be fetched: exact names or IP literals (case-insensitive), or
   * `*.example.com` for any subdomain. Checked on every redirect hop.
   * @defaultValue undefined: any host (the address check still applies)
   */
  readonly allowHosts?: readonly string[];
  /**
   * A narrower allowlist the caller asked for (a cs-js function's manifest
   * `http.allowHosts`): a hop must match it as well as `allowHosts`, so it can
   * only take hosts away. Checked on every redirect hop.
   * @defaultValue undefined: `allowHosts` alone
   */
  readonly narrowHosts?: readonly string[];
  /**
   * HTTP methods that may be used, upper case.
   * @defaultValue ['GET', 'HEAD']
   */
  readonly methods?: readonly string[];
  /**
   * `host:port` pairs (`[::1]:8080` for IPv6) that may resolve to non-public
   * addresses: for tests and internal services. Matched against the URL's host
   * and against each resolved address; a cloud-metadata address is reachable
   * only when listed as an address, never through a listed name.
   * @defaultValue []
   */
  readonly allowPrivate?: readonly string[];
  /**
   * Budget for the whole fetch: DNS, redirects and the body included.
   * @defaultValue 10000
   */
  readonly timeoutMs?: number;
  /**
   * Bytes of the response body kept; the rest is not read and `truncated` is set.
   * @defaultValue 1048576
   */
  readonly maxBodyBytes?: number;
  /**
   * Redirects followed before UHLP_WEB_TOO_MANY_REDIRECTS.
   * @defaultValue 5
   */
  readonly maxRedirects?: number;
  /**
   * Credentials added to the hops they match, after every check of the hop,
   * never to a hop of another origin (egress-credentials.ts).
   * @defaultValue none
   */
  readonly inject?: readonly EgressCredential[];
}

export interface GuardedRequest {
  readonly url: string;
  /** @defaultValue 'GET' */
  readonly method?: string;
  /** Request headers. Hop-by-hop and framing headers (host, connection, content-length, ...) are dropped. */
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string | Uint8Array;
  /** Aborts the fetch; the signal's reason is thrown. */
  readonly signal?: AbortSignal;
}

export interface GuardedResponse {
  readonly status: number;
  /** Response headers, lower-case names; repeated headers joined with ", ". */
  readonly headers: Record<string, string>;
  /** At most `maxBodyBytes` bytes. */
  readonly body: Buffer;
  /** True when the body was longer than `maxBodyBytes`. */
  readonly truncated: boolean;
  /** The URL that answered, after redirects. */
  readonly url: string;
  /** Every redirect target followed, in order. */
  readonly redirects: string[];
  /** The IP address the final response came from. */
  readonly address: string;
  /** Indexes of the policy's `inject` credentials some hop carried. */
  readonly injected: number[];
}

export interface GuardedFetchDependencies {
  /**
   * DNS resolution. Tests inject names that resolve to loopback here instead of
   * editing /etc/hosts.
   * @defaultValue dns.lookup with `all: true`
   */
  readonly lookup?: LookupAll;
}

export const WEB_DEFAULTS = Object.freeze({
  methods: Object.freeze(['GET', 'HEAD']),
  timeoutMs: 10_000,
  maxBodyBytes: 1024 * 1024,
  maxRedirects: 5,
});

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
/** Headers the client owns: letting a caller set them would break framing or aim at another virtual host. */
const DROPPED_HEADERS = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect']);
/** Credentials that must not follow a redirect to another origin. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'cookie', 'proxy-authorization']);

export async function guardedFetch(
  input: GuardedRequest,
  policy: WebPolicy = {},
  dependencies: GuardedFetchDependencies = {},
): Promise<GuardedResponse> {
  const lookup = dependencies.lookup ?? defaultLookup;
  const methods = (policy.methods ?? WEB_DEFAULTS.methods).map((method) => method.toUpperCase());
  const timeoutMs = policy.timeoutMs ?? WEB_DEFAULTS.timeoutMs;
  const maxBodyBytes = policy.maxBodyBytes ?? WEB_DEFAULTS.maxBodyBytes;
  const maxRedirects = policy.maxRedirects ?? WEB_DEFAULTS.maxRedirects;

  const signal = deadlineSignal(timeoutMs, input.signal);
  const redirects: string[] = [];
  let url = parseUrl(input.url);
  let method = (input.method ?? 'GET').toUpperCase();
  let body = input.body;
  let headers = cleanHeaders(input.headers ?? {});
  const injected = new Set<number>();

  for (;;) {
    checkUrl(url, policy);
    if (!methods.includes(method)) {
      throw refusal('UHLP_WEB_METHOD_NOT_ALLOWED', `method ${method} is not allowed by the web capability`, { method, allowed: methods });
    }
    const addresses = await run(signal, input.signal, url, () => resolveChecked(url, policy, lookup, signal));
    const agent = pinnedAgent(addresses);
    // Last: the hop passed every check above before it may carry a credential.
    const hop = withCredentials(url, method, headers, policy.inject);
    for (const index of hop.applied) injected.add(index);
    try {
      const response = await run(signal, input.signal, url, () =>
        request(hop.url, { method: method as 'GET', headers: hop.headers, body: body ?? null, dispatcher: agent, signal }),
      );
      const location = response.headers['location'];
      if (REDIRECT_STATUSES.has(response.statusCode) && typeof location === 'string') {
        await response.body.dump().catch(() => {});
        const next = parseUrl(location, url);
        redirects.push(next.href);
        if (redirects.length > maxRedirects) {
          throw new UhlpError('UHLP_WEB_TOO_MANY_REDIRECTS', `more than ${maxRedirects} redirects`, { redirects });
        }
        // Browsers' rules: 303 always, and 301/302 after a POST, become a GET without a body.
        if (response.statusCode === 303 || ((response.statusCode === 301 || response.statusCode === 302) && method === 'POST')) {
          if (method !== 'HEAD') method = 'GET';
          body = undefined;
          headers = withoutHeaders(headers, ['content-type']);
        }
        if (next.origin !== url.origin) headers = withoutHeaders(headers, [...CREDENTIAL_HEADERS]);
        url = next;
        continue;
      }
      const { bytes, truncated } = await run(signal, input.signal, url, () => readCapped(response.body, maxBodyBytes));
      return {
        status: response.statusCode,
        headers: flattenHeaders(response.headers),
        body: bytes,
        truncated,
        url: url.href,
        redirects,
        address: addresses[0]?.address ?? '',
        injected: [...injected],
      };
    } finally {
      agent.destroy().catch(() => {});
    }
  }
}

function parseUrl(text: string, base?: URL): URL {
  try {
    return new URL(text, base);
  } catch {
    throw new UhlpError('UHLP_WEB_INVALID_URL', base === undefined ? 'url is not a valid URL' : 'redirect Location is not a valid URL', {
      field: 'url',
      url: text.slice(0, 2048),
    });
  }
}

function checkUrl(url: URL, policy: WebPolicy): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UhlpError('UHLP_WEB_UNSUPPORTED_SCHEME', `scheme ${url.protocol.slice(0, -1)} is not http or https`, {
      field: 'url',
      scheme: url.protocol.slice(0, -1),
    });
  }
  const host = bareHost(url.hostname);
  if (policy.allowHosts !== undefined && !policy.allowHosts.some((pattern) => hostMatches(host, pattern))) {
    throw refusal('UHLP_WEB_HOST_NOT_ALLOWED', `host ${host} is not allowed by the web capability`, { host });
  }
  if (policy.narrowHosts !== undefined && !policy.narrowHosts.some((pattern) => hostMatches(host, pattern))) {
    throw refusal('UHLP_WEB_HOST_NOT_ALLOWED', `host ${host} is not in the allowlist this fetch was narrowed to`, { host, narrowed: true });
  }
}

async function resolveChecked(url: URL, policy: WebPolicy, lookup: LookupAll, signal: AbortSignal): Promise<ResolvedAddress[]> {
  const host = bareHost(url.hostname);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const addresses = await abortable(resolveHost(host, lookup), signal);
  if (addresses.length === 0) {
    throw new UhlpError('UHLP_WEB_NETWORK_ERROR', `host ${host} resolved to no address`, { host, cause: 'ENOTFOUND' });
  }
  const refused = refusedAddress(host, port, addresses, policy.allowPrivate);
  if (refused) {
    throw refusal('UHLP_WEB_ADDRESS_NOT_ALLOWED', `host ${host} resolves to a ${refused.addressClass} address, which the web capability refuses`, { ...refused });
  }
  return addresses;
}

/**
 * An agent whose connections can only go to the vetted addresses: undici hands
 * the host name to net/tls.connect (so TLS still checks the certificate against
 * the name), and this lookup answers it with the addresses checked above.
 */
function pinnedAgent(addresses: ResolvedAddress[]): Agent {
  const pinned = (
    _hostname: string,
    options: { all?: boolean },
    callback: (error: Error | null, address: string | ResolvedAddress[], family?: number) => void,
  ): void => {
    if (options.all === true) callback(null, addresses);
    else callback(null, addresses[0]?.address ?? '', addresses[0]?.family ?? 4);
  };
  return new Agent({ connect: { lookup: pinned as unknown as net.LookupFunction }, connections: 1, pipelining: 0 });
}

async function readCapped(stream: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number): Promise<{ bytes: Buffer; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size + chunk.length > maxBytes) {
      chunks.push(chunk.subarray(0, maxBytes - size));
      size = maxBytes;
      stream.destroy();
      return { bytes: Buffer.concat(chunks, size), truncated: true };
    }
    chunks.push(chunk);
    size += chunk.length;
  }
  return { bytes: Buffer.concat(chunks, size), truncated: false };
}

/**
 * Runs one step of the fetch and turns what undici throws into our codes. The
 * signals are read, not the error: undici wraps aborts in several ways.
 */
async function run<T>(signal: AbortSignal, callerSignal: AbortSignal | undefined, url: URL, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof UhlpError) throw error;
    if (callerSignal?.aborted === true) throw callerSignal.reason;
    if (signal.aborted) throw new UhlpError('UHLP_WEB_TIMEOUT', `fetch of ${url.host} timed out`, { host: url.host });
    const cause = error as { code?: unknown; cause?: { code?: unknown }; message?: unknown };
    const code = typeof cause.cause?.code === 'string' ? cause.cause.code : typeof cause.code === 'string' ? cause.code : 'UNKNOWN';
    throw new UhlpError('UHLP_WEB_NETWORK_ERROR', `fetch of ${url.host} failed: ${code}`, { host: url.host, cause: code }, { cause: error });
  }
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

function refusal(code: 'UHLP_WEB_HOST_NOT_ALLOWED' | 'UHLP_WEB_METHOD_NOT_ALLOWED' | 'UHLP_WEB_ADDRESS_NOT_ALLOWED', message: string, details: Record<string, unknown>): UhlpError {
  // `capability` lets the caller count the refusal and write it to the ledger without a code table.
  return new UhlpError(code, message, { capability: 'web', ...details });
}



function cleanHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const clean: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (!DROPPED_HEADERS.has(lower) && !lower.startsWith('proxy-connection')) clean[lower] = value;
  }
  return clean;
}

function withoutHeaders(headers: Record<string, string>, names: readonly string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !names.includes(name)));
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  return flat;
}
