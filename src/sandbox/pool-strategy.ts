/**
 * The seam between an execution and where its sandbox comes from, as the design
 * names it. fission's executor types are the model: the router asks one
 * interface for a function's service, and a generic warm pool or a deployment
 * per function answers, the router never knowing which. Here two strategies
 * answer `acquire` / `release`:
 *
 * - the local warm pool (warm-pool.ts), for the process and Docker drivers: the
 *   core keeps each pool's minWarm sandboxes itself, and they read the app's
 *   revisions from a mount;
 * - the pool warmed by the operator (operator-warmed-pool.ts), for the pod
 *   driver: the operator keeps the warm pods, the core claims them and keeps
 *   only those it used, and since pods share no file system with the core it
 *   sends each script along with its first execution on a pod.
 *
 * The SandboxManager keeps one pool per (app, pool name) through the strategy
 * the driver calls for (create-driver.ts); the turn's execution
 * (src/execution/component-executor.ts) leases, prepares and releases through it.
 */
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { SandboxClient } from './sandbox-client.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import type { ScriptRef } from './script-push.js';

/** A sandbox as its pool keeps it. */
export interface PooledSandbox {
  readonly handle: SandboxHandle;
  readonly client: SandboxClient;
  /** Executions finished on it. */
  uses: number;
  /** Executions running on it now (up to the pool's concurrency). */
  active: number;
  idleSince: number;
  /** Last health probe (or last use), for probing long-idle sandboxes. */
  checkedAt: number;
  /** Set once the driver reported the sandbox gone, or the pool decided to destroy it. */
  gone: boolean;
  /** Set once the driver reported it retiring: no new work, destroyed when idle. */
  retiring: boolean;
}

/** One execution's hold on a sandbox, from acquire to release. */
export interface Lease {
  readonly sandbox: PooledSandbox;
  /** True when an idle sandbox was ready at once. */
  readonly hit: boolean;
}

/** How the use of a leased sandbox ended; anything but `ok` destroys it. */
export type ReleaseOutcome = 'ok' | SandboxExitCause;

/** What an execution asks of a pool, whichever strategy keeps it. */
export interface PoolStrategy {
  /** A lease at once when a sandbox has room (a hit, and no promise: most requests on a warm pool), else undefined. */
  tryAcquire(): Lease | undefined;
  /**
   * A lease, waiting in the pool's queue (at most `maxQueue`, for at most
   * `acquireTimeoutMs`) while every sandbox is busy; `signal` gives up the wait.
   */
  acquire(signal?: AbortSignal): Promise<Lease>;
  /**
   * The /execute body for the lease's sandbox: `body` itself where sandboxes read
   * the app's revisions on their own, with `script` in it where they cannot yet.
   * A string when nothing had to be read (no promise on the hot path).
   */
  prepareRequest(lease: Lease, body: string, script: ScriptRef | undefined): string | Promise<string>;
  /** Ends the lease; any outcome but `ok` destroys the sandbox. */
  release(lease: Lease, outcome: ReleaseOutcome): void;
}

/** A pool as the SandboxManager keeps it: the strategy, and its life around the leases. */
export interface KeptPool extends PoolStrategy {
  readonly appId: string;
  /** The spec the pool keeps (the operator-warmed pool keeps no warm spares of its own: minWarm 0). */
  readonly pool: PoolSpec;
  /** True once the pool has held the warm sandboxes it keeps. */
  readonly ready: boolean;
  /** Adopts sandboxes the driver still knows of, then fills to what the pool keeps warm. */
  start(): Promise<void>;
  whenReady(): Promise<void>;
  stats(): PoolStats;
  /** Stops taking requests; busy sandboxes go when released, or at once with `force`. */
  close(options?: { force?: boolean }): Promise<void>;
}

export interface PoolStats {
  starting: number;
  idle: number;
  busy: number;
  waiting: number;
  /** Pods claimed ahead and not yet used (the operator-warmed pool's reserve, claim-reserve.ts). @defaultValue absent: no reserve */
  reserved?: number;
  lastStartError?: string;
}

export interface PoolStrategyOptions {
  readonly appId: string;
  /** The pool as its app declares it. */
  readonly pool: PoolSpec;
  readonly driver: SandboxDriver;
  readonly sandboxSpec: SandboxSpec;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Root of the core's materialized revisions (`<root>/<app>/<revision>/...`), where scripts sent along are read. */
  readonly definitionsRoot: string;
  /** Sandboxes started at once. @defaultValue 4 */
  readonly startConcurrency?: number;
  /** Largest /execute answer read from a sandbox, bytes. @defaultValue DEFAULT_MAX_RESPONSE_BYTES (8 MiB) */
  readonly maxResponseBytes?: number;
}

/** Makes the pool of one (app, pool name) with a strategy. */
export type PoolStrategyFactory = (options: PoolStrategyOptions) => KeptPool;
