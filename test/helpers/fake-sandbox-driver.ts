/**
 * A sandbox driver for unit tests of the pools: its sandboxes exist only in
 * memory, and tests decide when they start, die and retire.
 */
import type { WarmClaimSource } from '../../src/sandbox/claim-reserve.js';
import type { SandboxDriver, SandboxEndpoint, SandboxExitCause, SandboxHandle, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';

/** A driver whose sandboxes exist only in memory; tests decide when they start and die. */
export class FakeDriver implements SandboxDriver {
  readonly name = 'fake';
  readonly isolation = 'none';
  created = 0;
  live = new Map<string, { handle: SandboxHandle; exit(cause: SandboxExitCause): void; retire(): void }>();
  destroyed: Array<{ id: string; cause: SandboxExitCause }> = [];
  failStarts = false;
  /** When set, create() waits for release() before it resolves. */
  gate: { promise: Promise<void>; release(): void } | undefined;
  maxLive = 0;
  /** Where every sandbox answers; none by default (a socket path that does not exist). */
  endpoint: SandboxEndpoint | undefined;

  async create(_spec: SandboxSpec): Promise<SandboxHandle> {
    this.created += 1;
    if (this.gate) await this.gate.promise;
    if (this.failStarts) throw new Error('cannot start');
    const id = `fake-${this.created}`;
    let exit!: (cause: SandboxExitCause) => void;
    const exited = new Promise<SandboxExitCause>((resolve) => (exit = resolve));
    let retire!: () => void;
    const retiring = new Promise<void>((resolve) => (retire = resolve));
    const handle: SandboxHandle = { id, endpoint: this.endpoint ?? { kind: 'unix', socketPath: `/nonexistent/${id}.sock` }, exited, retiring };
    this.live.set(id, { handle, exit, retire });
    this.maxLive = Math.max(this.maxLive, this.live.size);
    return handle;
  }

  async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    const entry = this.live.get(handle.id);
    if (!entry) return;
    this.live.delete(handle.id);
    this.destroyed.push({ id: handle.id, cause });
    entry.exit(cause);
  }

  /** Simulates a sandbox dying on its own. */
  kill(id: string): void {
    const entry = this.live.get(id);
    this.live.delete(id);
    entry?.exit('crash');
  }

  /** Simulates a sandbox stopped from outside that drains first (a pod being deleted). */
  retire(id: string): void {
    this.live.get(id)?.retire();
  }

  async close(): Promise<void> {}
}

/**
 * A driver whose sandboxes someone else keeps warm, as the operator does pods: a claim
 * takes one of `warm`, giving one back (`shutdown`) makes it warm again.
 */
export class FakeWarmClaimDriver extends FakeDriver implements WarmClaimSource {
  warm: number;
  replicas: number | undefined;
  claims = 0;
  failClaims = false;

  constructor(warm: number, replicas: number | undefined) {
    super();
    this.warm = warm;
    this.replicas = replicas;
  }

  async claimWarm(spec: SandboxSpec): Promise<SandboxHandle | undefined> {
    this.claims += 1;
    if (this.failClaims) throw new Error('the API server refused');
    if (this.warm === 0) return undefined;
    this.warm -= 1;
    return this.create(spec);
  }

  /** Sandboxes that stopped looking able to serve (a pod no longer Ready). */
  unhealthy = new Set<string>();

  healthy(handle: SandboxHandle): boolean {
    return !this.unhealthy.has(handle.id);
  }

  warmReplicas(): number | undefined {
    return this.replicas;
  }

  override async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    if (cause === 'shutdown' && this.live.has(handle.id)) this.warm += 1;
    await super.destroy(handle, cause);
  }
}

/** A promise the test resolves when it wants: holds create() until then. */
export function makeGate(): { promise: Promise<void>; release(): void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}
