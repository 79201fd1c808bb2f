/**
 * Operations endpoints: liveness, readiness and Prometheus metrics. Their paths are
 * reserved: no app may take them as its path prefix.
 *
 * Readiness follows the data plane: definitions loaded, every pool warm, the runtime
 * store answering. On Kubernetes the AppDefinition watch must have listed once, and
 * then no longer counts: a core whose watch lost the API server (a control-plane
 * upgrade, an outage) serves the apps it last listed, so every core of a release does
 * not leave its Service at once for something only the control plane needs. The
 * watch's health is reported here (`appWatch`), by uhlp_app_watch_up and by the
 * chart's UhlpAppWatchDown alert.
 */
import type { FastifyInstance } from 'fastify';
import type { CoreDeps } from './build-core.js';
import { exposition, prefersOpenMetrics } from '../metrics-exposition.js';

/** The operations paths: probes and scrapes, not traffic (uhlp_http_requests_total leaves them out). */
export const OPS_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

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
    const ready = loaded && sandboxes.ready && state.ok && appWatch?.synced !== false;
    // A pool whose server failed to launch does not take the core out of service (every other app
    // serves): the core is ready, degraded, and the pool says why.
    const degraded = sandboxes.pools.some((pool) => pool.state === 'failed');
    return reply.code(ready ? 200 : 503).send({
      status: ready ? (degraded ? 'degraded' : 'ready') : 'not-ready',
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

  app.get('/metrics', async (request, reply) => {
    // A scraper that asks for OpenMetrics gets it, with the exemplars that lead to traces; Prometheus' text format otherwise.
    const { body, contentType } = await exposition(deps.metrics.registry, prefersOpenMetrics(request.headers.accept));
    return reply.header('content-type', contentType).send(body);
  });
}
