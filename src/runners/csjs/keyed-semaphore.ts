/**
 * Counting semaphores by key: at most `limit` holders of one key at once,
 * waiters served first come, first served, each until its own deadline. The
 * cs-js invoker keys them by tenant, namespace, function and version, so a
 * version's `maxConcurrency` holds per replica whatever else runs.
 */
interface Waiter {
  readonly grant: () => void;
  readonly timer: NodeJS.Timeout;
}

interface Entry {
  held: number;
  readonly waiters: Waiter[];
}

export class KeyedSemaphore {
  private readonly entries = new Map<string, Entry>();

  /**
   * Resolves with a release function once a slot of `key` is free; resolves
   * with undefined when `waitMs` passes first. Call the release exactly once.
   */
  acquire(key: string, limit: number, waitMs: number): Promise<(() => void) | undefined> | (() => void) {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { held: 0, waiters: [] };
      this.entries.set(key, entry);
    }
    const target = entry;
    if (target.held < limit && target.waiters.length === 0) {
      target.held++;
      return this.releaser(key, target);
    }
    return new Promise((resolve) => {
      const waiter: Waiter = {
        grant: () => {
          clearTimeout(waiter.timer);
          target.held++;
          resolve(this.releaser(key, target));
        },
        timer: setTimeout(() => {
          const index = target.waiters.indexOf(waiter);
          if (index >= 0) target.waiters.splice(index, 1);
          resolve(undefined);
        }, Math.max(0, waitMs)),
      };
      target.waiters.push(waiter);
    });
  }

  /** Holders of `key` now. */
  held(key: string): number {
    return this.entries.get(key)?.held ?? 0;
  }

  private releaser(key: string, entry: Entry): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.held--;
      const next = entry.waiters.shift();
      if (next !== undefined) next.grant();
      else if (entry.held === 0) this.entries.delete(key);
    };
  }
}
