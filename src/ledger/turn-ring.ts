/**
 * The turns of `async` durability on their way to the ledger thread: a byte
 * ring in shared memory the request thread writes encodeTurn() lines into and
 * the thread drains, instead of a postMessage per batch. A post to a sleeping
 * thread cost the request thread 40–130 µs of its own CPU (the message's copy
 * and the wake-up), at most every 5 ms: a per-turn cost at c1. Here a turn is
 * one copy into the ring; the thread looks at the ring every BATCH_DELAY_MS
 * while turns come, and only a thread that found the ring empty and went to
 * sleep is woken (Atomics.notify), by the first turn after it.
 *
 * What a crash can lose is what it could before: a turn is in the ring at once
 * and written within BATCH_DELAY_MS (plus the write), answered or not.
 *
 * The ring is a byte stream: a line longer than the room left goes in pieces as
 * the thread makes room (the reader keeps an unfinished line until its end
 * comes), and what does not fit waits on the request thread, in order, behind
 * what went before. Positions are int32 counters that wrap; their difference
 * is the bytes in the ring, and a position the counter's low bits (the
 * capacity is a power of two, far below 2^31).
 */

/** How long the thread gathers turns before it writes them (as long as the batch timer of the posts was). */
export const BATCH_DELAY_MS = 5;
/** Ring size: a few thousand turns of the dispatch benchmark, or a few hundred large ones. */
export const DEFAULT_RING_BYTES = 4 * 1024 * 1024;

/** Slots of the control array. */
const WRITTEN = 0;
const READ = 1;
const STATE = 2;
/** STATE: the thread will look at the ring without being told. */
const AWAKE = 0;
/** STATE: the thread found the ring empty and waits to be notified. */
const ASLEEP = 1;

const NEWLINE = 0x0a;

/** Atomics.waitAsync (Node 16+), which the project's TypeScript lib (ES2023) does not declare. */
const waitAsync = (Atomics as unknown as { waitAsync(array: Int32Array, index: number, value: number): { async: boolean; value: Promise<string> | string } }).waitAsync;

/** The shared memory of one ring, handed to the ledger thread in its workerData. */
export interface TurnRingMemory {
  readonly control: SharedArrayBuffer;
  readonly data: SharedArrayBuffer;
}

export function newTurnRing(bytes: number = DEFAULT_RING_BYTES): TurnRingMemory {
  // A power of two: a position is its wrapping counter's low bits.
  if (!Number.isInteger(bytes) || bytes < 16 || bytes > 2 ** 30 || (bytes & (bytes - 1)) !== 0) throw new RangeError(`a turn ring is a power of two from 16 bytes to 1 GiB, not ${bytes}`);
  return { control: new SharedArrayBuffer(3 * Int32Array.BYTES_PER_ELEMENT), data: new SharedArrayBuffer(bytes) };
}

/** The request thread's side: appends lines, in order; never blocks. */
export class TurnRingWriter {
  private readonly control: Int32Array;
  private readonly data: Buffer;
  private readonly capacity: number;
  private readonly mask: number;
  /** Bytes that did not fit yet, oldest first; the first may have been written in part (`sent` bytes of it). */
  private waiting: Buffer[] = [];
  private sent = 0;
  private retry: NodeJS.Timeout | undefined;

  constructor(memory: TurnRingMemory) {
    this.control = new Int32Array(memory.control);
    this.data = Buffer.from(memory.data);
    this.capacity = memory.data.byteLength;
    this.mask = this.capacity - 1;
  }

  /** Lines waiting for room in the ring. */
  get backlog(): number {
    return this.waiting.length;
  }

  /** Appends `line` (encodeTurn()'s, ending in a newline). */
  write(line: string): void {
    if (this.waiting.length === 0) {
      const length = Buffer.byteLength(line);
      const written = Atomics.load(this.control, WRITTEN);
      const free = this.capacity - ((written - Atomics.load(this.control, READ)) | 0);
      const start = written & this.mask;
      // Most turns: room, and no wrap. Encoded straight into the ring.
      if (length <= free && start + length <= this.capacity) {
        this.data.write(line, start, length, 'utf8');
        this.publish(written + length);
        return;
      }
    }
    this.waiting.push(Buffer.from(line, 'utf8'));
    this.pushWaiting();
  }

  /** Stops retrying; what waits is dropped (the thread it was for is gone). Answers whether a line was cut in two. */
  abandon(): { lines: number; cut: boolean } {
    clearTimeout(this.retry);
    this.retry = undefined;
    const dropped = { lines: this.waiting.length, cut: this.sent > 0 };
    this.waiting = [];
    this.sent = 0;
    return dropped;
  }

