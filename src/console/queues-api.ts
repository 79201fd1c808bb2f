/**
 * The console's queues: what `GET /_uhlp/queues` and its dead-letter and
 * redrive routes answer and do (the same delivery sources and store calls),
 * behind the console's access instead of an admin token; a redrive is an
 * operator's action, ledgered with who took it.
 *
 * - `GET  api/queues` -> `{queues: [{app, source, name, component, depth, pending, retrying, deadLetters, oldestAgeMs}]}`
 * - `GET  api/queues/waiting?app` -> `{gates: [{app, scope, kind, key, waiting, running}]}`: the flow-control keys
 *   with events waiting (docs/flow-control.md), as `GET /_uhlp/queues/waiting` answers them
 * - `GET  api/queues/<source>/<app>/<name>/dead?limit` -> `{deadLetters: [...]}` (payloads as JSON; the last
 *   error's `error` code, `errorMessage` and, for a script exception, `errorStack`)
 * - `POST api/queues/<source>/<app>/<name>/redrive?limit` -> `{redriven}`
 */
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../shared/errors.js';
import type { DeliverySources } from '../sources/delivery-sources.js';
import type { DeliveryKind, StreamAddress } from '../state/delivery-store.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { integerParam, optionalChoice, optionalName, requiredName } from './query-params.js';

const KINDS: readonly DeliveryKind[] = ['queue', 'cron', 'callback', 'trigger'];

interface Params {
  source: string;
  app: string;
  name: string;
}

export function registerQueuesApi(app: FastifyInstance, context: ConsoleContext): void {
  const sources = (): DeliverySources => {
    if (context.sources === undefined) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', 'this core has no delivery sources');
    return context.sources;
  };
  const addressOf = (params: Params): StreamAddress => {
    const kind = optionalChoice(params.source, 'source', KINDS) ?? 'queue';
    const appId = requiredName(params.app, 'app');
    const name = requiredName(params.name, 'name');
    const found = sources().lookup({ kind, app: appId, name });
    if (!found) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', `app "${appId}" has no ${kind} route "${name}"`, { app: appId, source: kind, name });
    return found.route.address;
  };

  app.get(`${CONSOLE_API}/queues`, async (request, reply) => {
    context.access.apiPrincipal(request);
    if (context.sources === undefined) return reply.send({ queues: [] });
    const now = Date.now();
    const queues = await Promise.all(
      context.sources.routes().map(async (route) => ({
        app: route.address.app,
        source: route.address.kind,
        name: route.address.name,
        component: route.componentId,
        ...(await sources().store.stats(route.address, now)),
      })),
    );
    return reply.send({ queues });
  });

  app.get(`${CONSOLE_API}/queues/waiting`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const appId = (request.query as Record<string, unknown>)['app'];
    const gates = await context.store.flows.waitingGates(optionalName(appId, 'app'));
    return reply.send({ gates });
  });

  app.get<{ Params: Params }>(`${CONSOLE_API}/queues/:source/:app/:name/dead`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const address = addressOf(request.params);
    const limit = integerParam((request.query as Record<string, unknown>)['limit'], 'limit', 100, 1, 1000);
    const dead = await sources().store.deadLetters(address, limit);
    return reply.send({ ...address, deadLetters: dead.map((letter) => ({ ...letter, payload: parsed(letter.payload) })) });
  });

  app.post<{ Params: Params }>(`${CONSOLE_API}/queues/:source/:app/:name/redrive`, async (request, reply) => {
    const principal = context.access.operator(request);
    const address = addressOf(request.params);
    const limit = integerParam((request.query as Record<string, unknown>)['limit'], 'limit', 1000, 1, 10_000);
    const tier = context.registry.snapshot.apps.get(address.app)?.document.spec.deploymentMode ?? 'development';
    const target = { source: address.kind, queue: address.name, limit };
    let redriven: number;
    try {
      redriven = await sources().store.redrive(address, limit, Date.now());
    } catch (error) {
      await context.audit.record({ action: 'queue.redrive', principal, appId: address.app, tier, target, outcome: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL' });
      throw error;
    }
    await context.audit.record({ action: 'queue.redrive', principal, appId: address.app, tier, target, outcome: 'ok', details: { redriven } });
    return reply.send({ ...address, redriven });
  });
}

function parsed(payload: string): unknown {
  try {
    return JSON.parse(payload) as unknown;
  } catch {
    return payload;
  }
}
