import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeDriver } from '../../test/helpers/fake-sandbox-driver.js';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import type { AppSnapshot } from '../apps/app-snapshot.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { silentLogger } from '../logger.js';
import { UhlpError } from '../shared/errors.js';
import type { McpServerLaunch } from './sandbox-driver.js';
import { createMetrics } from '../metrics.js';
import { operatorWarmedPool } from './operator-warmed-pool.js';
import type { KeptPool, PoolStrategyFactory } from './pool-strategy.js';
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

  function makeManager(strategy: PoolStrategyFactory, mcpServerLaunch?: () => Promise<McpServerLaunch | undefined>): { manager: SandboxManager; driver: FakeDriver } {
    const driver = new FakeDriver();
    const manager = new SandboxManager({
      driver,
      strategy,
      metrics: createMetrics({ defaultMetrics: false }),
      logger: silentLogger(),
      definitionsRoot: '/nonexistent',
      instanceId: 'unit',
      ...(mcpServerLaunch !== undefined ? { mcpServerLaunch } : {}),
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

  it("keeps serving the other pools while a runner: mcp pool's package installs, and reports its failure", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const launches: Array<{ resolve: (launch: McpServerLaunch) => void; reject: (error: Error) => void }> = [];
      const { manager } = makeManager(localWarmPool, () => new Promise((resolve, reject) => launches.push({ resolve, reject })));
      const jit = poolSpec({ name: 'node', minWarm: 1, maxSize: 2 });
      const server = poolSpec({ name: 'memory', runner: 'mcp', minWarm: 1, maxSize: 1 });
      // sync does not wait for the install: the jit pool starts, the server's pool is listed as installing.
      await manager.sync(snapshotOf([jit, server]));
      expect(launches).toHaveLength(1);
      expect(manager.pool('shop', 'node')).toBeDefined();
      expect(manager.pool('shop', 'memory')).toBeUndefined();
      await (manager.pool('shop', 'node') as KeptPool).whenReady();
      expect(manager.readiness()).toMatchObject({ ready: false, pools: [{ pool: 'node', ready: true }, { pool: 'memory', ready: false, state: 'installing' }] });
      expect(manager.poolProblem('shop', 'memory')).toMatchObject({ code: 'UHLP_MCP_SERVER_UNAVAILABLE' });

      // A failed install is reported with its code, does not hold readiness, and is tried again later.
      launches[0]!.reject(new UhlpError('UHLP_MCP_PACKAGE_FAILED', 'npm view x@1 failed: ECONNREFUSED', { package: 'x@1' }));
      await manager.whenReady();
      expect(manager.readiness()).toMatchObject({
        ready: true,
        pools: [{ pool: 'node', ready: true }, { pool: 'memory', ready: false, state: 'failed', error: { code: 'UHLP_MCP_PACKAGE_FAILED', message: 'npm view x@1 failed: ECONNREFUSED' } }],
      });
      expect(manager.poolProblem('shop', 'memory')).toEqual({ code: 'UHLP_MCP_PACKAGE_FAILED', message: 'npm view x@1 failed: ECONNREFUSED' });
      await vi.advanceTimersByTimeAsync(10_000);
      expect(launches).toHaveLength(2);
      expect(manager.readiness().pools[1]).toMatchObject({ pool: 'memory', state: 'installing' });

      // The registry is back: the pool is made and warms like any other.
      launches[1]!.resolve({ packageDir: '/cache/abc', entry: 'node_modules/x/index.js', args: [], env: [] });
      await vi.advanceTimersByTimeAsync(0);
      expect(manager.pool('shop', 'memory')).toBeDefined();
      expect(manager.poolProblem('shop', 'memory')).toBeUndefined();
      await manager.whenReady();
      expect(manager.readiness()).toMatchObject({ ready: true, pools: [{ pool: 'node' }, { pool: 'memory', ready: true }] });
      expect(manager.readiness().pools[1]!.state).toBeUndefined();
    } finally {
      vi.useRealTimers();
    }
  });

  it('forgets a waiting server pool its app no longer declares', async () => {
    const launches: Array<(error: Error) => void> = [];
    const { manager } = makeManager(localWarmPool, () => new Promise((_resolve, reject) => launches.push(reject)));
    await manager.sync(snapshotOf([poolSpec({ name: 'memory', runner: 'mcp', minWarm: 1, maxSize: 1 })]));
    await manager.sync(snapshotOf([]));
    launches[0]!(new Error('too late'));
    await manager.whenReady();
    expect(manager.readiness()).toEqual({ ready: true, pools: [] });
  });
});
