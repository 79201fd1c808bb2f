/**
 * The core's side of the ledger thread. Turns are batched and posted to a
 * worker thread (ledger-worker.ts), which hashes and writes them; the request
 * thread only copies each turn once. Session starts are answered, so a
 * session's first turn is never written before its files exist.
 *
 * Durability (`--ledger-durability`):
 * - `async`: a turn is copied into a ring in shared memory and its answer sent
 *   at once; the thread drains the ring every 5 ms while turns come, and is
 *   woken by the first turn after it found the ring empty (turn-ring.ts). A
 *   crash can lose the turns of the last few milliseconds, answered or not.
 * - `sync`: record() returns a promise that resolves once the turn's entries are
 *   written (in the operating system's page cache), and the answer waits for
 *   it. Group commit keeps that cheap: while one batch is being written, the
 *   turns that finish meanwhile gather and go as the next batch the moment it
 *   is done, so a busy core writes big batches and an idle one waits for no
 *   timer. A killed core loses no answered turn; a power loss can.
 * - `fsync`: as `sync`, and each batch is flushed to disk (fdatasync) first: an
 *   answered turn survives a power loss too.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { UhlpError } from '../shared/errors.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { SessionStart } from './file-ledger.js';
import type { LedgerKey } from './ledger-key.js';
import type { PruneReport } from './ledger-prune.js';
import type { RetentionPolicy } from './ledger-retention.js';
import type { LedgerWorkerData } from './ledger-worker.js';
import { encodeTurn, type FromLedgerThread, type ToLedgerThread, type TurnRecord } from './turn-ledger-protocol.js';
import { DEFAULT_RING_BYTES, newTurnRing, TurnRingWriter, type TurnRingMemory } from './turn-ring.js';

/**
 * The compiled worker. Resolved from the package root so that it is the same file
 * whether this module runs from dist/ or, in tests, from src/.
 */
export const LEDGER_WORKER_ENTRY = fileURLToPath(new URL('../../dist/ledger/ledger-worker.js', import.meta.url));

export const LEDGER_DURABILITIES = ['async', 'sync', 'fsync'] as const;
export type LedgerDurability = (typeof LEDGER_DURABILITIES)[number];

export interface TurnLedgerThreadOptions {
  /** The core's data directory; ledgers go under `planes/<tier>/sessions/`. */
  readonly dataDir: string;
  readonly logger: Logger;
  /** Seal entries with HMAC-SHA256 under this key. @defaultValue none: plain sha256 */
  readonly key?: LedgerKey;
  /** When an answer may leave relative to its turn's entries (see above). @defaultValue `async` */
  readonly durability?: LedgerDurability;
  /** Segment size limit, bytes. @defaultValue DEFAULT_SEGMENT_BYTES (file-ledger.ts) */
  readonly segmentBytes?: number;
  /** Segment age limit, ms. @defaultValue DEFAULT_SEGMENT_MS (file-ledger.ts) */
  readonly segmentMs?: number;
  /** Worker entry script. @defaultValue LEDGER_WORKER_ENTRY */
  readonly entry?: string;
  /** Counts failed writes (uhlp_ledger_write_errors_total). @defaultValue none counted */
  readonly metrics?: Pick<Metrics, 'ledgerWriteErrors'>;
  /** Size of the `async` turn ring, bytes, a power of two (turn-ring.ts). @defaultValue DEFAULT_RING_BYTES */
  readonly ringBytes?: number;
}


type Request = { kind: 'start'; tier: string; sessionId: string; meta?: SessionStart } | { kind: 'close' } | { kind: 'prune'; policy: RetentionPolicy; sessionTtlMs: number };

/** A turn whose answer waits for its entries (sync, fsync). */
interface Waiter {
  key: string;
  resolve: () => void;
  reject: (error: Error) => void;
}

