/**
 * The acknowledgements of one delivery stream, group-committed. A success is
 * queued; the successes of one turn of the event loop leave together, and while
 * a batch is being answered the next ones gather behind it. Under load one
 * XACK + XDEL settles many messages instead of one each (each command is a
 * socket write and a reply to parse on the core's one thread); on a quiet
 * stream an acknowledgement still leaves within the same turn of the loop.
 *
 * Ordering allows it: a success frees its slot before its acknowledgement is
 * answered anyway, and an acknowledgement lost with its core only means a
 * redelivery, which the once-only record answers without running the
 * component again.
 */

/** Most ids in one acknowledgement: bounds one command's size on a long backlog. */
const MAX_BATCH = 512;

export class AckBatch {
  private queued: string[] = [];
  private flushing: Promise<void> | undefined;

  constructor(
    /** Settles the ids in one step (DeliveryStore.ack). */
    private readonly settle: (ids: readonly string[]) => Promise<void>,
    /** Told when a batch failed; its messages stay pending and are taken over after their lease. */
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Queues one message's acknowledgement. */
  add(id: string): void {
    this.queued.push(id);
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
  }

  /** Resolves once every acknowledgement queued so far was answered (or failed). */
  async settled(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.queued.length > 0) {
      const ids = this.queued.length > MAX_BATCH ? this.queued.splice(0, MAX_BATCH) : this.queued;
      if (ids === this.queued) this.queued = [];
      try {
        await this.settle(ids);
      } catch (error) {
        this.onError(error);
      }
    }
    this.flushing = undefined;
  }
}
