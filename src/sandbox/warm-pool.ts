/**
 * The local warm pool (a PoolStrategy, pool-strategy.ts) of the process and
 * Docker drivers, and the mechanism the operator-warmed pool keeps its claimed
 * pods in. One pool of sandboxes for one (app, pool name): keeps `minWarm`
 * ready, never holds more than `maxSize` (starting and busy included), runs at most
 * `concurrency` executions on each sandbox at once, queues at most
 * `maxQueue` requests for at most `acquireTimeoutMs`, recycles a sandbox after
 * `maxUses`, reaps idle ones past `idleTtlSeconds` down to `minWarm`, and
 * replaces any that die or fail a health probe. The driver only starts and
 * stops single sandboxes; every counting decision is made here.
 */
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import type { Gauge } from 'prom-client';
import { backoffDelay } from '../shared/backoff.js';
import type { KeptPool, Lease, PooledSandbox, PoolStats, PoolStrategyFactory, PoolStrategyOptions, ReleaseOutcome } from './pool-strategy.js';
import { SandboxClient } from './sandbox-client.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle } from './sandbox-driver.js';

/** The local warm pool's options: a strategy's (it reads no scripts: its sandboxes mount the app's revisions) and its timings. */
export interface WarmPoolOptions extends Omit<PoolStrategyOptions, 'definitionsRoot'> {
  /** How often idle sandboxes are reaped and probed, ms. @defaultValue 1000 */
  readonly maintenanceIntervalMs?: number;
  /** Idle sandboxes are probed when idle for longer than this, ms. @defaultValue 10000 */
  readonly probeAfterIdleMs?: number;
  /** Clock, for tests. @defaultValue Date.now */
  readonly now?: () => number;
  /**
   * The client of a sandbox the driver handed over with its connection already open (a pod claimed
   * ahead, claim-reserve.ts); undefined: the pool makes one. @defaultValue always undefined
   */
  readonly clientOf?: (handle: SandboxHandle) => SandboxClient | undefined;
}

/** The local warm pool strategy: the core keeps each pool's minWarm sandboxes itself. */
export const localWarmPool: PoolStrategyFactory = (options) => new WarmPool(options);

interface Waiter {
  resolve(lease: Lease): void;
  reject(error: Error): void;
  timer: NodeJS.Timeout;
  enqueuedAt: number;
}

const MAX_START_BACKOFF_MS = 5_000;

type GaugeChild = ReturnType<Gauge['labels']>;

export class WarmPool implements KeptPool {
  readonly appId: string;
  readonly pool: PoolSpec;
  private readonly driver: SandboxDriver;
  private readonly options: WarmPoolOptions;
  private readonly now: () => number;
  /** Sandboxes running nothing, most recently used last. */
  private readonly idle: PooledSandbox[] = [];
  /** Sandboxes running at least one execution. */
  private readonly busy = new Set<PooledSandbox>();
  /** Leases handed out and not yet released. */
  private readonly leases = new Set<Lease>();
  private readonly waiters: Waiter[] = [];
  private readonly destroying = new Set<Promise<void>>();
  private starting = 0;
  private startFailures = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private warmedUp = false;
  private readonly readyWaiters: Array<() => void> = [];
  private lastStartError: string | undefined;
  private gauges: { starting: GaugeChild; idle: GaugeChild; busy: GaugeChild; waiting: GaugeChild } | undefined;

  constructor(options: WarmPoolOptions) {
    this.options = options;
    this.appId = options.appId;
    this.pool = options.pool;
    this.driver = options.driver;
    this.now = options.now ?? Date.now;
  }

  /** Adopts sandboxes the driver still knows of, then fills to minWarm. */
  async start(): Promise<void> {
    if (this.driver.adopt) {
      const adopted = await this.driver.adopt(this.appId, this.pool.name, this.options.sandboxSpec).catch((error: Error) => {
        this.options.logger.warn({ app: this.appId, pool: this.pool.name, err: error.message }, 'sandbox adoption failed');
        return [];
      });
      for (const handle of adopted.slice(0, this.pool.maxSize)) this.offer(this.track(handle));
      for (const extra of adopted.slice(this.pool.maxSize)) void this.driver.destroy(extra, 'shutdown');
    }
    const interval = this.options.maintenanceIntervalMs ?? 1000;
    this.options.metrics.poolCollectors.add(this.collectGauges);
    this.maintenanceTimer = setInterval(() => this.maintain(), interval);
    this.maintenanceTimer.unref();
    this.refill();
    this.checkWarm();
  }

  /** True once the pool has held minWarm ready sandboxes. */
  get ready(): boolean {
    return this.warmedUp;
  }

