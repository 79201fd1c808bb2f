/**
 * The SSRF rule shared by everything the core fetches for someone else (an app's
 * `tool.web.fetch`, an app's Git source): a host is resolved once, here, and
 * every address it resolves to must be public, unless the exact `host:port` (or
 * `address:port`) is listed as allowed. The caller then connects to exactly
 * these addresses, so a DNS answer that changes between check and connect
 * (rebinding) cannot move the connection.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import net from 'node:net';
import { classifyAddress, type AddressClass } from './address-classifier.js';
import { bareHost } from '../shared/host-pattern.js';

export interface ResolvedAddress {
  readonly address: string;
  readonly family: number;
}

/** Resolves a host name to all of its addresses. */
export type LookupAll = (hostname: string) => Promise<ResolvedAddress[]>;

export const defaultLookup: LookupAll = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

export interface AddressRefusal {
  readonly host: string;
  readonly port: number;
  readonly address: string;
  readonly addressClass: AddressClass;
}

/** `host:port`, with brackets around an IPv6 address: the form allow lists use. */
export function hostPort(host: string, port: number): string {
  return net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The addresses of a host: an IP literal is its own address; a name is looked up. */
export async function resolveHost(hostname: string, lookup: LookupAll = defaultLookup): Promise<ResolvedAddress[]> {
  const host = bareHost(hostname);
  const family = net.isIP(host);
  return family !== 0 ? [{ address: host, family }] : lookup(host);
}

/**
 * The first address of `addresses` that may not be reached on `port`, or
 * undefined when every one may. Every address must pass, not just one: the
 * connection may use any of them.
 */
export function refusedAddress(hostname: string, port: number, addresses: readonly ResolvedAddress[], allowPrivate: readonly string[] = []): AddressRefusal | undefined {
  const host = bareHost(hostname);
  const allowed = new Set(allowPrivate.map((entry) => entry.toLowerCase()));
  const hostAllowed = allowed.has(hostPort(host, port));
  for (const { address } of addresses) {
    const addressClass = classifyAddress(address);
    const addressAllowed = allowed.has(hostPort(address, port));
    // A metadata endpoint hands out cloud credentials: listing a host name is not
    // enough (its DNS could be pointed there), only the address itself is.
    const nameAllowed = hostAllowed && addressClass !== 'cloud-metadata';
    if (addressClass === 'public' || nameAllowed || addressAllowed) continue;
    return { host, port, address, addressClass };
  }
  return undefined;
}
