import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../test/helpers/fake-sandbox-driver.js';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import type { AppSnapshot } from '../apps/app-snapshot.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { operatorWarmedPool } from './operator-warmed-pool.js';
import type { PoolStrategyFactory } from './pool-strategy.js';
import { SandboxManager } from './sandbox-manager.js';
import { localWarmPool } from './warm-pool.js';

/** What the manager reads of a snapshot: each app's declared pools. */
function snapshotOf(pools: PoolSpec[]): AppSnapshot {
  return { apps: new Map([['shop', { id: 'shop', pools: new Map(pools.map((p) => [p.name, p])) }]]) } as unknown as AppSnapshot;
}

describe('SandboxManager', () => {
  const managers: SandboxManager[] = [];
  afterEach(async () => {
    await Promise.all(managers.splice(0).map((manager) => manager.close({ force: true })));
  });

  function makeManager(strategy: PoolStrategyFactory): { manager: SandboxManager; driver: FakeDriver } {
    const driver = new FakeDriver();
    const manager = new SandboxManager({
      driver,
      strategy,
      metrics: createMetrics({ defaultMetrics: false }),
      logger: silentLogger(),
      definitionsRoot: '/nonexistent',
      instanceId: 'unit',
    });
    managers.push(manager);
    return { manager, driver };
  }

  it.each([
    ['the local warm pool', localWarmPool, 2, 2],
    ['the pool warmed by the operator', operatorWarmedPool, 0, 0],
  ] as const)('keeps its pools with %s, whose warm spares it reports', async (_, strategy, minWarm, started) => {
    const { manager, driver } = makeManager(strategy);
    const declared = poolSpec({ name: 'node', minWarm: 2, maxSize: 4 });
    await manager.sync(snapshotOf([declared]));
    await manager.whenReady();
    expect(driver.created).toBe(started);
    expect(manager.readiness()).toMatchObject({ ready: true, pools: [{ app: 'shop', pool: 'node', minWarm, idle: started }] });

    // The same declared spec keeps the pool it has; a changed one gets a new pool.
    const pool = manager.pool('shop', 'node');
    await manager.sync(snapshotOf([{ ...declared }]));
    expect(manager.pool('shop', 'node')).toBe(pool);
    await manager.sync(snapshotOf([{ ...declared, maxSize: 5 }]));
    expect(manager.pool('shop', 'node')).not.toBe(pool);
    await manager.sync(snapshotOf([]));
    expect(manager.pool('shop', 'node')).toBeUndefined();
  });
});
