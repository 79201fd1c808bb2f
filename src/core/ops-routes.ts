/**
 * Operations endpoints: liveness, readiness (every pool warm, definitions loaded)
 * and Prometheus metrics. Their paths are reserved: no app may take them as its
 * path prefix.
 */
import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from './build-core.js';

export function registerOpsRoutes(app: FastifyInstance, deps: CoreDeps): void {
  app.get('/healthz', async () => ({ status: 'ok' }));

  app.get('/readyz', async (_request, reply) => {
    const snapshot = deps.registry.snapshot;
    const sandboxes = deps.sandboxes.readiness();
    const loaded = snapshot.revision !== '';
    const ready = loaded && sandboxes.ready;
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not-ready',
      revision: snapshot.revision,
      apps: [...snapshot.apps.keys()],
      driver: deps.sandboxes.driverName,
      pools: sandboxes.pools,
      definitionProblems: snapshot.problems,
    });
  });

  app.get('/metrics', async (_request, reply) => {
    const body = await deps.metrics.registry.metrics();
    return reply.header('content-type', deps.metrics.registry.contentType).send(body);
  });
}
