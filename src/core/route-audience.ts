/**
 * Who may reach each of the core's routes, and on which listener: the one
 * home of that rule (docs/security.md, "Listeners and audiences").
 *
 * Every route has one audience, declared where it is registered:
 *
 * - `apps`: the apps' traffic and what their clients hold a credential for
 *   (callback URLs, publish tokens, invocation, run and session ids);
 * - `operators`: the console and every operator route (oracle, dev token, the
 *   queues' operator actions): the console cookie, console tokens, admin tokens
 *   and loopback trust are worth something here;
 * - `sandboxes`: /mcp, with per-execution tokens;
 * - `probes`: /healthz, /readyz, /metrics, which answer anyone who can connect.
 *
 * Each listener serves the audiences `LISTENERS` gives it and refuses the rest
 * with UHLP_NOT_ON_THIS_LISTENER, before any handler runs. Operators have a
 * listener of their own (operator-server.ts), so no script in an app's answer
 * (an app author's page, a model's `httpResponse`) is ever same-origin with the
 * console; and an operator route answers only under a Host that names this
 * machine as its operator would (loopback-operator.ts), so a DNS-rebinding page
 * is refused with UHLP_HOST_NOT_ALLOWED.
 *
 * A route registered without an audience fails the core's start (the onRoute
 * hook throws): a new route cannot be added without saying who it is for.
 *
 * Trust in a loopback client is decided here too, once, and nowhere in a
 * feature: for an operator route the gate records what it found of the client
 * (`request.operatorClient`: on loopback, and whether a page of another site
 * sent the request), and an operator route that trusts a loopback operator alone
 * (the oracle's, the dev token's: `loopbackOnly` in its config, with the code it
 * refuses others with) never runs its handler for anyone else. The console, which
 * also takes tokens, reads the gate's finding instead of looking for itself.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UhlpError, type ErrorCode } from '../shared/errors.js';
import { isLocalHost, isLoopback, anotherSite } from './loopback-operator.js';

export type Audience = 'apps' | 'operators' | 'sandboxes' | 'probes' | 'views';

/** The core's listeners. `app` and `operator` serve fastify's routes; `views` and `mcp-socket` have servers of their own. */
export type ListenerName = 'app' | 'operator' | 'views' | 'mcp-socket';

export interface ListenerSpec {
  /** The audiences whose routes this listener serves; every other route is refused on it. */
  readonly audiences: readonly Audience[];
  /** Where it listens. */
  readonly address: string;
}

/**
 * Every listener of the core, with the audiences it serves. docs/security.md's
 * table says the same, and src/core/route-inventory.test.ts holds the two together.
 */
export const LISTENERS: Readonly<Record<ListenerName, ListenerSpec>> = Object.freeze({
  app: { audiences: ['apps', 'sandboxes', 'probes'], address: 'UHLP_HOST:UHLP_PORT' },
  operator: { audiences: ['operators', 'probes'], address: 'UHLP_OPERATOR_HOST:UHLP_OPERATOR_PORT' },
  views: { audiences: ['views'], address: 'UHLP_CONSOLE_SANDBOX_HOST:UHLP_CONSOLE_SANDBOX_PORT' },
  'mcp-socket': { audiences: ['sandboxes'], address: '<data-dir>/mcp.sock (mounted into containers)' },
});

/** An operator route that answers a loopback operator only: what it is called in a refusal, and the code it refuses with. */
export interface LoopbackOnly {
  readonly route: string;
  readonly code: ErrorCode;
}

/** What the gate found of an operator route's client. */
export interface OperatorClient {
  /** The client connected from loopback (the `uhlp` command, a browser on this machine). */
  readonly loopback: boolean;
  /** Why the client may not act as the loopback operator (not on loopback, or a page of another site sent it); undefined when it may. */
  readonly refusal: string | undefined;
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who the route is for (route-audience.ts); set where the route is registered. */
    audience?: Audience;
    /** An operator route that trusts a loopback operator alone: anyone else is refused by the gate. @defaultValue none */
    loopbackOnly?: LoopbackOnly;
  }
  interface FastifyRequest {
    /** On an operator route: what the gate found of the client (route-audience.ts); undefined on any other route. */
    operatorClient: OperatorClient | undefined;
  }
}

