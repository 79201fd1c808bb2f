/**
 * Verifies segments on several threads at once. Segments are independent
 * (each is checked alone; ledger-join.ts joins them), so a ledger of many
 * segments, or many sessions, keeps every thread busy, each streaming its file
 * in constant memory. With no threads, segments are verified on the calling
 * thread, which is what small ledgers and tests want: a thread costs a few
 * milliseconds and some memory to start.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { LedgerKeyring } from './ledger-key.js';
import { verifySegment, type SegmentReport, type SegmentTask } from './segment-verifier.js';

/** The compiled thread, resolved from the package root (the same file from dist/ or, in tests, from src/). */
export const VERIFY_WORKER_ENTRY = fileURLToPath(new URL('../../dist/ledger/segment-verify-worker.js', import.meta.url));

export type FromVerifyThread = { kind: 'progress'; bytes: number } | { kind: 'done'; id: number; report: SegmentReport; bytes: number };

export interface VerifyPoolOptions {
  /** Threads; 0 verifies on the calling thread. */
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
    file: task.file,
    kind: task.kind,
    segment: task.segment,
    mode: task.mode,
    problem: { file: task.file, line: 0, code: 'LEDGER_MISSING', message: `cannot be read: ${code ?? (error instanceof Error ? error.message : String(error))}` },
    warnings: [],
    entriesChecked: 0,
    lines: 0,
    bytes: 0,
    lastHash: null,
    lastLine: 0,
    lastKeyed: false,
    keyedEntries: 0,
    firstUnkeyedLine: 0,
  };
}

export function createVerifyPool(options: VerifyPoolOptions): VerifyPool {
  return options.threads <= 0 ? localPool(options) : threadPool(options);
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

function threadPool(options: VerifyPoolOptions): VerifyPool {
  const keySecrets = options.keys === undefined ? [] : [...options.keys.values()].map((key) => key.secret());
  const queue: Job[] = [];
  const idle: Worker[] = [];
  const busy = new Map<Worker, Job>();
  const workers: Worker[] = [];
  let nextId = 1;
  let pending = 0;
  let live = options.threads;
  const local = localPool(options);

  const dispatch = (): void => {
    while (queue.length > 0 && idle.length > 0) {
      const worker = idle.pop()!;
      const job = queue.shift()!;
      busy.set(worker, job);
      worker.postMessage({ id: job.id, task: job.task });
    }
  };

  for (let i = 0; i < options.threads; i++) {
    // A verifier keeps one line and one read buffer at a time: a small heap keeps each thread's memory
    // small too (V8 would otherwise let garbage grow to its default young generation before collecting).
    const worker = new Worker(options.entry ?? VERIFY_WORKER_ENTRY, { workerData: { keySecrets }, resourceLimits: { maxYoungGenerationSizeMb: 6, maxOldGenerationSizeMb: 32 } });
    worker.on('message', (message: FromVerifyThread) => {
      options.onBytes?.(message.bytes);
      if (message.kind !== 'done') return;
      const job = busy.get(worker);
      busy.delete(worker);
      idle.push(worker);
      pending -= 1;
      job?.resolve(message.report);
      dispatch();
    });
    worker.on('error', (error) => {
      // A thread that died fails the segment it held, not the whole verification.
      const job = busy.get(worker);
      busy.delete(worker);
      live -= 1;
      if (job) {
        pending -= 1;
        job.resolve(unreadableReport(job.task, error));
      }
      // With no thread left, what is queued is verified here.
      if (live === 0) {
        for (const queued of queue.splice(0)) {
          pending -= 1;
          void local.run(queued.task).then(queued.resolve);
        }
      }
    });
    workers.push(worker);
    idle.push(worker);
  }

  return {
    get pending() {
      return pending;
    },
    run(task) {
      pending += 1;
      if (live === 0) {
        pending -= 1;
        return local.run(task);
      }
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