export class TurnLedgerThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (report?: PruneReport) => void; reject: (error: Error) => void }>();
  private nextId = 1;
  /** Async durability: the ring the running thread drains (a new one per thread). */
  private ring: TurnRingWriter | undefined;
  private ringMemory: TurnRingMemory | undefined;
  /** Sync durability: turns waiting to be posted, as lines (turn-ledger-protocol.ts). */
  private batch = '';
  private batched = 0;
  private readonly durability: LedgerDurability;
  /** Sync durability: the waiters of the batch being gathered, of the batches posted, and whether a post is due. */
  private waiters: Waiter[] = [];
  private readonly posted = new Map<number, Waiter[]>();
  private nextSeq = 1;
  private flushQueued = false;

  constructor(private readonly options: TurnLedgerThreadOptions) {
    this.durability = options.durability ?? 'async';
    // Started now, so the first request does not wait for a thread to boot.
    this.thread();
  }

  /** Creates the session's ledger files; resolves once they exist. */
  startSession(tier: string, sessionId: string, meta?: SessionStart): Promise<void> {
    return this.request({ kind: 'start', tier, sessionId, ...(meta ? { meta } : {}) }).then(() => undefined);
  }

  /**
   * Queues a turn. In `async` durability returns undefined: failures to write
   * it are logged, never thrown. In `sync` and `fsync` returns a promise that
   * resolves once the turn's entries are written (and flushed), and rejects with
   * `UHLP_LEDGER_UNAVAILABLE` when they could not be.
   */
  record(turn: TurnRecord): Promise<void> | undefined {
    if (this.durability === 'async') {
      this.thread();
      this.ring!.write(encodeTurn(turn));
      return undefined;
    }
    this.batch += encodeTurn(turn);
    this.batched += 1;
    const written = new Promise<void>((resolve, reject) => this.waiters.push({ key: `${turn.sessionId}\0${turn.turnNumber}`, resolve, reject }));
    // Group commit: with nothing being written, post once this round of the event loop is over (gathering what
    // else finishes in it); while a batch is being written, wait for it and post what gathered meanwhile.
    if (this.posted.size === 0 && !this.flushQueued) {
      this.flushQueued = true;
      setImmediate(() => {
        this.flushQueued = false;
        if (this.posted.size === 0) this.flush();
      });
    }
    return written;
  }

  /** Lets the thread drop what it caches for a session that ended (it drains the ring first). */
  forgetSession(tier: string, sessionId: string): void {
    this.flush();
    const ring = this.ring;
    // Turns still waiting for room in the ring go first: the thread drains the ring before it forgets.
    if (ring !== undefined && ring.backlog > 0) void ring.settled().then(() => this.post({ kind: 'forget', tier, sessionId }));
    else this.post({ kind: 'forget', tier, sessionId });
  }

  /** Runs retention on the ledger thread (ledger-prune.ts); resolves with what it removed. */
  async prune(policy: RetentionPolicy, sessionTtlMs: number): Promise<PruneReport> {
    return (await this.request({ kind: 'prune', policy, sessionTtlMs }))!;
  }

  /** Writes what is queued, closes the ledger files and stops the thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined) return;
    this.flush();
    // Every turn in the ring before the thread is told to close: it drains the ring, then closes.
    await this.ring?.settled();
    try {
      await this.request({ kind: 'close' });
    } finally {
      this.worker = undefined;
      await worker.terminate();
      this.failPosted(new Error('the ledger thread was closed'));
    }
  }

  /** Posts the gathered batch (sync, fsync; async turns are in the ring already). */
  private flush(): void {
    if (this.batched === 0) return;
    const lines = this.batch;
    this.batch = '';
    this.batched = 0;
    const seq = this.nextSeq++;
    this.posted.set(seq, this.waiters);
    this.waiters = [];
    this.post({ kind: 'turns', lines, seq });
  }

  private request(request: Request): Promise<PruneReport | undefined> {
    const id = this.nextId++;
    return new Promise<PruneReport | undefined>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ ...request, id });
    });
  }

  private post(message: ToLedgerThread): void {
    this.thread().postMessage(message);
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const { options } = this;
    if (this.durability === 'async') {
      // A new thread drains a new ring: the old one may end in a line the dead thread had begun to read.
      this.ringMemory = newTurnRing(options.ringBytes ?? DEFAULT_RING_BYTES);
      this.ring = new TurnRingWriter(this.ringMemory);
    }
    const workerData: LedgerWorkerData = {
      dataDir: options.dataDir,
      ...(this.ringMemory !== undefined ? { ring: this.ringMemory } : {}),
      fsync: this.durability === 'fsync',
      ...(options.key ? { keySecret: options.key.secret() } : {}),
      ...(options.segmentBytes !== undefined ? { segmentBytes: options.segmentBytes } : {}),
      ...(options.segmentMs !== undefined ? { segmentMs: options.segmentMs } : {}),
    };
    const worker = new Worker(options.entry ?? LEDGER_WORKER_ENTRY, { workerData });
    // The core's servers keep the process alive; the ledger thread alone must not.
    worker.unref();
    worker.on('message', (message: FromLedgerThread) => this.onMessage(message));
    worker.on('error', (error) => this.options.logger.error({ err: error.message }, 'the ledger thread failed'));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      // A new thread is started for what comes next; what was waiting fails.
      this.worker = undefined;
      // What waited for room in its ring goes with it, as posted turns a thread had not written did.
      const dropped = this.ring?.abandon();
      if (dropped !== undefined && dropped.lines > 0) this.options.logger.error({ turns: dropped.lines }, 'turns waiting for the ledger thread were lost with it');
      const error = new Error(`the ledger thread exited with code ${code}`);
      for (const waiter of this.pending.values()) waiter.reject(error);
      this.pending.clear();
      this.failPosted(error);
    });
    this.worker = worker;
    return worker;
  }

  /** Turns posted and not acknowledged will never be: their answers fail. */
  private failPosted(cause: Error): void {
    for (const waiters of this.posted.values()) for (const waiter of waiters) waiter.reject(unavailable(cause.message));
    this.posted.clear();
  }

  private onMessage(message: FromLedgerThread): void {
    if (message.kind === 'turn-failed') {
      this.options.metrics?.ledgerWriteErrors.inc();
      this.options.logger.error({ session: message.sessionId, turn: message.turnNumber, err: message.error }, 'ledger write failed');
      return;
    }
    if (message.kind === 'written') {
      const waiters = this.posted.get(message.seq) ?? [];
      this.posted.delete(message.seq);
      const failed = new Map(message.failed.map((f) => [`${f.sessionId}\0${f.turnNumber}`, f.error]));
      for (const failure of message.failed) this.options.logger.error({ session: failure.sessionId, turn: failure.turnNumber, err: failure.error }, 'ledger write failed');
      for (const waiter of waiters) {
        const error = failed.get(waiter.key);
        if (error === undefined) waiter.resolve();
        else waiter.reject(unavailable(error));
      }
      // What gathered while that batch was written goes now, as one batch.
      if (this.posted.size === 0) this.flush();
      return;
    }
    const waiter = this.pending.get(message.id);
    if (waiter === undefined) return;
    this.pending.delete(message.id);
    if (message.error === undefined) waiter.resolve(message.report);
    else waiter.reject(new Error(message.error));
  }
}

function unavailable(cause: string): UhlpError {
  return new UhlpError('UHLP_LEDGER_UNAVAILABLE', 'the turn ran, but its ledger entries could not be written, so its answer is withheld (ledger durability sync/fsync); see the core log', {
    cause,
  });
}
