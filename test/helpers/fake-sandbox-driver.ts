/**
 * A sandbox driver for unit tests of the pools: its sandboxes exist only in
 * memory, and tests decide when they start, die and retire.
 */
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';

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

  async create(_spec: SandboxSpec): Promise<SandboxHandle> {
    this.created += 1;
    if (this.gate) await this.gate.promise;
    if (this.failStarts) throw new Error('cannot start');
    const id = `fake-${this.created}`;
    let exit!: (cause: SandboxExitCause) => void;
    const exited = new Promise<SandboxExitCause>((resolve) => (exit = resolve));
    let retire!: () => void;
    const retiring = new Promise<void>((resolve) => (retire = resolve));
    const handle: SandboxHandle = { id, endpoint: { kind: 'unix', socketPath: `/nonexistent/${id}.sock` }, exited, retiring };
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

/** A promise the test resolves when it wants: holds create() until then. */
export function makeGate(): { promise: Promise<void>; release(): void } {
  let release!: () => void;
  const promise = new Promise<void>((resolve) => (release = resolve));
  return { promise, release };
}