/** One route of fastify's, as the inventory lists it. */
export interface AudienceRoute {
  readonly method: string;
  readonly url: string;
  readonly audience: Audience;
}

export interface RouteAudiences {
  /**
   * Registers routes of one audience: every route `register` adds synchronously
   * without an audience of its own gets this one. A route registered inside a
   * plugin (later, when fastify loads it) names its audience in its `config`.
   */
  declare(audience: Audience, register: () => void): void;
  /** Every route registered so far, with its audience (the inventory). */
  routes(): readonly AudienceRoute[];
}

export interface RouteAudienceOptions {
  /** Host names besides loopback ones and `localhost` that operator routes answer under (UHLP_OPERATOR_HOSTS). @defaultValue none */
  readonly operatorHosts?: readonly string[];
}

/** The listener each accepted connection came in on. */
const listenerOfConnection = new WeakMap<object, ListenerName>();

/**
 * Marks a connection with the listener that accepted it. Every server that
 * hands connections to fastify's routes calls this first; a request on a
 * connection no listener marked (`inject()` in tests) is served as on every
 * listener, the Host rule still applying.
 */
export function bindListener(connection: object, listener: ListenerName): void {
  listenerOfConnection.set(connection, listener);
}

/** Installs the audience rule on the core's fastify app: call it before any route is registered. */
export function enforceAudiences(app: FastifyInstance, options: RouteAudienceOptions = {}): RouteAudiences {
  const operatorHosts = options.operatorHosts ?? [];
  const routes: AudienceRoute[] = [];
  let current: Audience | undefined;
  // Declared once, so that every request object has the same shape.
  app.decorateRequest('operatorClient', undefined);

  app.addHook('onRoute', (route) => {
    const audience = route.config?.audience ?? current;
    if (audience === undefined) {
      throw new Error(`the route ${String(route.method)} ${route.url} is registered without an audience (src/core/route-audience.ts)`);
    }
    route.config = { ...route.config, audience };
    for (const method of [route.method].flat()) routes.push({ method: String(method), url: route.url ?? route.path, audience });
  });

  // A callback hook, not an async one: it runs on every request the core's routes get.
  app.addHook('onRequest', (request, _reply, done) => {
    const audience = request.routeOptions.config.audience;
    // fastify's not-found handler has no audience: it answers UHLP_ROUTE_NOT_FOUND, naming nothing.
    if (audience === undefined) return done();
    const listener = listenerOfConnection.get(request.raw.socket);
    if (listener !== undefined && !LISTENERS[listener].audiences.includes(audience)) {
      return done(
        new UhlpError('UHLP_NOT_ON_THIS_LISTENER', `${request.url.split('?')[0]!.slice(0, 200)} is for ${audience}, which the ${listener} listener does not serve (docs/security.md)`, {
          audience,
          listener,
        }),
      );
    }
    if (audience !== 'operators') return done();
    if (!isLocalHost(request.headers.host, operatorHosts)) {
      return done(
        new UhlpError('UHLP_HOST_NOT_ALLOWED', 'operator routes answer under a loopback address, localhost or a name in UHLP_OPERATOR_HOSTS only', {
          host: String(request.headers.host ?? '').slice(0, 128),
        }),
      );
    }
    const client = operatorClientOf(request);
    request.operatorClient = client;
    const only = request.routeOptions.config.loopbackOnly;
    if (only !== undefined && client.refusal !== undefined) {
      return done(
        new UhlpError(only.code, `${only.route} answers loopback clients only, and no page of another site: ${client.refusal}`, {
          client: request.socket.remoteAddress,
          reason: client.refusal,
        }),
      );
    }
    done();
  });

  return {
    declare(audience, register) {
      current = audience;
      try {
        register();
      } finally {
        current = undefined;
      }
    },
    routes: () => [...routes],
  };
}

/**
 * A loopback client that no page of another site sent is the loopback operator
 * (loopback-operator.ts says why both halves matter).
 */
function operatorClientOf(request: FastifyRequest): OperatorClient {
  const address = request.socket.remoteAddress;
  if (!isLoopback(address)) return { loopback: false, refusal: `the client ${address ?? 'unknown'} is not on loopback` };
  return { loopback: true, refusal: anotherSite(request) };
}
