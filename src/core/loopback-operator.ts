/**
 * Who the core's /_uhlp operator routes trust without a credential: a client
 * on loopback (the `uhlp` command on the same machine) — but not a browser
 * page of another site that the operator has open on that machine. Such a page
 * can send a POST to 127.0.0.1 with no preflight (a "simple" request: a form
 * or a text/plain body), and would act with the operator's trust (CSRF). A
 * browser says where a request comes from (`Sec-Fetch-Site`, `Origin`); the
 * CLI sends neither.
 *
 * Comparing `Origin` with `Host` proves nothing when the Host is whatever a
 * page's own name resolves to: a DNS-rebinding page at `rebind.example:P`, its
 * name now pointing at 127.0.0.1, is "same-origin" with itself. So local trust
 * begins with the Host: a loopback address, `localhost`, or a name the operator
 * configured (UHLP_OPERATOR_HOSTS), checked for every operator route before any
 * handler runs (route-audience.ts), which alone applies these checks: no
 * feature calls them.
 */
import net from 'node:net';
import type { FastifyRequest } from 'fastify';

/** Whether a client address is loopback (IPv4 127/8, ::1, or IPv4 mapped in IPv6). */
export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const bare = address.startsWith('::ffff:') ? address.slice(7) : address;
  return bare === '::1' || (net.isIPv4(bare) && bare.startsWith('127.'));
}

/** Why a request comes from a page of another site, or undefined when it does not. */
export function anotherSite(request: Pick<FastifyRequest, 'headers'>): string | undefined {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return `Sec-Fetch-Site is ${String(site).slice(0, 32)}`;
  const origin = request.headers.origin;
  if (origin === undefined) return undefined;
  let host: string | undefined;
  try {
    host = new URL(origin).host;
  } catch {
    host = undefined;
  }
  return host !== undefined && host === request.headers.host ? undefined : `Origin ${String(origin).slice(0, 128)} is not this core's`;
}

/**
 * Whether a Host header names this machine as its operator would: a loopback
 * address (`127.x.y.z`, `[::1]`), `localhost`, or one of `configured` (lower
 * case, no port), with or without a port. Anything else (another name, an empty
 * or a malformed header) is not.
 */
export function isLocalHost(host: string | undefined, configured: readonly string[]): boolean {
  if (host === undefined) return false;
  const match = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::(\d{1,5}))?$/i.exec(host);
  if (match === null) return false;
  const name = match[1]!.toLowerCase();
  if (name === 'localhost' || name === '[::1]') return true;
  if (net.isIPv4(name)) return name.startsWith('127.');
  return configured.includes(name);
}
