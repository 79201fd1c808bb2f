/**
 * `/_uhlp/callbacks/<token>`: a request to a callback URL made by
 * core.callback.create. A genuine, unexpired, unused token is used up and the
 * request (headers, body) is delivered to the callback route's component with
 * the delivery contract (retries, dead letters); the caller gets 202 with the
 * invocation id. A body nested past the JSON depth limit gets 400 before the
 * token is used. A forged token gets 403, an expired one 410, a reused one
 * 409, and nothing runs.
 */
import { isUtf8 } from 'node:buffer';
import type { FastifyInstance } from 'fastify';
import { flattenHeaders } from '../http/http-details.js';
import type { DeliverySources } from '../delivery-sources.js';
import { jsonTooDeep, MAX_JSON_DEPTH, nestsDeeper } from '../../turns/json-depth.js';

export const CALLBACKS_PATH = '/_uhlp/callbacks';

/** Headers of the caller not passed to the script: they describe the hop, not the callback. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'host']);

export function registerCallbackEndpoint(app: FastifyInstance, sources: DeliverySources): void {
  app.route<{ Params: { '*': string } }>({
    method: ['POST', 'PUT', 'GET', 'PATCH'],
    // A wildcard, not a parameter: an over-long token must reach the check that refuses it, not the route limit.
    url: `${CALLBACKS_PATH}/*`,
    handler: async (request, reply) => {
      const body = request.body as Buffer | undefined;
      const utf8 = body === undefined || isUtf8(body);
      // Its delivery would be refused (turns/json-depth.ts): the caller hears it now, and its token is not spent.
      if (body !== undefined && utf8 && nestsDeeper(body.toString('utf8'), MAX_JSON_DEPTH)) throw jsonTooDeep('body');
      const headers = flattenHeaders(request.headers);
      for (const name of Object.keys(headers)) if (HOP_HEADERS.has(name)) delete headers[name];
      const invocationId = await sources.acceptCallback(request.params['*'], {
        headers,
        body: body === undefined ? '' : utf8 ? body.toString('utf8') : body.toString('base64'),
        bodyEncoding: utf8 ? 'utf8' : 'base64',
      });
      return reply.code(202).send({ invocationId });
    },
  });
}
