/**
 * All pools of the core, one per (app, pool name), kept in step with the
 * registry: a new app gets its pools, a changed pool spec gets a new pool (the
 * old one drains its in-flight requests, then goes), a removed app loses them.
 * Each pool is made by the strategy the driver calls for (pool-strategy.ts),
 * which the manager and the executions use without knowing which it is.
 */
import { isDeepStrictEqual } from 'node:util';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { appRevisionsDir } from '../apps/revision-paths.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { AppSnapshot, LoadedApp } from '../apps/app-snapshot.js';
import type { KeptPool, PoolStrategy, PoolStrategyFactory } from './pool-strategy.js';
import type { McpServerLaunch, SandboxDriver } from './sandbox-driver.js';
import { LABEL_APP, LABEL_INSTANCE, LABEL_POOL } from './sandbox-labels.js';

export interface SandboxManagerOptions {
  readonly driver: SandboxDriver;
  /** How the pools are kept: by the core (localWarmPool) or warmed by the operator (operatorWarmedPool); see poolStrategyFor. */
  readonly strategy: PoolStrategyFactory;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Root of materialized revisions; each sandbox mounts its own app's directory of it, read-only. */
  readonly definitionsRoot: string;
  /** Identifies this core's sandboxes (the `uhlp.dev/instance` label). */
  readonly instanceId: string;
  /** The core's MCP endpoint as a Unix socket, for sandboxes without network. */
  readonly mcpSocket?: string;
  /** Sandboxes one pool starts at once. @defaultValue 4 */
  readonly startConcurrency?: number;
  /** Largest /execute answer read from a sandbox, bytes. @defaultValue DEFAULT_MAX_RESPONSE_BYTES (8 MiB) */
  readonly maxResponseBytes?: number;
  /**
   * The stdio MCP server a `runner: mcp` pool runs (its package installed first).
   * @defaultValue none: such pools are not started
   */
  readonly mcpServerLaunch?: (app: LoadedApp, pool: PoolSpec) => Promise<McpServerLaunch | undefined>;
}

export interface PoolReadiness {
  app: string;
  pool: string;
  ready: boolean;
  minWarm: number;
  maxSize: number;
  starting: number;
  idle: number;
  busy: number;
  waiting: number;
  lastStartError?: string;
}

/** A pool, and its spec as its app declared it (what a new snapshot is compared with). */
interface ManagedPool {
  readonly declared: PoolSpec;
  readonly pool: KeptPool;
}

export class SandboxManager {
  private readonly pools = new Map<string, ManagedPool>();
  /** Pools no AppDefinition declares (startOwnPool): sync leaves them alone. */
  private readonly ownPools = new Map<string, KeptPool>();
  private readonly retiring = new Set<Promise<void>>();

  constructor(private readonly options: SandboxManagerOptions) {}

  get driverName(): string {
    return this.options.driver.name;
  }

  get isolation(): SandboxDriver['isolation'] {
    return this.options.driver.isolation;
  }

  /** The pool an execution leases from. */
  pool(appId: string, poolName: string): PoolStrategy | undefined {
    return this.pools.get(key(appId, poolName))?.pool;
  }

  /** Brings the pools in line with a registry snapshot. Resolves once new pools have started filling. */
  async sync(snapshot: AppSnapshot): Promise<void> {
    const wanted = new Map<string, { appId: string; app: LoadedApp; spec: PoolSpec }>();
    for (const app of snapshot.apps.values()) {
      for (const spec of app.pools.values()) wanted.set(key(app.id, spec.name), { appId: app.id, app, spec });
    }
    for (const [k, managed] of this.pools) {
      const next = wanted.get(k);
      if (!next || !isDeepStrictEqual(next.spec, managed.declared)) this.retire(k, managed.pool);
    }
    const starts: Promise<void>[] = [];
    for (const [k, { appId, app, spec }] of wanted) {
      if (this.pools.has(k)) continue;
      let mcpServer: McpServerLaunch | undefined;
      if (spec.runner === 'mcp') {
        // The server's package is installed before its first sandbox starts; a pool whose server cannot be had is not started.
        mcpServer = await this.options.mcpServerLaunch?.(app, spec).catch((error: unknown) => {
          this.options.logger.error({ app: appId, pool: spec.name, err: error instanceof Error ? error.message : error }, 'MCP server of the pool unavailable');
          return undefined;
        });
        if (mcpServer === undefined || this.pools.has(k)) continue;
      }
      const pool = this.makePool(appId, spec, mcpServer);
      this.pools.set(k, { declared: spec, pool });
      starts.push(pool.start());
    }
    await Promise.all(starts);
  }

