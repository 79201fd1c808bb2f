import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../test/helpers/fake-sandbox-driver.js';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { OperatorWarmedPool } from './operator-warmed-pool.js';

const REVISION = 'b'.repeat(40);

describe('OperatorWarmedPool', () => {
  const pools: OperatorWarmedPool[] = [];
  let root: string;

  afterEach(async () => {
    await Promise.all(pools.splice(0).map((pool) => pool.close({ force: true })));
    rmSync(root, { recursive: true, force: true });
  });

  function makePool(): { pool: OperatorWarmedPool; driver: FakeDriver } {
    root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-owp-'));
    const driver = new FakeDriver();
    // Declared with warm spares: the operator keeps those, not this pool.
    const spec = poolSpec({ name: 'node', minWarm: 3, maxSize: 4, idleTtlSeconds: 60 });
    const pool = new OperatorWarmedPool({
      appId: 'shop',
      pool: spec,
      driver,
      sandboxSpec: { appId: 'shop', pool: spec, definitionsRoot: path.join(root, 'shop'), labels: {} },
      metrics: createMetrics({ defaultMetrics: false }),
      logger: silentLogger(),
      definitionsRoot: root,
    });
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
});
