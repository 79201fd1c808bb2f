/**
 * The ingress as a fastify route. The core's own server serves app traffic
 * (ingress-server.ts); this route answers the app requests that reach fastify
 * anyway: on a connection handed over to it after a request for one of the
 * core's own paths, on the core's Unix socket, and through `inject()` in tests.
 */
import type { FastifyInstance } from 'fastify';
import { splitUrl } from './http-details.js';
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
      const { path, query } = splitUrl(request.url);
      const answer = await ingress.handle(
        { method: request.method, url: request.url, path, query, headers: request.headers, body: request.body as Buffer | undefined },
        request.id,
      );
      request.uhlpRoute = answer.route;
      return reply.code(answer.status).headers(answer.headers).send(answer.body);
    },
  });
}
