import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { WatchLiveness } from '../k8s/resource-informer.js';
import type { CoreDeps } from './build-core.js';
import { registerOpsRoutes } from './ops-routes.js';

/** The deps /readyz reads, all ready, with the AppDefinition watch as given. */
function deps(appWatch?: { liveness(): WatchLiveness }): CoreDeps {
  return {
    registry: { snapshot: { revision: 'k8s-1', apps: new Map(), problems: [], heldBack: [] } },
    sandboxes: { readiness: () => ({ ready: true, pools: [] }), driverName: 'pod', isolation: 'container' },
    store: { kind: 'memory', ping: async () => undefined },
    metrics: {},
    ...(appWatch ? { appWatch } : {}),
  } as unknown as CoreDeps;
}

async function readyz(core: CoreDeps): Promise<{ status: number; body: Record<string, unknown> }> {
  const app = Fastify();
  registerOpsRoutes(app, core);
  const response = await app.inject({ method: 'GET', url: '/readyz' });
  await app.close();
  return { status: response.statusCode, body: response.json() };
}

describe('/readyz', () => {
  it('is ready with a live AppDefinition watch, and without one (apps from Git)', async () => {
    expect((await readyz(deps({ liveness: () => ({ live: true, synced: true }) }))).status).toBe(200);
    expect((await readyz(deps())).status).toBe(200);
  });

  it('is not ready before the AppDefinition watch has listed once, and says why', async () => {
    const answer = await readyz(deps({ liveness: () => ({ live: false, synced: false, reason: 'watch failed: connect ECONNREFUSED' }) }));
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({ status: 'not-ready', appWatch: { live: false, synced: false, reason: 'watch failed: connect ECONNREFUSED' } });
  });

  it('stays ready while a watch that listed once does not follow the API server, and says so', async () => {
    const answer = await readyz(deps({ liveness: () => ({ live: false, synced: true, reason: 'watch failed: connect ECONNREFUSED' }) }));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'ready', appWatch: { live: false, synced: true, reason: 'watch failed: connect ECONNREFUSED' } });
  });
});
