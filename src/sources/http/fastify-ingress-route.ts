/**
 * The ingress as a fastify route. The core's own server serves app traffic
 * (ingress-server.ts) and relays only the core's own paths to fastify; this
 * route answers the app requests that reach fastify anyway: on the core's Unix
 * socket, and through `inject()` in tests.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../../shared/errors.js';
import { HttpRequestError, splitTarget } from '../../shared/http1/request-parser.js';
import { HTTP_METHODS, type HttpIngress, type RouteLabel } from './http-ingress.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** What the request resolved to, for the request metrics written on response. */
    uhlpRoute?: RouteLabel;
  }
}

export function registerIngressRoute(app: FastifyInstance, ingress: HttpIngress): void {
  app.route({
    method: HTTP_METHODS,
    url: '*',
    handler: async (request, reply) => {
      let target: { path: string; query: string };
      try {
        target = splitTarget(request.url, request.method);
      } catch (error) {
        if (error instanceof HttpRequestError) throw new UhlpError('UHLP_BAD_REQUEST', error.message, { field: error.field });
        throw error;
      }
      const { path, query } = target;
      const answer = await ingress.handle(
        { method: request.method, url: request.url, path, query, headers: request.headers, body: request.body as Buffer | undefined },
        request.id,
      );
      request.uhlpRoute = answer.route;
      if (answer.stream !== undefined) {
        const stream = answer.stream;
        reply.raw.once('close', () => stream.abort?.());
        return reply.code(answer.status).headers(answer.headers).send(Readable.from(stream.chunks));
      }
      return reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
  });
}
