/**
 * Runs a reconcile function over the keys of a work queue: workers take a key,
 * reconcile it, and either forget its failures (success, perhaps with a requeue
 * after a delay) or put it back with backoff (failure).
 */
import { WorkQueue, type WorkQueueOptions } from './work-queue.js';

/** What a reconcile asks for beyond success. */
export interface ReconcileResult {
  /** Reconcile the key again after this many milliseconds (e.g. waiting for children to go). */
  requeueAfterMs?: number;
}

export type Reconcile = (key: string) => Promise<ReconcileResult | void>;

export interface ControllerOptions extends WorkQueueOptions {
  /** Name used in error reports. */
  name: string;
  /** Keys reconciled at once; one key is never reconciled twice at the same time. @defaultValue `2` */
  workers?: number;
  /** Told about each failed reconcile before its requeue. @defaultValue ignore */
  onError?: (name: string, key: string, error: unknown) => void;
  /** Told the outcome and duration of every reconcile (for metrics). @defaultValue ignore */
  onReconciled?: (name: string, outcome: 'ok' | 'error', seconds: number) => void;
}

export class Controller {
  readonly queue: WorkQueue;
  private readonly running: Promise<void>[] = [];

  constructor(
    private readonly reconcile: Reconcile,
    private readonly options: ControllerOptions,
  ) {
    this.queue = new WorkQueue(options);
  }

  start(): void {
    for (let worker = 0; worker < (this.options.workers ?? 2); worker += 1) this.running.push(this.work());
  }

  /** Stops taking keys and waits for reconciles in flight to finish. */
  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.running.splice(0));
  }

  private async work(): Promise<void> {
    for (let key = await this.queue.get(); key !== undefined; key = await this.queue.get()) {
      const started = performance.now();
      try {
        const result = await this.reconcile(key);
        this.options.onReconciled?.(this.options.name, 'ok', (performance.now() - started) / 1000);
        this.queue.forget(key);
        if (result?.requeueAfterMs !== undefined) this.queue.addAfter(key, result.requeueAfterMs);
      } catch (error) {
        this.options.onReconciled?.(this.options.name, 'error', (performance.now() - started) / 1000);
        this.options.onError?.(this.options.name, key, error);
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}

/** `namespace/name`, the key of a namespaced object. */
export function objectKey(object: { metadata?: { namespace?: string; name?: string } }): string {
  return `${object.metadata?.namespace ?? ''}/${object.metadata?.name ?? ''}`;
}

export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}