  /**
   * A pool of `appId` that no AppDefinition declares (a community MCP server's,
   * one per app that uses it), started on the same driver and closed with the
   * others; the caller retires it with `retireOwnPool`. Replaces one of the same name.
   */
  startOwnPool(appId: string, spec: PoolSpec, mcpServer?: McpServerLaunch): KeptPool {
    const k = key(appId, spec.name);
    const previous = this.ownPools.get(k);
    if (previous !== undefined) this.retireOwn(k, previous);
    const pool = this.makePool(appId, spec, mcpServer);
    this.ownPools.set(k, pool);
    void pool.start();
    return pool;
  }

  /** Retires a pool started with startOwnPool. */
  retireOwnPool(appId: string, poolName: string): void {
    const k = key(appId, poolName);
    const pool = this.ownPools.get(k);
    if (pool !== undefined) this.retireOwn(k, pool);
  }

  /** Resolves when every pool holds its minWarm sandboxes. */
  async whenReady(): Promise<void> {
    await Promise.all([...this.pools.values()].map(({ pool }) => pool.whenReady()));
  }

  readiness(): { ready: boolean; pools: PoolReadiness[] } {
    const pools = [...this.pools.values()].map(({ pool }): PoolReadiness => ({
      app: pool.appId,
      pool: pool.pool.name,
      ready: pool.ready,
      minWarm: pool.pool.minWarm,
      maxSize: pool.pool.maxSize,
      ...pool.stats(),
    }));
    return { ready: pools.every((p) => p.ready), pools };
  }

  /** Closes every pool. `force` destroys busy sandboxes too instead of waiting for their requests. */
  async close(options: { force?: boolean } = {}): Promise<void> {
    const closing = [...[...this.pools.values()].map(({ pool }) => pool), ...this.ownPools.values()].map((pool) => pool.close(options));
    this.pools.clear();
    this.ownPools.clear();
    await Promise.all([...closing, ...this.retiring]);
    await this.options.driver.close();
  }

  private makePool(appId: string, spec: PoolSpec, mcpServer: McpServerLaunch | undefined): KeptPool {
    return this.options.strategy({
      appId,
      pool: spec,
      driver: this.options.driver,
      metrics: this.options.metrics,
      logger: this.options.logger,
      definitionsRoot: this.options.definitionsRoot,
      startConcurrency: this.options.startConcurrency,
      maxResponseBytes: this.options.maxResponseBytes,
      sandboxSpec: {
        appId,
        pool: spec,
        definitionsRoot: appRevisionsDir(this.options.definitionsRoot, appId),
        // An MCP server's sandbox gets no way to the core's endpoint: it has no token, and nothing to ask.
        ...(mcpServer === undefined ? { mcpSocket: this.options.mcpSocket } : { mcpServer }),
        labels: { [LABEL_APP]: appId, [LABEL_POOL]: spec.name, [LABEL_INSTANCE]: this.options.instanceId },
      },
    });
  }

  private retire(k: string, pool: KeptPool): void {
    this.pools.delete(k);
    this.closeRetired(pool);
  }

  private retireOwn(k: string, pool: KeptPool): void {
    this.ownPools.delete(k);
    this.closeRetired(pool);
  }

  private closeRetired(pool: KeptPool): void {
    const done = pool.close().finally(() => this.retiring.delete(done));
    this.retiring.add(done);
  }
}

function key(appId: string, poolName: string): string {
  return `${appId}\u0000${poolName}`;
}