  whenReady(): Promise<void> {
    if (this.warmedUp) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  stats(): PoolStats {
    const stats: PoolStats = {
      starting: this.starting,
      idle: this.idle.length,
      busy: this.busy.size,
      waiting: this.waiters.length,
    };
    if (this.lastStartError) stats.lastStartError = this.lastStartError;
    return stats;
  }

  private get total(): number {
    return this.idle.length + this.busy.size + this.starting;
  }

  /** A lease at once when a sandbox has room (a hit), else undefined: acquire() then waits for one. */
  tryAcquire(): Lease | undefined {
    if (this.closed) return undefined;
    while (this.idle.length > 0) {
      const sandbox = this.idle.pop()!;
      if (sandbox.gone) continue;
      const lease = this.take(sandbox, true);
      this.refill();
      return lease;
    }
    // An idle sandbox spreads the load across runners; only then a busy one takes a second execution.
    const shared = this.pool.concurrency > 1 ? this.leastLoaded() : undefined;
    return shared ? this.take(shared, true) : undefined;
  }

  acquire(signal?: AbortSignal): Promise<Lease> {
    if (this.closed) return Promise.reject(new UhlpError('UHLP_SHUTTING_DOWN', `pool ${this.label} is closed`));
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    const lease = this.tryAcquire();
    if (lease) return Promise.resolve(lease);
    if (this.waiters.length >= this.pool.maxQueue) {
      this.options.metrics.poolExhausted.labels(this.appId, this.pool.name).inc();
      return Promise.reject(
        new UhlpError('UHLP_POOL_QUEUE_FULL', `pool ${this.label} has ${this.waiters.length} requests waiting, its maxQueue`, {
          pool: this.pool.name,
          maxQueue: this.pool.maxQueue,
        }),
      );
    }
    return new Promise<Lease>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        enqueuedAt: this.now(),
        timer: setTimeout(() => {
          this.removeWaiter(waiter);
          this.options.metrics.poolExhausted.labels(this.appId, this.pool.name).inc();
          waiter.reject(
            new UhlpError('UHLP_POOL_EXHAUSTED', `no sandbox of pool ${this.label} became free within ${this.pool.acquireTimeoutMs} ms`, {
              pool: this.pool.name,
              maxSize: this.pool.maxSize,
            }),
          );
        }, this.pool.acquireTimeoutMs),
      };
      if (signal) {
        // A wait given up leaves the queue, so no sandbox is handed to nobody.
        const onAbort = (): void => {
          clearTimeout(waiter.timer);
          this.removeWaiter(waiter);
          reject(signal.reason as Error);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiter.resolve = (lease) => {
          signal.removeEventListener('abort', onAbort);
          resolve(lease);
        };
        waiter.reject = (error) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        };
      }
      this.waiters.push(waiter);
      this.refill();
    });
  }

  /** Local sandboxes read the app's revisions from their own mount: the body goes as it is. */
  prepareRequest(_lease: Lease, body: string): string {
    return body;
  }

  release(lease: Lease, outcome: ReleaseOutcome): void {
    if (!this.leases.delete(lease)) return;
    const { sandbox } = lease;
    sandbox.active -= 1;
    sandbox.uses += 1;
    const drained = sandbox.active === 0;
    if (drained) this.busy.delete(sandbox);
    // A failed execution destroys the sandbox, and with it any other execution running there.
    if (outcome !== 'ok' && !sandbox.gone) this.destroy(sandbox, outcome);
    else if (sandbox.gone) this.refill();
    else if (sandbox.retiring) {
      if (drained) this.destroy(sandbox, 'recycled');
    } else if (sandbox.uses + sandbox.active >= this.pool.maxUses) {
      if (drained) this.destroy(sandbox, 'recycled');
    } else if (this.closed) {
      if (drained) this.destroy(sandbox, 'shutdown');
    } else if (drained) this.offer(sandbox);
    else this.serveWaiters(sandbox);
  }

  /**
   * Stops taking requests, fails waiters and destroys idle sandboxes. Busy ones are
   * destroyed when their request releases them, or at once with `force`.
   */
  async close(options: { force?: boolean } = {}): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      clearInterval(this.maintenanceTimer);
      clearTimeout(this.retryTimer);
      for (const waiter of this.waiters.splice(0)) {
        clearTimeout(waiter.timer);
        waiter.reject(new UhlpError('UHLP_SHUTTING_DOWN', `pool ${this.label} is closing`));
      }
      for (const sandbox of this.idle.splice(0)) this.destroy(sandbox, 'shutdown');
    }
    if (options.force) for (const sandbox of [...this.busy]) this.destroy(sandbox, 'shutdown');
    for (const lease of options.force ? [...this.leases] : []) this.leases.delete(lease);
    while (this.busy.size > 0 && !options.force) await new Promise((r) => setTimeout(r, 20));
    // Sandboxes still starting are destroyed as they arrive (see startOne).
    while (this.destroying.size > 0 || this.starting > 0) {
      await Promise.race([...this.destroying, new Promise((r) => setTimeout(r, 20))]);
    }
    this.updateGauges();
    this.options.metrics.poolCollectors.delete(this.collectGauges);
  }

  private get label(): string {
    return `${this.appId}/${this.pool.name}`;
  }

  private track(handle: SandboxHandle): PooledSandbox {
    const sandbox: PooledSandbox = {
      handle,
      client: this.options.clientOf?.(handle) ?? sandboxClient(handle, this.options.maxResponseBytes),
      uses: 0,
      active: 0,
      idleSince: this.now(),
      checkedAt: this.now(),
      gone: false,
      retiring: false,
    };
    // Every sandbox is counted once, when it is gone, with the cause its driver read
    // from the exit: the pool's own reason for a destroy (timeout, recycled, ...)
    // unless something more telling happened (a dropped connection was an OOM kill).
    void handle.exited.then((cause) => {
      this.countGone(sandbox, cause);
      this.onExited(sandbox, cause);
    });
    void handle.retiring?.then(() => this.onRetiring(sandbox));
    return sandbox;
  }

  /** Hands a sandbox with nothing running to the oldest waiters (as many as it takes), or parks it idle. */
  private offer(sandbox: PooledSandbox): void {
    this.serveWaiters(sandbox);
    if (sandbox.active === 0) {
      sandbox.idleSince = sandbox.checkedAt = this.now();
      this.idle.push(sandbox);
    }
    this.checkWarm();
  }

  /** Gives the sandbox's free execution slots to the oldest waiters. */
  private serveWaiters(sandbox: PooledSandbox): void {
    while (this.waiters.length > 0 && this.canTake(sandbox)) {
      const waiter = this.waiters.shift()!;
      clearTimeout(waiter.timer);
      waiter.resolve(this.take(sandbox, false));
    }
  }

  private canTake(sandbox: PooledSandbox): boolean {
    return !sandbox.gone && !sandbox.retiring && sandbox.active < this.pool.concurrency && sandbox.uses + sandbox.active < this.pool.maxUses;
  }

  /** Starts one execution on the sandbox. */
  private take(sandbox: PooledSandbox, hit: boolean): Lease {
    if (sandbox.active === 0) this.busy.add(sandbox);
    sandbox.active += 1;
    const lease: Lease = { sandbox, hit };
    this.leases.add(lease);
    return lease;
  }

  /** The busy sandbox with the fewest executions that can take one more. */
  private leastLoaded(): PooledSandbox | undefined {
    let best: PooledSandbox | undefined;
    for (const sandbox of this.busy) {
      if (this.canTake(sandbox) && (best === undefined || sandbox.active < best.active)) best = sandbox;
    }
    return best;
  }

  private removeWaiter(waiter: Waiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index !== -1) this.waiters.splice(index, 1);
  }

  /**
   * Starts sandboxes until minWarm idle spares are ready or coming and every waiter
   * has one coming, within maxSize and the start concurrency.
   */
  private refill(): void {
    if (this.closed || this.retryTimer) return;
    const concurrency = this.options.startConcurrency ?? 4;
    // Each sandbox on its way serves up to `concurrency` of the waiters.
    const wanted = this.pool.minWarm + Math.ceil(this.waiters.length / this.pool.concurrency) - this.idle.length - this.starting;
    let toStart = Math.min(wanted, this.pool.maxSize - this.total, concurrency - this.starting);
    while (toStart-- > 0) void this.startOne();
  }

  private async startOne(): Promise<void> {
    this.starting += 1;
    const started = performance.now();
    let handle: SandboxHandle;
    try {
      handle = await this.driver.create(this.options.sandboxSpec);
    } catch (error) {
      this.starting -= 1;
      this.onStartFailed(error);
      return;
    }
    this.starting -= 1;
    this.startFailures = 0;
    this.lastStartError = undefined;
    this.options.metrics.sandboxStartSeconds
      .labels(this.appId, this.pool.name, this.driver.name)
      .observe((performance.now() - started) / 1000);
    const sandbox = this.track(handle);
    if (this.closed) {
      this.destroy(sandbox, 'shutdown');
      return;
    }
    this.offer(sandbox);
    this.refill();
  }

  private onStartFailed(error: unknown): void {
    this.startFailures += 1;
    this.lastStartError = error instanceof Error ? error.message : String(error);
    this.options.metrics.sandboxDestroyed.labels(this.appId, this.pool.name, 'start-failed').inc();
    this.options.logger.error({ app: this.appId, pool: this.pool.name, err: this.lastStartError }, 'sandbox failed to start');
    if (this.closed) return;
    // Nothing else can serve the waiters: fail them now rather than at their deadline.
    if (this.total === 0) {
      for (const waiter of this.waiters.splice(0)) {
        clearTimeout(waiter.timer);
        waiter.reject(new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `no sandbox could be started for pool ${this.label}: ${this.lastStartError}`));
      }
    }
    const delay = backoffDelay(this.startFailures - 1, { initialMs: 100, maxMs: MAX_START_BACKOFF_MS });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.refill();
    }, delay);
    this.retryTimer.unref();
  }

  private destroy(sandbox: PooledSandbox, cause: SandboxExitCause): void {
    sandbox.gone = true;
    this.removeIdle(sandbox);
    this.busy.delete(sandbox);
    sandbox.client.close();
    const done = this.driver
      .destroy(sandbox.handle, cause)
      .catch((error: Error) => this.options.logger.error({ sandbox: sandbox.handle.id, err: error.message }, 'sandbox destroy failed'))
      .finally(() => this.destroying.delete(done));
    this.destroying.add(done);
    this.refill();
  }

  private countGone(sandbox: PooledSandbox, cause: SandboxExitCause): void {
    this.options.metrics.sandboxDestroyed.labels(this.appId, this.pool.name, cause).inc();
    const level = cause === 'recycled' || cause === 'idle' || cause === 'shutdown' ? 'debug' : 'warn';
    this.options.logger[level]({ app: this.appId, pool: this.pool.name, sandbox: sandbox.handle.id, cause }, 'sandbox gone');
  }

  /** A sandbox that went away on its own (the pool did not destroy it). */
  private onExited(sandbox: PooledSandbox, cause: SandboxExitCause): void {
    if (sandbox.gone) return;
    sandbox.gone = true;
    sandbox.client.close();
    // A busy sandbox stays leased: its request sees the dropped connection and releases it.
    if (this.removeIdle(sandbox)) void this.driver.destroy(sandbox.handle, cause).catch(() => undefined);
    this.refill();
  }

  /** A sandbox stopped from outside that drains first: idle, it goes now; busy, when its executions release it. */
  private onRetiring(sandbox: PooledSandbox): void {
    if (sandbox.gone || sandbox.retiring) return;
    sandbox.retiring = true;
    if (this.removeIdle(sandbox)) this.destroy(sandbox, 'recycled');
    else this.refill();
  }

  private removeIdle(sandbox: PooledSandbox): boolean {
    const index = this.idle.indexOf(sandbox);
    if (index === -1) return false;
    this.idle.splice(index, 1);
    return true;
  }

  /** Reaps idle sandboxes past their TTL (oldest first, down to minWarm) and probes long-idle ones. */
  private maintain(): void {
    if (this.closed) return;
    const now = this.now();
    const ttlMs = this.pool.idleTtlSeconds * 1000;
    // idle is a stack: index 0 has been idle longest.
    while (this.idle.length > this.pool.minWarm && now - this.idle[0]!.idleSince >= ttlMs) {
      this.destroy(this.idle[0]!, 'idle');
    }
    const probeAfter = this.options.probeAfterIdleMs ?? 10_000;
    for (const sandbox of this.idle) {
      if (now - sandbox.checkedAt < probeAfter) continue;
      sandbox.checkedAt = now;
      void sandbox.client.probe(2_000).then((healthy) => {
        if (!healthy && !sandbox.gone && this.idle.includes(sandbox)) this.destroy(sandbox, 'unhealthy');
      });
    }
    this.refill();
  }

  private checkWarm(): void {
    if (this.warmedUp || this.idle.length < Math.min(this.pool.minWarm, this.pool.maxSize)) return;
    this.warmedUp = true;
    for (const resolve of this.readyWaiters.splice(0)) resolve();
  }

  /** Sets the pool's gauges; run at scrape time (see Metrics.poolCollectors). */
  private readonly collectGauges = (): void => this.updateGauges();

  private updateGauges(): void {
    const gauges = (this.gauges ??= this.createGauges());
    gauges.starting.set(this.starting);
    gauges.idle.set(this.idle.length);
    gauges.busy.set(this.busy.size);
    gauges.waiting.set(this.waiters.length);
  }

  /** Label children are resolved once. */
  private createGauges(): NonNullable<WarmPool['gauges']> {
    const { poolSandboxes, poolWaiting } = this.options.metrics;
    return {
      starting: poolSandboxes.labels(this.appId, this.pool.name, 'starting'),
      idle: poolSandboxes.labels(this.appId, this.pool.name, 'idle'),
      busy: poolSandboxes.labels(this.appId, this.pool.name, 'busy'),
      waiting: poolWaiting.labels(this.appId, this.pool.name),
    };
  }
}

/** The core's client of one sandbox, reading answers up to the pool's limit. */
export function sandboxClient(handle: SandboxHandle, maxResponseBytes: number | undefined): SandboxClient {
  return new SandboxClient(handle.endpoint, maxResponseBytes !== undefined ? { maxResponseBytes } : {});
}
