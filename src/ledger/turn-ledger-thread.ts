/**
 * The core's side of the ledger thread. Turns are batched for a few milliseconds
 * and posted to a worker thread (ledger-worker.ts), which hashes and writes
 * them; the request thread only copies each turn once. Session starts are
 * answered, so a session's first turn is never written before its files exist.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { LedgerKey } from './ledger-key.js';
import { encodeTurn, type FromLedgerThread, type ToLedgerThread, type TurnRecord } from './turn-ledger-protocol.js';

/**
 * The compiled worker. Resolved from the package root so that it is the same file
 * whether this module runs from dist/ or, in tests, from src/.
 */
export const LEDGER_WORKER_ENTRY = fileURLToPath(new URL('../../dist/ledger/ledger-worker.js', import.meta.url));

export interface TurnLedgerThreadOptions {
  /** The core's data directory; ledgers go under `planes/<tier>/sessions/`. */
  readonly dataDir: string;
  readonly logger: Logger;
  /** Seal entries with HMAC-SHA256 under this key. @defaultValue none: plain sha256 */
  readonly key?: LedgerKey;
  /** Worker entry script. @defaultValue LEDGER_WORKER_ENTRY */
  readonly entry?: string;
  /** Counts failed writes (uhlp_ledger_write_errors_total). @defaultValue none counted */
  readonly metrics?: Pick<Metrics, 'ledgerWriteErrors'>;
}

/**
 * How long a turn waits for others before the batch is posted. Each post wakes
 * the thread, and on a busy two-core machine a wake-up per turn of the event loop
 * cost more than the copy itself; a short timer makes it a few hundred per second.
 */
const BATCH_DELAY_MS = 2;
/** A batch this large is posted at once, so a burst never waits or piles up. */
const MAX_BATCH = 256;

type Request = { kind: 'start'; tier: string; sessionId: string } | { kind: 'close' };

export class TurnLedgerThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  private nextId = 1;
  /** Turns waiting to be posted, as lines (turn-ledger-protocol.ts). */
  private batch = '';
  private batched = 0;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: TurnLedgerThreadOptions) {
    // Started now, so the first request does not wait for a thread to boot.
    this.thread();
  }

  /** Creates the session's ledger files; resolves once they exist. */
  startSession(tier: string, sessionId: string): Promise<void> {
    return this.request({ kind: 'start', tier, sessionId });
  }

  /** Queues a turn; failures to write it are logged, never thrown. */
  record(turn: TurnRecord): void {
    this.batch += encodeTurn(turn);
    if (++this.batched >= MAX_BATCH) this.flush();
    else if (this.flushTimer === undefined) {
      this.flushTimer = setTimeout(() => this.flush(), BATCH_DELAY_MS);
      // close() posts what is queued; the timer alone must not keep the process alive.
      this.flushTimer.unref();
    }
  }

  /** Lets the thread drop what it caches for a session that ended. */
  forgetSession(tier: string, sessionId: string): void {
    this.flush();
    this.post({ kind: 'forget', tier, sessionId });
  }

  /** Writes what is queued, closes the ledger files and stops the thread. */
  async close(): Promise<void> {
    const worker = this.worker;
    if (worker === undefined) return;
    this.flush();
    try {
      await this.request({ kind: 'close' });
    } finally {
      this.worker = undefined;
      await worker.terminate();
    }
  }

  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.batched === 0) return;
    const lines = this.batch;
    this.batch = '';
    this.batched = 0;
    this.post({ kind: 'turns', lines });
  }

  private request(request: Request): Promise<void> {
    const id = this.nextId++;
    return new Promise<void>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.post({ ...request, id });
    });
  }

  private post(message: ToLedgerThread): void {
    this.thread().postMessage(message);
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const workerData = { dataDir: this.options.dataDir, ...(this.options.key ? { keySecret: this.options.key.secret() } : {}) };
    const worker = new Worker(this.options.entry ?? LEDGER_WORKER_ENTRY, { workerData });
    // The core's servers keep the process alive; the ledger thread alone must not.
    worker.unref();
    worker.on('message', (message: FromLedgerThread) => this.onMessage(message));
    worker.on('error', (error) => this.options.logger.error({ err: error.message }, 'the ledger thread failed'));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      // A new thread is started for what comes next; what was waiting fails.
      this.worker = undefined;
      for (const waiter of this.pending.values()) waiter.reject(new Error(`the ledger thread exited with code ${code}`));
      this.pending.clear();
    });
    this.worker = worker;
    return worker;
  }

  private onMessage(message: FromLedgerThread): void {
    if (message.kind === 'turn-failed') {
      this.options.metrics?.ledgerWriteErrors.inc();
      this.options.logger.error({ session: message.sessionId, turn: message.turnNumber, err: message.error }, 'ledger write failed');
      return;
    }
    const waiter = this.pending.get(message.id);
    if (waiter === undefined) return;
    this.pending.delete(message.id);
    if (message.error === undefined) waiter.resolve();
    else waiter.reject(new Error(message.error));
  }
}
