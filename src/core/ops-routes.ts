/**
 * Operations endpoints: liveness, readiness (every pool warm, definitions loaded, the
 * runtime store answering, and on Kubernetes the AppDefinition watch following the API server)
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
    const state = await deps.store.ping().then(
      () => ({ kind: deps.store.kind, ok: true }),
      (error: Error) => ({ kind: deps.store.kind, ok: false, error: error.message }),
    );
    // A Kubernetes registry with no app yet has loaded too (an empty set is a valid state).
    const loaded = snapshot.revision !== '';
    const appWatch = deps.appWatch?.liveness();
    const ready = loaded && sandboxes.ready && state.ok && appWatch?.live !== false;
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'not-ready',
      revision: snapshot.revision,
      apps: [...snapshot.apps.keys()],
      driver: deps.sandboxes.driverName,
      isolation: deps.sandboxes.isolation,
      state,
      ...(appWatch !== undefined ? { appWatch } : {}),
      pools: sandboxes.pools,
      definitionProblems: snapshot.problems,
      // Apps the revision above breaks: each keeps serving the revision it was last valid at until it is fixed.
      heldBack: snapshot.heldBack,
    });
  });

  app.get('/metrics', async (_request, reply) => {
    const body = await deps.metrics.registry.metrics();
    return reply.header('content-type', deps.metrics.registry.contentType).send(body);
  });
}
