/**
 * The connection pool of an app's own model server (spec.llm.endpoint): every
 * connection resolves the host here and refuses it unless every address is
 * public or the operator listed the exact host:port (UHLP_LLM_ALLOW_PRIVATE),
 * the rule of the web capability's guarded fetch. The check runs at connect
 * time, not only at load, so a DNS answer that changes later (rebinding) cannot
 * aim the app's key at the core's own listeners or a metadata endpoint. The
 * provider follows no redirects, so there is no other hop to check.
 */
import net from 'node:net';
import { Agent, buildConnector } from 'undici';
import { defaultLookup, refusedAddress, resolveHost, type LookupAll, type ResolvedAddress } from '../net/address-guard.js';
import { UhlpError } from '../shared/errors.js';

export interface GuardedLlmDispatcherOptions {
  /** host:port pairs that may resolve to non-public addresses. @defaultValue [] */
  readonly allowPrivate?: readonly string[];
  /** DNS resolution; tests answer names with loopback here. @defaultValue dns.lookup, all addresses */
  readonly lookup?: LookupAll;
}

/** The code an app's model call fails with when its endpoint resolves where it may not go. */
export const ENDPOINT_REFUSED = 'UHLP_LLM_ENDPOINT_NOT_ALLOWED';

export function guardedLlmDispatcher(endpoint: URL, options: GuardedLlmDispatcherOptions = {}): Agent {
  const lookup = options.lookup ?? defaultLookup;
  const port = endpoint.port === '' ? (endpoint.protocol === 'https:' ? 443 : 80) : Number(endpoint.port);
  const checked = async (hostname: string): Promise<ResolvedAddress[]> => {
    const addresses = await resolveHost(hostname, lookup);
    if (addresses.length === 0) throw Object.assign(new Error(`host ${hostname} resolved to no address`), { code: 'ENOTFOUND' });
    const refused = refusedAddress(hostname, port, addresses, options.allowPrivate);
    if (refused !== undefined) {
      throw new UhlpError(ENDPOINT_REFUSED, `the app's model endpoint ${hostname} resolves to a ${refused.addressClass} address, which is refused`, { ...refused });
    }
    return addresses;
  };
  // undici hands net/tls.connect the host name (TLS still checks the certificate
  // against it) and this lookup answers with the addresses checked just now.
  const guardedLookup = (
    hostname: string,
    lookupOptions: { all?: boolean },
    callback: (error: Error | null, address: string | ResolvedAddress[], family?: number) => void,
  ): void => {
    checked(hostname).then(
      (addresses) => (lookupOptions.all === true ? callback(null, addresses) : callback(null, addresses[0]!.address, addresses[0]!.family)),
      (error: Error) => callback(error, ''),
    );
  };
  const connector = buildConnector({ lookup: guardedLookup as unknown as net.LookupFunction } as buildConnector.BuildOptions);
  // net.connect never looks an IP literal up: such a host is checked here first.
  const connect: buildConnector.connector = (connectOptions, callback) => {
    if (net.isIP(connectOptions.hostname.replace(/^\[|\]$/g, '')) === 0) return connector(connectOptions, callback);
    checked(connectOptions.hostname).then(
      () => connector(connectOptions, callback),
      (error: Error) => callback(error, null),
    );
  };
  return new Agent({ connect });
}

/**
 * What is wrong with an endpoint URL before any connection: its scheme, any
 * credentials, query or fragment, and an IP literal that is refused. Without `allowPrivate` (validation, which does not know the
 * operator's list) only a metadata or link-local literal is refused here, as no
 * operator allowance of a name can make one reachable; every address is checked
 * again on every connection.
 */
export function endpointUrlProblem(url: string, allowPrivate?: readonly string[]): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'UHLP_LLM_ENDPOINT_INVALID: not a URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `UHLP_LLM_ENDPOINT_INVALID: scheme ${parsed.protocol} is not http or https`;
  if (parsed.username !== '' || parsed.password !== '') return 'UHLP_LLM_ENDPOINT_INVALID: credentials belong in spec.llm.endpoint.secret, not in the URL';
  if (parsed.search !== '' || parsed.hash !== '') return 'UHLP_LLM_ENDPOINT_INVALID: no query or fragment';
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const port = parsed.port === '' ? (parsed.protocol === 'https:' ? 443 : 80) : Number(parsed.port);
  // A name (localhost included) is judged when it is resolved, on every connection.
  const family = net.isIP(host);
  if (family === 0) return undefined;
  const refused = refusedAddress(host, port, [{ address: host, family }], allowPrivate ?? []);
  if (refused === undefined) return undefined;
  if (allowPrivate === undefined && refused.addressClass !== 'cloud-metadata' && refused.addressClass !== 'link-local') return undefined;
  return `${ENDPOINT_REFUSED}: ${host} is a ${refused.addressClass} address; the operator may allow ${host}:${port} in UHLP_LLM_ALLOW_PRIVATE`;
}
