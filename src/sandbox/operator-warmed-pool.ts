/**
 * The pool warmed by the operator (a PoolStrategy, pool-strategy.ts), for the pod
 * driver. The operator keeps each SandboxPool's warm pods, so warm capacity
 * follows `spec.replicas` and exists before any core asks; a second set of
 * spares kept by the core would only double it. This pool therefore keeps no
 * warm sandboxes of its own: it claims a pod when a request needs one (the
 * driver's `create`), keeps the pods it used until their idle TTL, and counts,
 * queues and recycles them as the local warm pool does (it is one, with
 * minWarm 0).
 *
 * Pods share no file system with the core: a runner would read a script it has
 * not run yet through MCP, one round trip more on a pod's first request. The
 * script goes along with its first execution on each pod instead (script-push.ts).
 */
import type { KeptPool, Lease, PoolStats, PoolStrategyFactory, PoolStrategyOptions, ReleaseOutcome } from './pool-strategy.js';
import { ScriptPush, type ScriptRef } from './script-push.js';
import { WarmPool } from './warm-pool.js';

/** The strategy of a pool warmed by the operator: the core claims warm pods and keeps only those it used. */
export const operatorWarmedPool: PoolStrategyFactory = (options) => new OperatorWarmedPool(options);

export class OperatorWarmedPool implements KeptPool {
  private readonly claimed: WarmPool;
  private readonly scripts: ScriptPush;
  private readonly options: PoolStrategyOptions;

  constructor(options: PoolStrategyOptions) {
    this.options = options;
    const pool = { ...options.pool, minWarm: 0 };
    this.claimed = new WarmPool({ ...options, pool, sandboxSpec: { ...options.sandboxSpec, pool } });
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
  }

  /** Starts the pool, once the driver had what the operator's warm pods need (a runner: mcp pool's server). */
  async start(): Promise<void> {
    await this.options.driver.preparePool?.(this.options.sandboxSpec).catch((error: unknown) => {
      // The pool still serves: it claims pods it makes itself; the operator keeps none warm meanwhile.
      this.options.logger.warn({ app: this.appId, pool: this.pool.name, err: error instanceof Error ? error.message : error }, 'the pool could not be prepared for warm pods');
    });
    return this.claimed.start();
  }

  whenReady(): Promise<void> {
    return this.claimed.whenReady();
  }

  stats(): PoolStats {
    return this.claimed.stats();
  }

  close(options?: { force?: boolean }): Promise<void> {
    return this.claimed.close(options);
  }
}
