/**
 * Verifies segments on several threads at once. Segments are independent
 * (each is checked alone; ledger-join.ts joins them), so a ledger of many
 * segments, or many sessions, keeps every thread busy, each streaming its file
 * in constant memory. The calling thread is one of them: it would otherwise
 * wait idle, and each worker thread costs ~13 MiB, which counts against the
 * verifier's memory budget. With one thread (or none), segments are verified
 * on the calling thread alone, which is what small ledgers and tests want.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LedgerKeyring } from './ledger-key.js';
import { emptyReport, verifySegment, type SegmentReport, type SegmentTask } from './segment-verifier.js';

/** The compiled thread, resolved from the package root (the same file from dist/ or, in tests, from src/). */
export const VERIFY_WORKER_ENTRY = fileURLToPath(new URL('../../dist/ledger/segment-verify-worker.js', import.meta.url));

export type FromVerifyThread = { kind: 'progress'; bytes: number } | { kind: 'done'; id: number; report: SegmentReport; bytes: number };

export interface VerifyPoolOptions {
  /** Threads verifying at once, the calling thread included: N starts N - 1 workers; 0 and 1 verify on the calling thread alone. */
  threads: number;
  keys?: LedgerKeyring;
  /** Bytes read since the last call. */
  onBytes?: (bytes: number) => void;
  /** @defaultValue VERIFY_WORKER_ENTRY */
  entry?: string;
}

export interface VerifyPool {
  run(task: SegmentTask): Promise<SegmentReport>;
  /** Tasks given and not yet done. */
  readonly pending: number;
  close(): Promise<void>;
}

/** A report for a segment that could not be read at all (removed meanwhile, no permission). */
export function unreadableReport(task: SegmentTask, error: unknown): SegmentReport {
  const code = (error as NodeJS.ErrnoException).code;
  return {
    ...emptyReport(task),
    problem: { file: task.file, line: 0, code: 'LEDGER_MISSING', message: `cannot be read: ${code ?? (error instanceof Error ? error.message : String(error))}` },
  };
}

export function createVerifyPool(options: VerifyPoolOptions): VerifyPool {
  return options.threads <= 1 ? localPool(options) : threadPool(options);
}

function localPool(options: VerifyPoolOptions): VerifyPool {
  let read = 0;
  return {
    pending: 0,
    async run(task) {
      read = 0;
      try {
        const report = verifySegment(task, {
          ...(options.keys ? { keys: options.keys } : {}),
          onProgress: (bytes) => {
            options.onBytes?.(bytes - read);
            read = bytes;
          },
        });
        options.onBytes?.(report.bytes - read);
        return report;
      } catch (error) {
        return unreadableReport(task, error);
      }
    },
    async close() {},
  };
}

interface Job {
  id: number;
  task: SegmentTask;
  resolve: (report: SegmentReport) => void;
}

/**
 * Each worker holds up to this many segments: the next one is already there
 * when it finishes one, even while the calling thread is busy verifying a
 * segment of its own and cannot hand out work.
 */
const JOBS_PER_WORKER = 2;

function threadPool(options: VerifyPoolOptions): VerifyPool {
  const keySecrets = options.keys === undefined ? [] : [...options.keys.values()].map((key) => key.secret());
  const queue: Job[] = [];
  /** The jobs each live worker holds, oldest first (a worker does them in order). */
  const held = new Map<Worker, Job[]>();
  const workers: Worker[] = [];
  let nextId = 1;
  let pending = 0;
  const local = localPool(options);
  let localBusy = false;

  const finish = (job: Job, report: SegmentReport): void => {
    pending -= 1;
    job.resolve(report);
  };

  const dispatch = (): void => {
    for (const [worker, jobs] of held) {
      while (queue.length > 0 && jobs.length < JOBS_PER_WORKER) {
        const job = queue.shift()!;
        jobs.push(job);
        worker.postMessage({ id: job.id, task: job.task });
      }
    }
    if (queue.length > 0 && !localBusy) {
      localBusy = true;
      // On a later turn, so that the workers' messages and the caller's next tasks are taken first.
      setImmediate(() => {
        const job = queue.shift();
        if (job === undefined) {
          localBusy = false;
          return;
        }
        void local.run(job.task).then((report) => {
          localBusy = false;
          finish(job, report);
          dispatch();
        });
      });
    }
  };

  for (let i = 0; i < options.threads - 1; i++) {
    // A verifier keeps one line and one read buffer at a time: a small heap keeps each thread's memory
    // small too (V8 would otherwise let garbage grow to its default young generation before collecting).
    const worker = new Worker(options.entry ?? VERIFY_WORKER_ENTRY, { workerData: { keySecrets }, resourceLimits: { maxYoungGenerationSizeMb: 6, maxOldGenerationSizeMb: 32 } });
    const jobs: Job[] = [];
    worker.on('message', (message: FromVerifyThread) => {
      options.onBytes?.(message.bytes);
      if (message.kind !== 'done') return;
      const at = jobs.findIndex((job) => job.id === message.id);
      if (at >= 0) finish(jobs.splice(at, 1)[0]!, message.report);
      dispatch();
    });
    worker.on('error', (error) => {
      // A thread that died fails the segment it was on; the ones it held but had not begun go back to the queue.
      held.delete(worker);
      const [current, ...waiting] = jobs.splice(0);
      if (current) finish(current, unreadableReport(current.task, error));
      queue.unshift(...waiting);
      dispatch();
    });
    workers.push(worker);
    held.set(worker, jobs);
  }

  return {
    get pending() {
      return pending;
    },
    run(task) {
      pending += 1;
      return new Promise<SegmentReport>((resolve) => {
        queue.push({ id: nextId++, task, resolve });
        dispatch();
      });
    },
    async close() {
      await Promise.all(workers.map((worker) => worker.terminate()));
    },
  };
}
