/**
 * The pool warmed by the operator (a PoolStrategy, pool-strategy.ts), for the pod
 * driver. The operator keeps each SandboxPool's warm pods, so warm capacity
 * follows `spec.replicas` and exists before any core asks; a second set of
 * spares kept by the core would only double it. This pool therefore keeps no
 * warm sandboxes of its own: it takes a pod when a request needs one (the
 * driver's `create`), keeps the pods it used until their idle TTL, and counts,
 * queues and recycles them as the local warm pool does (it is one, with
 * minWarm 0).
 *
 * A claim is an API-server write (tens of ms, more when the API server is busy),
 * which a request that needs a new pod would wait for. So the pool claims a few
 * of the operator's warm pods ahead (claim-reserve.ts): up to `claimAhead`,
 * bounded by the pool's current replicas, taken when the pool needs a new pod
 * and claimed again in the background, each with the core's connection to it
 * already open. The operator counts them as it counts pods in use (claimed:
 * against maxSize, beside the replicas it keeps warm).
 *
 * Pods share no file system with the core: a runner would read a script it has
 * not run yet through MCP, one round trip more on a pod's first request. The
 * script goes along with its first execution on each pod instead (script-push.ts).
 */
import { ClaimReserve, DEFAULT_CLAIM_AHEAD, isWarmClaimSource } from './claim-reserve.js';
import type { KeptPool, Lease, PoolStats, PoolStrategyFactory, PoolStrategyOptions, ReleaseOutcome } from './pool-strategy.js';
import type { SandboxClient } from './sandbox-client.js';
import type { SandboxDriver, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import { ScriptPush, type ScriptRef } from './script-push.js';
import { sandboxClient, WarmPool } from './warm-pool.js';

export interface OperatorWarmedPoolSettings {
  /**
   * Pods claimed ahead per pool, at most the app's minWarm for the pool and the
   * SandboxPool's current replicas; 0 claims only on demand. @defaultValue DEFAULT_CLAIM_AHEAD (2)
   */
  readonly claimAhead?: number;
  /** How often the reserve's bound is read again, ms. @defaultValue 1000 */
  readonly reserveIntervalMs?: number;
}

/** The strategy of a pool warmed by the operator, with these settings. */
export function operatorWarmedPoolWith(settings: OperatorWarmedPoolSettings): PoolStrategyFactory {
  return (options) => new OperatorWarmedPool(options, settings);
}

/** The strategy of a pool warmed by the operator: the core claims warm pods (a few ahead) and keeps those it used. */
export const operatorWarmedPool: PoolStrategyFactory = operatorWarmedPoolWith({});

export class OperatorWarmedPool implements KeptPool {
  private readonly claimed: WarmPool;
  private readonly scripts: ScriptPush;
  private readonly reserve: ClaimReserve | undefined;
  private readonly metrics: PoolStrategyOptions['metrics'];
  private readonly options: PoolStrategyOptions;

  constructor(options: PoolStrategyOptions, settings: OperatorWarmedPoolSettings = {}) {
    this.options = options;
    this.metrics = options.metrics;
    const pool = { ...options.pool, minWarm: 0 };
    const sandboxSpec = { ...options.sandboxSpec, pool };
    const size = Math.min(settings.claimAhead ?? DEFAULT_CLAIM_AHEAD, options.pool.minWarm);
    const source = options.driver;
    if (size > 0 && isWarmClaimSource(source)) {
      this.reserve = new ClaimReserve({
        source,
        spec: sandboxSpec,
        size,
        room: () => {
          const held = this.claimed.stats();
          return pool.maxSize - held.starting - held.idle - held.busy;
        },
        idle: () => this.claimed.stats().idle,
        connect: (handle) => sandboxClient(handle, options.maxResponseBytes),
        logger: options.logger,
        ...(settings.reserveIntervalMs !== undefined ? { maintenanceIntervalMs: settings.reserveIntervalMs } : {}),
      });
    }
    const { driver, clientOf } = this.reserve ? reserveFirst(source, this.reserve) : { driver: source, clientOf: undefined };
    this.claimed = new WarmPool({ ...options, driver, pool, sandboxSpec, ...(clientOf ? { clientOf } : {}) });
    this.scripts = new ScriptPush(options.definitionsRoot);
  }

  get appId(): string {
    return this.claimed.appId;
  }

  get pool(): KeptPool['pool'] {
    return this.claimed.pool;
  }

  get ready(): boolean {
    return this.claimed.ready;
  }

  tryAcquire(): Lease | undefined {
    return this.claimed.tryAcquire();
  }

  acquire(signal?: AbortSignal): Promise<Lease> {
    return this.claimed.acquire(signal);
  }

  /** The script along with its first execution on a pod (once per pod and script); the body as it is otherwise. */
  prepareRequest(lease: Lease, body: string, script: ScriptRef | undefined): string | Promise<string> {
    if (script === undefined || !body.endsWith('}')) return body;
    return this.scripts.member(lease.sandbox, this.appId, script).then((files) => (files === undefined ? body : `${body.slice(0, -1)},${files}}`));
  }

  release(lease: Lease, outcome: ReleaseOutcome): void {
    this.claimed.release(lease, outcome);
    // After the answer this release comes before is written (a later turn of the event loop): the
    // claim's write to the API server is then not in this request's time.
    if (this.reserve) setImmediate(() => this.reserve!.refill());
  }

  /** Starts the pool, once the driver had what the operator's warm pods need (a runner: mcp pool's server). */
  async start(): Promise<void> {
    await this.options.driver.preparePool?.(this.options.sandboxSpec).catch((error: unknown) => {
      // The pool still serves: it claims pods it makes itself; the operator keeps none warm meanwhile.
      this.options.logger.warn({ app: this.appId, pool: this.pool.name, err: error instanceof Error ? error.message : error }, 'the pool could not be prepared for warm pods');
    });
    await this.claimed.start();
    if (this.reserve) {
      this.reserve.start();
      this.metrics.poolCollectors.add(this.collectReserved);
    }
  }

  whenReady(): Promise<void> {
    return this.claimed.whenReady();
  }

  stats(): PoolStats {
    const stats = this.claimed.stats();
    return this.reserve ? { ...stats, reserved: this.reserve.size } : stats;
  }

  /** Gives the reserve back first (its pods go back to warm), then closes the pods in use. */
  async close(options?: { force?: boolean }): Promise<void> {
    await this.reserve?.close();
    this.collectReserved();
    this.metrics.poolCollectors.delete(this.collectReserved);
    await this.claimed.close(options);
  }

  /** uhlp_pool_sandboxes{state="reserved"}, at scrape time (Metrics.poolCollectors), beside the warm pool's states. */
  private readonly collectReserved = (): void => {
    if (this.reserve) this.metrics.poolSandboxes.labels(this.appId, this.pool.name, 'reserved').set(this.reserve.size);
  };
}

/**
 * The driver as the pool of claimed pods sees it: a new pod comes from the reserve when it holds one,
 * else from a claim now; and the pool's client of a pod from the reserve is the one it opened.
 */
function reserveFirst(driver: SandboxDriver, reserve: ClaimReserve): { driver: SandboxDriver; clientOf: (handle: SandboxHandle) => SandboxClient | undefined } {
  // From the reserve's take to the pool's track of the same pod: the pool tracks every sandbox its create gives.
  const opened = new WeakMap<SandboxHandle, SandboxClient>();
  const clientOf = (handle: SandboxHandle): SandboxClient | undefined => {
    const client = opened.get(handle);
    opened.delete(handle);
    return client;
  };
  const firstFromReserve: SandboxDriver = {
    name: driver.name,
    isolation: driver.isolation,
    create: (spec: SandboxSpec, signal?: AbortSignal) => {
      const reserved = reserve.take();
      if (!reserved) return driver.create(spec, signal);
      if (reserved.client) opened.set(reserved.handle, reserved.client);
      return Promise.resolve(reserved.handle);
    },
    destroy: (handle, cause) => driver.destroy(handle, cause),
    ...(driver.adopt ? { adopt: (appId: string, poolName: string, spec?: SandboxSpec) => driver.adopt!(appId, poolName, spec) } : {}),
    close: () => driver.close(),
  };
  return { driver: firstFromReserve, clientOf };
}
