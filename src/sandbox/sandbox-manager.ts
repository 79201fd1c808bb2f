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
import { ServerPoolLaunches, type LaunchProblem } from './server-pool-launches.js';
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
   * The stdio MCP server a `runner: mcp` pool runs (its package installed first, in the
   * background: see server-pool-launches.ts). @defaultValue none: such pools are not started
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
  /**
   * A `runner: mcp` pool with no sandbox yet: its server's package is `installing`, or
   * `failed` to install (with `error`; tried again later). Absent for a running pool.
   */
  state?: 'installing' | 'failed';
  error?: LaunchProblem;
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
  /** runner: mcp pools waiting for their server's package. */
  private readonly launches: ServerPoolLaunches | undefined;

  constructor(private readonly options: SandboxManagerOptions) {
    const launch = options.mcpServerLaunch;
    this.launches =
      launch === undefined
        ? undefined
        : new ServerPoolLaunches({
            launch,
            logger: options.logger,
            launched: (k, app, spec, server) => {
              if (this.pools.has(k)) return;
              const pool = this.makePool(app.id, spec, server);
              this.pools.set(k, { declared: spec, pool });
              void pool.start();
            },
          });
  }

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

  /**
   * Brings the pools in line with a registry snapshot. Resolves once new pools have started
   * filling; a `runner: mcp` pool is made once its server's package is installed, meanwhile.
   */
  async sync(snapshot: AppSnapshot): Promise<void> {
    const wanted = new Map<string, { appId: string; app: LoadedApp; spec: PoolSpec }>();
    for (const app of snapshot.apps.values()) {
      for (const spec of app.pools.values()) wanted.set(key(app.id, spec.name), { appId: app.id, app, spec });
    }
    for (const [k, managed] of this.pools) {
      const next = wanted.get(k);
      if (!next || !isDeepStrictEqual(next.spec, managed.declared)) this.retire(k, managed.pool);
    }
    for (const k of [...(this.launches?.keys() ?? [])]) if (!wanted.has(k)) this.launches!.cancel(k);
    const starts: Promise<void>[] = [];
    for (const [k, { appId, app, spec }] of wanted) {
      if (this.pools.has(k)) continue;
      if (spec.runner === 'mcp') {
        // The server's package is installed before its first sandbox starts, without holding the others.
        this.launches?.want(k, app, spec);
        continue;
      }
      const pool = this.makePool(appId, spec, undefined);
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

  /**
   * Resolves when every pool holds its minWarm sandboxes, and every server package being
   * installed is installed (its pool warm) or failed.
   */
  async whenReady(): Promise<void> {
    await this.launches?.settled();
    await Promise.all([...this.pools.values()].map(({ pool }) => pool.whenReady()));
  }

  /**
   * Every pool and whether it is warm. A pool whose server failed to launch is listed with
   * its error and does not hold the others' readiness: it would not be warm any sooner.
   */
  readiness(): { ready: boolean; pools: PoolReadiness[] } {
    const pools = [...this.pools.values()].map(({ pool }): PoolReadiness => ({
      app: pool.appId,
      pool: pool.pool.name,
      ready: pool.ready,
      minWarm: pool.pool.minWarm,
      maxSize: pool.pool.maxSize,
      ...pool.stats(),
    }));
    for (const waiting of this.launches?.pending() ?? []) {
      pools.push({
        app: waiting.app,
        pool: waiting.pool,
        ready: false,
        minWarm: waiting.spec.minWarm,
        maxSize: waiting.spec.maxSize,
        starting: 0,
        idle: 0,
        busy: 0,
        waiting: 0,
        state: waiting.state,
        ...(waiting.error !== undefined ? { error: waiting.error } : {}),
      });
    }
    return { ready: pools.every((p) => p.ready || p.state === 'failed'), pools };
  }

  /** Why an app's `runner: mcp` pool has no server running, or undefined when it is not waiting for one. */
  poolProblem(appId: string, poolName: string): LaunchProblem | undefined {
    return this.launches?.problem(key(appId, poolName));
  }

  /** Closes every pool. `force` destroys busy sandboxes too instead of waiting for their requests. */
  async close(options: { force?: boolean } = {}): Promise<void> {
    const closing = [...[...this.pools.values()].map(({ pool }) => pool), ...this.ownPools.values()].map((pool) => pool.close(options));
    this.pools.clear();
    this.ownPools.clear();
    this.launches?.close();
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
