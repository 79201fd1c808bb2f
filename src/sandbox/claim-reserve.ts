/**
 * A core's claim-ahead reserve for one pool warmed by the operator: a few warm
 * pods it has already claimed, so that a request that needs a new pod takes one
 * at once and the claim's API-server write happens before the request, not in it.
 *
 * The claim is the same one the request would have made (the pod driver's label
 * patch carrying the resourceVersion it saw), only earlier, so every guarantee of
 * a claim holds for a reserved pod: the API server lets one core have it; it is
 * labelled with the core's instance id and records the core's pod, so a restarted
 * core adopts it and the operator deletes it once a replaced core's pod is gone
 * (src/operator/claimer-pods.ts), as it does any claimed pod.
 *
 * Bounded three ways, read again at every refill and every maintenance tick:
 * `size` (UHLP_POD_CLAIM_AHEAD, at most the app's minWarm), the pool's current
 * warm replicas (SandboxPool spec.replicas: after `kubectl scale --replicas=1` a
 * core holds at most one, after a scale to 0 none), and what the core's own
 * maxSize for the pool leaves. Pods beyond the bound go back to warm (the
 * operator then deletes those over its replicas), as they do on close.
 *
 * It refills once a request that took from it is answered, and on each tick, counting the pool's idle claimed
 * pods as filled (a request takes those first), and only ever claims a pod that
 * is warm and Ready: it never creates one (a miss on the request's path still
 * does), so it adds no pods of its own beyond what the operator keeps.
 *
 * A claimed pod's first request would also open the core's connection to it (a
 * TCP connect and a first exchange on a new connection: a millisecond or more of
 * the core's time on a pod network). So the reserve opens that connection too,
 * with a health probe, as it claims the pod, keeps it proven while it holds the
 * pod, and hands it out with the pod; the request finds it open.
 */
import type { Logger } from '../logger.js';
import type { SandboxClient } from './sandbox-client.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';

/** Pods each pool of a core claims ahead, unless configured (UHLP_POD_CLAIM_AHEAD). */
export const DEFAULT_CLAIM_AHEAD = 2;

/**
 * A held sandbox's connection is probed again after this long, ms: well inside the time the core
 * reuses an idle connection (sandbox-client.ts), so the one handed out is still good.
 */
const REPROBE_AFTER_MS = 10_000;
const PROBE_TIMEOUT_MS = 2_000;

/** What a driver whose sandboxes someone else keeps warm offers a claim-ahead reserve. */
export interface WarmClaimSource {
  /** Claims a warm sandbox of the pool now; undefined when none is warm. Never creates one. */
  claimWarm(spec: SandboxSpec): Promise<SandboxHandle | undefined>;
  /** Sandboxes the pool keeps warm now (its SandboxPool's spec.replicas); undefined while not known. */
  warmReplicas(spec: SandboxSpec): number | undefined;
  /**
   * Whether a claimed sandbox still looks able to serve (a pod: not being deleted, Ready), as a
   * claim asks of a warm one; read as the reserve hands it out. @defaultValue always
   */
  healthy?(handle: SandboxHandle): boolean;
  /** Gives a sandbox up: `shutdown` hands an unused claimed pod back as warm. */
  destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void>;
}

/** True for drivers that can claim ahead (the pod driver). */
export function isWarmClaimSource(driver: SandboxDriver): driver is SandboxDriver & WarmClaimSource {
  const candidate = driver as Partial<WarmClaimSource>;
  return typeof candidate.claimWarm === 'function' && typeof candidate.warmReplicas === 'function';
}

export interface ClaimReserveOptions {
  readonly source: WarmClaimSource;
  readonly spec: SandboxSpec;
  /** Most sandboxes held in reserve. */
  readonly size: number;
  /** Sandboxes the core may still add to this pool besides the reserve (its maxSize less what it holds). */
  readonly room: () => number;
  /**
   * Claimed sandboxes the pool already holds idle (used ones kept until their idle TTL, pods a
   * restarted core adopted): a request takes those first with no claim either, so they count
   * toward the reserve's fill, never its bound. @defaultValue none
   */
  readonly idle?: () => number;
  readonly logger: Logger;
  /**
   * The core's client of a sandbox, made as it is claimed; the reserve opens its connection with a
   * probe and closes it unless the sandbox is handed out with it. @defaultValue none: the request connects
   */
  readonly connect?: (handle: SandboxHandle) => SandboxClient;
  /** How often the bound is read again, the reserve trimmed to it and refilled, ms. @defaultValue 1000 */
  readonly maintenanceIntervalMs?: number;
  /** Clock, for tests. @defaultValue performance.now */
  readonly now?: () => number;
}

/** A sandbox the reserve hands out: claimed, and with the core's connection to it already open when it has one. */
export interface ReservedSandbox {
  readonly handle: SandboxHandle;
  readonly client: SandboxClient | undefined;
}

interface Reserved {
  readonly handle: SandboxHandle;
  readonly client: SandboxClient | undefined;
  /** When its connection was last proven (or opened). */
  probedAt: number;
  /** Gone (its pod ended, or is being deleted) or handed out: never handed out again. */
  out: boolean;
}