  /** Resolves once every line is in the ring (not yet written by the thread), or was dropped by abandon(). */
  async settled(): Promise<void> {
    while (this.waiting.length > 0) {
      this.pushWaiting();
      if (this.waiting.length > 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
  }

  /** Copies what waits, as far as the ring has room; retries soon for the rest. */
  private pushWaiting(): void {
    let written = Atomics.load(this.control, WRITTEN);
    let free = this.capacity - ((written - Atomics.load(this.control, READ)) | 0);
    while (this.waiting.length > 0 && free > 0) {
      const bytes = this.waiting[0]!;
      const start = written & this.mask;
      const count = Math.min(bytes.length - this.sent, free, this.capacity - start);
      bytes.copy(this.data, start, this.sent, this.sent + count);
      this.sent += count;
      written += count;
      free -= count;
      if (this.sent === bytes.length) {
        this.waiting.shift();
        this.sent = 0;
      }
    }
    this.publish(written);
    if (this.waiting.length > 0 && this.retry === undefined) {
      // The thread is told now (it may be waiting out its batch delay): the ring is full.
      this.wake(true);
      this.retry = setTimeout(() => {
        this.retry = undefined;
        this.pushWaiting();
      }, 1);
      this.retry.unref();
    }
  }

  private publish(written: number): void {
    Atomics.store(this.control, WRITTEN, written);
    this.wake(false);
  }

  /** Wakes a sleeping thread (or, `always`, one waiting out its delay). Read after WRITTEN was stored: no wake-up is lost. */
  private wake(always: boolean): void {
    if (always || Atomics.load(this.control, STATE) === ASLEEP) {
      Atomics.store(this.control, STATE, AWAKE);
      Atomics.notify(this.control, STATE);
    }
  }
}

/** The ledger thread's side: drains whole lines; wakes itself every BATCH_DELAY_MS while turns come. */
export class TurnRingReader {
  private readonly control: Int32Array;
  private readonly data: Buffer;
  private readonly capacity: number;
  private readonly mask: number;
  /** The start of a line whose end is not in the ring yet. */
  private partial: Buffer | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    memory: TurnRingMemory,
    /** Gets the whole lines drained (one string, as a 'turns' message carried them). */
    private readonly onLines: (lines: string) => void,
  ) {
    this.control = new Int32Array(memory.control);
    this.data = Buffer.from(memory.data);
    this.capacity = memory.data.byteLength;
    this.mask = this.capacity - 1;
  }

  /** Starts looking at the ring. */
  start(): void {
    this.pump();
  }

  /** Stops looking (what is in the ring stays there). */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Takes what is in the ring now and hands its whole lines over; answers how many bytes it took. */
  drain(): number {
    const written = Atomics.load(this.control, WRITTEN);
    const read = Atomics.load(this.control, READ);
    const count = (written - read) | 0;
    if (count === 0) return 0;
    const start = read & this.mask;
    const first = Math.min(count, this.capacity - start);
    const parts = this.partial === undefined ? [] : [this.partial];
    // Copied out before the room is given back.
    parts.push(Buffer.from(this.data.subarray(start, start + first)));
    if (first < count) parts.push(Buffer.from(this.data.subarray(0, count - first)));
    Atomics.store(this.control, READ, written);
    const bytes = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const end = bytes.lastIndexOf(NEWLINE);
    this.partial = end === bytes.length - 1 ? undefined : bytes.subarray(end + 1);
    if (end >= 0) this.onLines(bytes.toString('utf8', 0, end + 1));
    return count;
  }

  private pump(): void {
    if (this.stopped) return;
    if (this.drain() > 0) {
      this.timer = setTimeout(() => this.pump(), BATCH_DELAY_MS);
      return;
    }
    // Nothing came in a whole delay: sleep until the next turn. WRITTEN is read again after ASLEEP is stored,
    // and the writer reads STATE after it stores WRITTEN: one of the two sees the other.
    Atomics.store(this.control, STATE, ASLEEP);
    if (Atomics.load(this.control, WRITTEN) !== Atomics.load(this.control, READ)) {
      Atomics.store(this.control, STATE, AWAKE);
      this.timer = setTimeout(() => this.pump(), 0);
      return;
    }
    const waited = waitAsync(this.control, STATE, ASLEEP);
    if (waited.async) void (waited.value as Promise<string>).then(() => this.pump());
    else this.timer = setTimeout(() => this.pump(), 0);
  }
}
