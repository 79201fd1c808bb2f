/**
 * A keyed work queue with the semantics of client-go's: a key waits in the queue at
 * most once however often it is added; a key being processed is never handed to a
 * second worker, and if it is added meanwhile it is queued again when the first
 * worker is done. Failed keys come back after a per-key exponential backoff.
 */
import { backoffDelay } from '../shared/backoff.js';

export interface WorkQueueOptions {
  /** Delay of the first rate-limited requeue of a key; doubles per consecutive failure. @defaultValue `100` */
  baseDelayMs?: number;
  /** Upper bound of the rate-limited requeue delay. @defaultValue `60000` */
  maxDelayMs?: number;
}

export class WorkQueue {
  private readonly queue: string[] = [];
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  private readonly failures = new Map<string, number>();
  private readonly delayed = new Map<string, NodeJS.Timeout>();
  private readonly waiters: Array<(key: string | undefined) => void> = [];
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.baseDelayMs = options.baseDelayMs ?? 100;
    this.maxDelayMs = options.maxDelayMs ?? 60_000;
  }

  add(key: string): void {
    if (this.shuttingDown || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return; // done() queues it again
    const waiter = this.waiters.shift();
    if (waiter) {
      this.dirty.delete(key);
      this.processing.add(key);
      waiter(key);
    } else {
      this.queue.push(key);
    }
  }

  /** Adds the key after a delay; an earlier pending delay for the same key wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.shuttingDown) return;
    if (delayMs <= 0) return this.add(key);
    if (this.delayed.has(key)) return;
    const timer = setTimeout(() => {
      this.delayed.delete(key);
      this.add(key);
    }, delayMs);
    timer.unref();
    this.delayed.set(key, timer);
  }

  /** Adds the key after its backoff: base delay doubled for each failure since the last forget(). */
  addRateLimited(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    const delay = backoffDelay(failures, { initialMs: this.baseDelayMs, maxMs: this.maxDelayMs, jitter: 'none' });
    this.addAfter(key, delay);
    return delay;
  }

  /** Clears the failure count of a key, after it was processed successfully. */
  forget(key: string): void {
    this.failures.delete(key);
  }

  /** The next key to process, waiting for one; undefined once the queue is shut down. */
  get(): Promise<string | undefined> {
    if (this.shuttingDown) return Promise.resolve(undefined);
    const key = this.queue.shift();
    if (key !== undefined) {
      this.dirty.delete(key);
      this.processing.add(key);
      return Promise.resolve(key);
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Marks a key from get() as processed; if it was added meanwhile it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key)) {
      this.dirty.delete(key);
      this.add(key);
    }
  }

  get length(): number {
    return this.queue.length;
  }

  /** Stops handing out keys: pending get() calls resolve with undefined and timers are dropped. */
  shutDown(): void {
    this.shuttingDown = true;
    for (const timer of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    for (const waiter of this.waiters.splice(0)) waiter(undefined);
  }
}
