/**
 * The project's one per-key lock: counting semaphores by key, at most `limit`
 * holders of one key at once, waiters served first come, first served, each
 * until its own deadline or for as long as it takes. A key with no holder and
 * no waiter is forgotten, so a lock per repository, per URL or per function
 * version costs nothing once idle.
 *
 * - `acquire` is the counting form: the cs-js invoker keys it by tenant,
 *   namespace, function and version, so a version's `maxConcurrency` holds per
 *   replica whatever else runs.
 * - `run` is the mutex and the promise queue: tasks of one key run one after
 *   another in the order they came (a failed task does not stop the next).
 */
/** A waiter in its key's line: a singly linked list, so that a long line costs O(1) per grant. */
interface Waiter {
  readonly grant: () => void;
  timer: NodeJS.Timeout | undefined;
  next: Waiter | undefined;
  /** Its wait passed: it stays in the line, skipped, until the line reaches it. */
  gone: boolean;
}

interface Entry {
  held: number;
  first: Waiter | undefined;
  last: Waiter | undefined;
  /** Waiters in the line that have not given up. */
  waiting: number;
}

type Release = () => void;

export class KeyedSemaphore {
  private readonly entries = new Map<string, Entry>();

  /**
   * Resolves with a release function once a slot of `key` is free; resolves
   * with undefined when `waitMs` passes first (never, when it is infinite).
   * Answers the release function at once when a slot is free. Call the release
   * exactly once.
   */
  acquire(key: string, limit: number, waitMs: number): Promise<Release | undefined> | Release {
    let entry = this.entries.get(key);
    if (entry === undefined) {
      entry = { held: 0, first: undefined, last: undefined, waiting: 0 };
      this.entries.set(key, entry);
    }
    const target = entry;
    if (target.held < limit && target.waiting === 0) {
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
        timer: undefined,
        next: undefined,
        gone: false,
      };
      if (Number.isFinite(waitMs)) {
        waiter.timer = setTimeout(() => {
          waiter.gone = true;
          target.waiting--;
          resolve(undefined);
        }, Math.max(0, waitMs));
      }
      if (target.last === undefined) target.first = waiter;
      else target.last.next = waiter;
      target.last = waiter;
      target.waiting++;
    });
  }

  /**
   * Runs `task` holding one of `limit` slots of `key` (1: one task of the key at
   * a time), after the tasks of the key that came before it; answers the task's
   * outcome. The task always starts asynchronously, even when the key is free.
   */
  async run<T>(key: string, task: () => Promise<T> | T, limit = 1): Promise<T> {
    const release = (await this.acquire(key, limit, Number.POSITIVE_INFINITY))!;
    try {
      return await task();
    } finally {
      release();
    }
  }

  /** Holders of `key` now. */
  held(key: string): number {
    return this.entries.get(key)?.held ?? 0;
  }

  private releaser(key: string, entry: Entry): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.held--;
      const next = this.nextWaiter(entry);
      if (next !== undefined) next.grant();
      else if (entry.held === 0) this.entries.delete(key);
    };
  }

  /** Takes the first waiter that still waits off the line, dropping those that gave up. */
  private nextWaiter(entry: Entry): Waiter | undefined {
    let waiter = entry.first;
    while (waiter !== undefined && waiter.gone) waiter = waiter.next;
    entry.first = waiter?.next;
    if (entry.first === undefined) entry.last = undefined;
    if (waiter !== undefined) entry.waiting--;
    return waiter;
  }
}
