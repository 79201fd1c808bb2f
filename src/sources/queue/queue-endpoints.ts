/**
 * The queue endpoints of the core, under the reserved /_uhlp prefix:
 *
 * - `POST /_uhlp/queues/<app>/<name>`: publishes the JSON body onto the queue
 *   (202 with the message id). An `Idempotency-Key` header becomes the
 *   message's invocation id, the dedup key. Authenticated by a bearer publish
 *   token bound to the app and queue (`uhlp queues token`), or an admin token.
 * - `GET /_uhlp/queues/waiting?app`: the flow-control keys with events waiting (`{gates: [{app, scope, kind, key, waiting, running}]}`).
 * - `GET /_uhlp/queues`: every delivery route with its depth, oldest age and dead letters.
 * - `GET /_uhlp/queues/<app>/<name>/dead?source=queue&limit=100`: the oldest dead letters.
 * - `POST /_uhlp/queues/<app>/<name>/redrive?source=queue&limit=1000`: moves them back.
 *
 * The last three need an admin token (`uhlp queues` mints one from the sources key),
 * and are operators' routes, served on the operator listener only; publishing is
 * app traffic (src/core/route-audience.ts).
 */
import type { FlowStore } from '../../state/flow-store.js';
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { UhlpError } from '../../shared/errors.js';
import type { DeliveryKind, StreamAddress } from '../../state/delivery-store.js';
import { checkIdempotencyKey, IDEMPOTENCY_HEADER } from '../../turns/idempotency.js';
import type { DeliverySources } from '../delivery-sources.js';
import { bearerToken, verifyToken, type TokenPurpose } from '../signed-token.js';
import { jsonTooDeep, MAX_JSON_DEPTH, nestsDeeper } from '../../turns/json-depth.js';

export const QUEUES_PATH = '/_uhlp/queues';

const KINDS: readonly DeliveryKind[] = ['queue', 'cron', 'callback', 'trigger'];

interface Params {
  app: string;
  name: string;
}

/**
 * @param flows Flow control's gates, for `GET /_uhlp/queues/waiting` (the keys with events waiting, docs/flow-control.md).
 */
export function registerQueueEndpoints(app: FastifyInstance, sources: DeliverySources, key: Buffer, flows?: FlowStore): void {
  const authorize = (request: FastifyRequest, purposes: readonly TokenPurpose[], appId: string, name: string): void => {
    const token = bearerToken(request.headers.authorization);
    if (token === undefined) throw new UhlpError('UHLP_SOURCE_UNAUTHORIZED', 'a bearer token is required (uhlp queues token)', { field: 'Authorization' });
    for (const purpose of purposes) {
      const claims = verifyToken(key, token, purpose);
      if (typeof claims === 'string') continue;
      if ((claims.app === '*' || claims.app === appId) && (claims.name === '*' || claims.name === name)) return;
    }
    throw new UhlpError('UHLP_SOURCE_UNAUTHORIZED', `the token does not allow this on ${appId}/${name}`, { field: 'Authorization' });
  };

  app.post<{ Params: Params }>(`${QUEUES_PATH}/:app/:name`, { config: { audience: 'apps' } }, async (request, reply) => {
    const { app: appId, name } = request.params;
    authorize(request, ['queue-publish', 'queue-admin'], appId, name);
    const body = request.body as Buffer | undefined;
    const text = body !== undefined && isUtf8(body) ? body.toString('utf8') : undefined;
    // Its delivery would be refused (turns/json-depth.ts): the publisher hears it now, whatever the content type said.
    if (text !== undefined && nestsDeeper(text, MAX_JSON_DEPTH)) throw jsonTooDeep('body');
    let payload: string;
    try {
      payload = JSON.stringify(JSON.parse(text ?? ''));
    } catch {
      throw new UhlpError('UHLP_BAD_REQUEST', 'the body must be JSON: it is the message payload', { field: 'body' });
    }
    const invocationId = checkIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
    const published = await sources.publishQueue(appId, name, payload, invocationId);
    return reply.code(202).send(published);
  });

  app.get(`${QUEUES_PATH}/waiting`, { config: { audience: 'operators' } }, async (request, reply) => {
    authorize(request, ['queue-admin'], '*', '*');
    const appId = (request.query as Record<string, unknown>)['app'];
    return reply.send({ gates: flows === undefined ? [] : await flows.waitingGates(typeof appId === 'string' && appId !== '' ? appId : undefined) });
  });

  app.get(QUEUES_PATH, { config: { audience: 'operators' } }, async (request, reply) => {
    authorize(request, ['queue-admin'], '*', '*');
    const now = Date.now();
    const queues = [];
    for (const route of sources.routes()) {
      const stats = await sources.store.stats(route.address, now);
      queues.push({ app: route.address.app, source: route.address.kind, name: route.address.name, component: route.componentId, ...stats });
    }
    return reply.send({ queues });
  });

  app.get<{ Params: Params; Querystring: Record<string, string> }>(`${QUEUES_PATH}/:app/:name/dead`, { config: { audience: 'operators' } }, async (request, reply) => {
    const address = addressOf(request.params, request.query);
    authorize(request, ['queue-admin'], address.app, address.name);
    const deadLetters = await sources.store.deadLetters(address, limitOf(request.query, 100));
    return reply.send({ ...address, deadLetters: deadLetters.map((d) => ({ ...d, payload: JSON.parse(d.payload) as unknown })) });
  });

  app.post<{ Params: Params; Querystring: Record<string, string> }>(`${QUEUES_PATH}/:app/:name/redrive`, { config: { audience: 'operators' } }, async (request, reply) => {
    const address = addressOf(request.params, request.query);
    authorize(request, ['queue-admin'], address.app, address.name);
    const moved = await sources.store.redrive(address, limitOf(request.query, 1000), Date.now());
    return reply.send({ ...address, redriven: moved });
  });

  function addressOf(params: Params, query: Record<string, string>): StreamAddress {
    const kind = (query['source'] ?? 'queue') as DeliveryKind;
    if (!KINDS.includes(kind)) throw new UhlpError('UHLP_BAD_REQUEST', `source must be one of ${KINDS.join(', ')}`, { field: 'source' });
    const found = sources.lookup({ kind, app: params.app, name: params.name });
    if (!found) throw new UhlpError('UHLP_SOURCE_ROUTE_NOT_FOUND', `app "${params.app}" has no ${kind} route "${params.name}"`, { app: params.app, source: kind, name: params.name });
    return found.route.address;
  }
}

function limitOf(query: Record<string, string>, fallback: number): number {
  const raw = query['limit'];
  if (raw === undefined) return fallback;
  const limit = Number(raw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000) throw new UhlpError('UHLP_BAD_REQUEST', 'limit must be a whole number from 1 to 10000', { field: 'limit' });
  return limit;
}
