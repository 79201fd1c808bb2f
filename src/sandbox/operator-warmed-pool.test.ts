import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver, FakeWarmClaimDriver } from '../../test/helpers/fake-sandbox-driver.js';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { recordRunnerConnections } from '../../test/helpers/runner-connections.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import { silentLogger } from '../logger.js';
import { createMetrics, type Metrics } from '../metrics.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { OperatorWarmedPool } from './operator-warmed-pool.js';
import type { SandboxSpec } from './sandbox-driver.js';

const REVISION = 'b'.repeat(40);

const spec = (): SandboxSpec => ({ appId: 'shop', pool: poolSpec({ name: 'node' }), definitionsRoot: '/nonexistent', labels: {} });

describe('OperatorWarmedPool', () => {
  const pools: OperatorWarmedPool[] = [];
  let root: string;
  let metrics: Metrics;

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close({ force: true })));
    rmSync(root, { recursive: true, force: true });
  });

  function makePool<D extends FakeDriver = FakeDriver>(
    driver: D = new FakeDriver() as D,
    claimAhead?: number,
    overrides: Partial<PoolSpec> = {},
    reserveIntervalMs = 20,
  ): { pool: OperatorWarmedPool; driver: D } {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-owp-'));
    metrics = createMetrics({ defaultMetrics: false });
    // Declared with warm spares: the operator keeps those, not this pool.
    const spec = poolSpec({ name: 'node', minWarm: 3, maxSize: 4, idleTtlSeconds: 60, ...overrides });
    const pool = new OperatorWarmedPool({
      appId: 'shop',
      pool: spec,
      driver,
      sandboxSpec: { appId: 'shop', pool: spec, definitionsRoot: path.join(root, 'shop'), labels: {} },
      metrics,
      logger: silentLogger(),
      definitionsRoot: root,
    }, { ...(claimAhead !== undefined ? { claimAhead } : {}), reserveIntervalMs });
    pools.push(pool);
    return { pool, driver };
  }

  it('keeps no warm pods of its own: ready at once, claims one per request, keeps the one it used', async () => {
    const { pool, driver } = makePool();
    await pool.start();
    await pool.whenReady();
    expect(pool.ready).toBe(true);
    expect(pool.pool.minWarm).toBe(0);
    expect(driver.created).toBe(0);

    const lease = await pool.acquire();
    expect(lease.hit).toBe(false);
    expect(driver.created).toBe(1);
    pool.release(lease, 'ok');
    // The claimed pod stays, idle, for the next request: a hit, no second claim.
    await waitFor(() => pool.stats().idle === 1);
    const again = pool.tryAcquire();
    expect(again?.sandbox).toBe(lease.sandbox);
    pool.release(again!, 'ok');
    expect(driver.created).toBe(1);
  });

  it('sends a script along with its first execution on each pod, and the body as it is otherwise', async () => {
    const { pool } = makePool();
    mkdirSync(path.join(root, 'shop', REVISION), { recursive: true });
    writeFileSync(path.join(root, 'shop', REVISION, 'price.js'), 'export const price = () => 1;');
    await pool.start();
    const [first, second] = await Promise.all([pool.acquire(), pool.acquire()]);
    const script = { revision: REVISION, path: 'price.js' };
    const body = '{"requestId":"r1"}';

    expect(pool.prepareRequest(first!, body, undefined)).toBe(body);
    const sent = JSON.parse(await pool.prepareRequest(first!, body, script)) as { definitionFiles: unknown };
    expect(sent.definitionFiles).toEqual([{ path: 'price.js', content: 'export const price = () => 1;' }]);
    // Once per pod: the pod has it now; another pod gets it with its own first execution.
    expect(await pool.prepareRequest(first!, body, script)).toBe(body);
    expect(await pool.prepareRequest(second!, body, script)).not.toBe(body);
    // A file the core cannot send is read by the runner through MCP, as before.
    expect(await pool.prepareRequest(second!, body, { revision: REVISION, path: 'missing.js' })).toBe(body);
  });

  it('claims a few pods ahead where the driver can (the pod driver): a request that needs a new pod takes one with no claim in its way', async () => {
    // A tick far away: every claim below is the pool's own, none the maintenance tick's.
    const { pool, driver } = makePool(new FakeWarmClaimDriver(10, 5), 2, { maxUses: 1 }, 60_000);
    await pool.start();
    await waitFor(() => pool.stats().reserved === 2);
    expect(driver.claims).toBe(2);
    const lease = await pool.acquire();
    expect(['fake-1', 'fake-2']).toContain(lease.sandbox.handle.id);
    expect(pool.stats().reserved).toBe(1);
    // Nothing claimed while the request runs: the claim's API-server write and its answer would share
    // the core with the request, which is waiting for the pod's answer.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(driver.claims).toBe(2);
    // Claimed again once the request is done, after its answer (the next turn of the event loop).
    pool.release(lease, 'ok');
    expect(driver.claims).toBe(2);
    await waitFor(() => pool.stats().reserved === 2);
    expect(driver.claims).toBe(3);
    // Recycled after its one use (maxUses 1).
    await waitFor(() => driver.destroyed.some((d) => d.id === lease.sandbox.handle.id && d.cause === 'recycled'));
  });

  it('sends a request that takes a reserved pod on the connection the reserve opened to it', async () => {
    const driver = new FakeWarmClaimDriver(10, 5);
    const { pool } = makePool(driver, 2, { maxUses: 1 }, 60_000);
    const runner = await recordRunnerConnections(root, 'runner');
    try {
      driver.endpoint = runner.endpoint;
      await pool.start();
      await waitFor(() => pool.stats().reserved === 2 && runner.connections.filter((c) => c.requests.length === 1).length === 2);
      const lease = await pool.acquire();
      expect((await lease.sandbox.client.execute('{}', 'r1', 2_000)).status).toBe(200);
      expect(runner.connections.slice(0, 2).map((c) => c.requests).sort()).toEqual([['GET /healthz'], ['GET /healthz', 'POST /execute']]);
      // Used once (maxUses 1): the pod goes, and its connection with it.
      pool.release(lease, 'ok');
      await waitFor(() => runner.connections.filter((c) => c.requests.includes('POST /execute')).every((c) => !c.open));
    } finally {
      await runner.close();
    }
  });

  it('refills the reserve on its tick while requests hold what they took (long executions)', async () => {
    const { pool, driver } = makePool(new FakeWarmClaimDriver(10, 5), 2, { maxUses: 1 });
    await pool.start();
    await waitFor(() => pool.stats().reserved === 2);
    const leases = [await pool.acquire(), await pool.acquire()];
    await waitFor(() => pool.stats().reserved === 2);
    expect(driver.claims).toBe(4);
    for (const lease of leases) pool.release(lease, 'ok');
  });

  it('claims ahead at most the declared minWarm and the configured count; 0 claims only on demand', async () => {
    const small = makePool(new FakeWarmClaimDriver(10, 5), 2, { minWarm: 1 });
    await small.pool.start();
    await waitFor(() => small.pool.stats().reserved === 1);
    await small.pool.close();

    const none = makePool(new FakeWarmClaimDriver(10, 5), 0);
    await none.pool.start();
    expect(none.pool.stats().reserved).toBeUndefined();
    expect(none.driver.claims).toBe(0);
  });

  it('gives the reserved pods back (as warm) when it closes, and counts them as reserved until then', async () => {
    const { pool, driver } = makePool(new FakeWarmClaimDriver(10, 5), 2);
    await pool.start();
    await waitFor(() => pool.stats().reserved === 2);
    expect(await metrics.registry.getSingleMetricAsString('uhlp_pool_sandboxes')).toContain('uhlp_pool_sandboxes{app="shop",pool="node",state="reserved"} 2');
    const lease = await pool.acquire();
    pool.release(lease, 'ok');
    // The pod it used stays idle, and counts toward the reserve's fill: nothing more is claimed.
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(pool.stats()).toMatchObject({ idle: 1, reserved: 1 });
    expect(driver.claims).toBe(2);
    await pool.close();
    expect(driver.live.size).toBe(0);
    expect(driver.destroyed.map((d) => d.cause)).toEqual(['shutdown', 'shutdown']);
    expect(await metrics.registry.getSingleMetricAsString('uhlp_pool_sandboxes')).toContain('state="reserved"} 0');
    expect(driver.warm).toBe(10);
  });

  it('claims nothing ahead after a restart that adopted idle pods of its own: a request takes those first', async () => {
    const driver = new FakeWarmClaimDriver(10, 5);
    const adopted = [await driver.create(spec()), await driver.create(spec())];
    driver.warm -= 2;
    const adopting = Object.assign(driver, { adopt: async () => adopted });
    const { pool } = makePool(adopting, 2);
    await pool.start();
    expect(pool.stats().idle).toBe(2);
    // A few ticks of the reserve: no claim while the two adopted pods sit idle.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(driver.claims).toBe(0);
    expect(pool.stats().reserved).toBe(0);
  });
});
