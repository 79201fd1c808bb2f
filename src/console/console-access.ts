/**
 * Who is asking the console, and may they. Like the other /_uhlp operator
 * routes the console answers loopback clients (as an operator) and nobody
 * else, unless console tokens are configured (console-tokens.ts): then a
 * client beyond loopback shows a token, as `Authorization: Bearer <token>` or
 * as the cookie the console's sign-in sets, and acts with the token's name and
 * role. A read-only role sees everything; an action (approve, redrive,
 * promote, roll back, a view's tool call) needs the operator role.
 *
 * The console's JSON API also refuses what its own page would never send:
 * a request without the `x-uhlp-console` header (a header no cross-origin page
 * can add without a CORS preflight, which the core never allows), or with an
 * `Origin` or `Sec-Fetch-Site` of another site. A loopback client is trusted
 * as an operator, so a page on any site the operator has open in the same
 * browser must not be able to drive these routes (CSRF).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { anotherSite } from '../core/loopback-operator.js';
import { UhlpError } from '../shared/errors.js';
import { findConsoleToken, type ConsoleRole, type ConsoleToken } from './console-tokens.js';

export interface ConsolePrincipal {
  /** Who: the token's name, or `loopback`. */
  readonly name: string;
  readonly role: ConsoleRole;
  readonly via: 'loopback' | 'token';
}

/** The header every request of the console's page carries. */
export const CONSOLE_HEADER = 'x-uhlp-console';
/** The sign-in cookie (the token itself; HttpOnly, so no script of any page reads it). */
export const CONSOLE_COOKIE = 'uhlp_console';
export const CONSOLE_PATH = '/_uhlp/console';
/** How long a sign-in lasts. */
const COOKIE_MAX_AGE_S = 12 * 3600;

export class ConsoleAccess {
  constructor(private readonly tokens: readonly ConsoleToken[]) {}

  /** Whether clients beyond loopback may sign in at all. */
  get acceptsTokens(): boolean {
    return this.tokens.length > 0;
  }

  /** The principal of a request; UHLP_CONSOLE_UNAUTHORIZED or UHLP_CONSOLE_FORBIDDEN when there is none. */
  principal(request: FastifyRequest): ConsolePrincipal {
    const presented = presentedToken(request);
    if (presented !== undefined && this.tokens.length > 0) {
      const token = findConsoleToken(this.tokens, presented);
      if (token === undefined) throw new UhlpError('UHLP_CONSOLE_UNAUTHORIZED', 'the console token is not one this core knows (sign in again)');
      return { name: token.name, role: token.role, via: 'token' };
    }
    // Whether the client is on loopback is the route audience gate's finding (src/core/route-audience.ts), not looked up here.
    if (request.operatorClient?.loopback === true) return { name: 'loopback', role: 'operator', via: 'loopback' };
    if (this.tokens.length === 0) {
      throw new UhlpError('UHLP_CONSOLE_FORBIDDEN', `${CONSOLE_PATH} answers loopback clients only (no console token is configured: UHLP_CONSOLE_TOKENS_FILE)`, {
        client: request.socket.remoteAddress,
      });
    }
    throw new UhlpError('UHLP_CONSOLE_UNAUTHORIZED', 'a console token is required beyond loopback (sign in, or Authorization: Bearer <token>)');
  }

  /** The principal of an API request from the console's own page (see the module comment). */
  apiPrincipal(request: FastifyRequest): ConsolePrincipal {
    assertFromConsolePage(request);
    return this.principal(request);
  }

  /** The principal of an action: an operator. */
  operator(request: FastifyRequest): ConsolePrincipal {
    const principal = this.apiPrincipal(request);
    if (principal.role !== 'operator') {
      throw new UhlpError('UHLP_CONSOLE_FORBIDDEN', `${principal.name} has the read role; this is an action for the operator role`, { role: principal.role });
    }
    return principal;
  }

  /** Signs in with a token: the cookie carries it from now on. */
  signIn(request: FastifyRequest, reply: FastifyReply, token: string): ConsolePrincipal {
    assertFromConsolePage(request);
    const found = this.tokens.length > 0 ? findConsoleToken(this.tokens, token) : undefined;
    if (found === undefined) throw new UhlpError('UHLP_CONSOLE_UNAUTHORIZED', this.tokens.length > 0 ? 'no such console token' : 'this core takes no console tokens (UHLP_CONSOLE_TOKENS_FILE)');
    reply.header('set-cookie', cookie(encodeURIComponent(token), COOKIE_MAX_AGE_S, isHttps(request)));
    return { name: found.name, role: found.role, via: 'token' };
  }

  signOut(request: FastifyRequest, reply: FastifyReply): void {
    assertFromConsolePage(request);
    reply.header('set-cookie', cookie('', 0, isHttps(request)));
  }
}

/** The checks that tell the console's own page from any other (see the module comment). */
export function assertFromConsolePage(request: FastifyRequest): void {
  const refuse = (reason: string): never => {
    throw new UhlpError('UHLP_CONSOLE_FORBIDDEN', `the console API answers its own page only: ${reason}`, { reason });
  };
  if (request.headers[CONSOLE_HEADER] !== '1') refuse(`no ${CONSOLE_HEADER}: 1 header`);
  const elsewhere = anotherSite(request);
  if (elsewhere !== undefined) refuse(elsewhere);
}

function presentedToken(request: FastifyRequest): string | undefined {
  const authorization = request.headers.authorization;
  if (authorization !== undefined) {
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (match) return match[1];
  }
  const cookies = request.headers.cookie;
  if (cookies === undefined) return undefined;
  for (const part of cookies.split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === CONSOLE_COOKIE) {
      try {
        const token = decodeURIComponent(value.join('='));
        return token === '' ? undefined : token;
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Behind a TLS-terminating Ingress the core sees http; the proxy says https. */
function isHttps(request: FastifyRequest): boolean {
  return request.headers['x-forwarded-proto'] === 'https';
}

function cookie(value: string, maxAgeSeconds: number, secure: boolean): string {
  // SameSite=Strict: no other site's page sends it; Path: no other route of the core (or the views' origin) gets it.
  return `${CONSOLE_COOKIE}=${value}; Path=${CONSOLE_PATH}; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}
