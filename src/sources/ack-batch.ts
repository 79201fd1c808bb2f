/**
 * The acknowledgements of one delivery stream, group-committed. A success is
 * queued with the once-only answer it kept (when it ran here rather than
 * replayed); the successes of one turn of the event loop leave together, and
 * while a batch is being answered the next ones gather behind it. Under load
 * one script completes the batch's records and acknowledges its messages
 * (DeliveryStore.ack) instead of two commands for each message (each command is
 * a socket write and a reply to parse on the core's one thread); on a quiet
 * stream a success still leaves within the same turn of the loop. A batch may
 * be held back to leave no sooner than `spacingMs` after the one before it:
 * under a steady load the batches then grow with the rate (one script for a
 * millisecond's successes rather than for each round trip's), while a success
 * after a quiet spell still leaves at once.
 *
 * Ordering allows it: a success frees its slot before its batch is answered,
 * and a record and its message's acknowledgement are settled in the same step,
 * so a batch lost with its core (or refused by the store) leaves each message
 * pending with its record in flight: both expire with the route's lease, and
 * the core that takes the message over runs it again, as when a core died
 * between the run and its record's completion before batching. See
 * delivery-consumer.ts for the window this widens and why it is bounded.
 */
import type { KeptAnswer } from '../state/idempotency-store.js';

/** Most ids in one acknowledgement: bounds one command's size on a long backlog. */
const MAX_BATCH = 512;

export class AckBatch {
  private queued: string[] = [];
  /** The answer each queued id kept, undefined for a replay: kept beside its id so a split batch never parts them. */
  private answers: Array<KeptAnswer | undefined> = [];
  private flushing: Promise<void> | undefined;
  /** When the last batch left (performance.now()). */
  private lastLeft = -Infinity;

  constructor(
    /** Settles the ids and keeps the answers in one step (DeliveryStore.ack). */
    private readonly settle: (ids: readonly string[], answers: readonly KeptAnswer[]) => Promise<void>,
    /** Told when a batch failed; its messages stay pending and are taken over after their lease. */
    private readonly onError: (error: unknown) => void,
    /** Least time between two batches leaving, ms. @defaultValue 0: a batch leaves as soon as the one before it was answered */
    private readonly spacingMs = 0,
  ) {}

  /** Queues one message's acknowledgement, with the once-only answer it kept. */
  add(id: string, answer?: KeptAnswer): void {
    this.queued.push(id);
    this.answers.push(answer);
    this.flushing ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.flush());
  }

  /** Resolves once every acknowledgement queued so far was answered (or failed). */
  async settled(): Promise<void> {
    while (this.flushing !== undefined) await this.flushing;
  }

  private async flush(): Promise<void> {
    while (this.queued.length > 0) {
      // Looked at again after each timer: one may fire a little before its time (the loop's clock is read once a turn).
      while (this.queued.length < MAX_BATCH) {
        const wait = this.lastLeft + this.spacingMs - performance.now();
        if (wait <= 0) break;
        await new Promise((resolve) => setTimeout(resolve, Math.ceil(wait)));
      }
      this.lastLeft = performance.now();
      const whole = this.queued.length <= MAX_BATCH;
      const ids = whole ? this.queued : this.queued.splice(0, MAX_BATCH);
      const answers = whole ? this.answers : this.answers.splice(0, MAX_BATCH);
      if (whole) {
        this.queued = [];
        this.answers = [];
      }
      const kept: KeptAnswer[] = [];
      for (const answer of answers) if (answer !== undefined) kept.push(answer);
      try {
        await this.settle(ids, kept);
      } catch (error) {
        this.onError(error);
      }
    }
    this.flushing = undefined;
  }
}