export class ClaimReserve {
  private readonly held: Reserved[] = [];
  private readonly pending = new Set<Promise<void>>();
  private claiming = 0;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => number;

  constructor(private readonly options: ClaimReserveOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Starts the maintenance tick and the first refill. */
  start(): void {
    this.timer = setInterval(() => this.maintain(), this.options.maintenanceIntervalMs ?? 1000);
    this.timer.unref();
    this.refill();
  }

  /** How many sandboxes the reserve may hold now. */
  limit(): number {
    const replicas = this.options.source.warmReplicas(this.options.spec) ?? 0;
    return Math.max(0, Math.min(this.options.size, replicas, this.options.room()));
  }

  /** Sandboxes held now (claimed, alive, not handed out). */
  get size(): number {
    return this.held.length;
  }

  /**
   * A reserved sandbox, already claimed, or undefined. Claims nothing itself: the taker's request is
   * under way, and a claim's API-server write and its answer would share the core with it. The pool
   * refills once that request is answered (`refill`), and the maintenance tick does meanwhile.
   */
  take(): ReservedSandbox | undefined {
    let taken: ReservedSandbox | undefined;
    while (taken === undefined && this.held.length > 0) {
      const reserved = this.held.shift()!;
      if (reserved.out) continue;
      // No longer Ready while it waited (its runner stopped answering the kubelet's probe): not handed out.
      if (this.options.source.healthy?.(reserved.handle) === false) {
        this.giveBack(reserved, 'unhealthy');
        continue;
      }
      reserved.out = true;
      taken = { handle: reserved.handle, client: reserved.client };
    }
    return taken;
  }

  /** Claims warm sandboxes until the reserve, with those on their way and the pool's idle ones, holds its limit. */
  refill(): void {
    if (this.closed) return;
    let wanted = this.limit() - this.held.length - this.claiming - (this.options.idle?.() ?? 0);
    while (wanted-- > 0) this.track(this.claimOne());
  }

  /** Gives every reserved sandbox back (claimed pods go back to warm), and any claimed while closing. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const reserved of this.held.splice(0)) this.giveBack(reserved, 'shutdown');
    while (this.pending.size > 0) await Promise.all([...this.pending]);
  }

  /** Trims the reserve to its limit (a scale-down, a pool that filled up), then refills it. */
  private maintain(): void {
    if (this.closed) return;
    const limit = this.limit();
    while (this.held.length > limit) this.giveBack(this.held.pop()!, 'shutdown');
    const now = this.now();
    for (const reserved of this.held) if (now - reserved.probedAt >= REPROBE_AFTER_MS) this.probe(reserved);
    this.refill();
  }

  /**
   * Opens (or proves again) the connection to a held sandbox. A failed probe only costs the connection:
   * whether the pod is healthy is its Ready condition's to say (take), and the request then connects itself.
   */
  private probe(reserved: Reserved): void {
    reserved.probedAt = this.now();
    void reserved.client?.probe(PROBE_TIMEOUT_MS);
  }

  private async claimOne(): Promise<void> {
    this.claiming += 1;
    let handle: SandboxHandle | undefined;
    try {
      handle = await this.options.source.claimWarm(this.options.spec);
    } catch (error) {
      // The next take or tick tries again; the request path claims on its own meanwhile.
      this.options.logger.debug({ app: this.options.spec.appId, pool: this.options.spec.pool.name, err: (error as Error).message }, 'claim-ahead failed');
    } finally {
      this.claiming -= 1;
    }
    // No warm pod: nothing to do until the next take or tick (never a loop of claims).
    if (handle === undefined) return;
    if (this.closed || this.held.length >= this.limit()) {
      this.giveBack({ handle, client: undefined, probedAt: 0, out: false }, 'shutdown');
      return;
    }
    const reserved: Reserved = { handle, client: this.options.connect?.(handle), probedAt: 0, out: false };
    this.held.push(reserved);
    this.probe(reserved);
    void handle.exited.then(() => this.drop(reserved));
    // Being deleted by someone else (kubectl, a node drain): no request is sent to it.
    void handle.retiring?.then(() => {
      if (this.drop(reserved)) this.track(this.options.source.destroy(handle, 'recycled').catch(() => undefined));
    });
  }

  /** Forgets a reserved sandbox that is gone; true when it was still held. */
  private drop(reserved: Reserved): boolean {
    if (reserved.out) return false;
    reserved.out = true;
    reserved.client?.close();
    const index = this.held.indexOf(reserved);
    if (index !== -1) this.held.splice(index, 1);
    this.refill();
    return true;
  }

  private giveBack(reserved: Reserved, cause: SandboxExitCause): void {
    reserved.out = true;
    reserved.client?.close();
    this.track(
      this.options.source.destroy(reserved.handle, cause).catch((error: Error) => {
        this.options.logger.warn({ sandbox: reserved.handle.id, err: error.message }, 'giving back a reserved sandbox failed');
      }),
    );
  }

  private track(work: Promise<void>): void {
    const done = work.finally(() => this.pending.delete(done));
    this.pending.add(done);
  }
}
