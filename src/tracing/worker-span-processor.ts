/**
 * The span processor that takes the export off the core's event loop: an
 * ended, sampled span becomes plain data (span-record.ts), queued, and handed in
 * batches by postMessage to a worker thread (span-export-worker.ts) that encodes
 * OTLP protobuf and POSTs it. What stays on the core's thread is a record per
 * span and one JSON text (or structured clone) per batch.
 *
 * What the SDK's BatchSpanProcessor promised is kept: a bounded queue (spans
 * handed over but not yet acknowledged by the worker count against it; a span
 * past it is dropped and counted, never waited for), batch limits, and a flush
 * on shutdown, so that the spans of a stopping core's last turns reach the
 * backend. Secret scrubbing stays before this processor
 * (scrubbing-span-processor.ts wraps it): what crosses to the worker is
 * already scrubbed.
 */
import { Worker } from 'node:worker_threads';
import { TraceFlags, type Attributes, type Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SPAN_RECORD_FIELDS, appendSpanRecord } from './span-record.js';
import type { ExportWorkerData, FromExportWorker, ToExportWorker } from './export-worker-messages.js';

export interface WorkerSpanProcessorOptions {
  /** The OTLP/HTTP (protobuf) traces URL. */
  readonly endpoint: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** The resource's attributes (every exported span carries them). */
  readonly resourceAttributes: Attributes;
  /** Spans queued or on their way to the backend, at most; more are dropped. @defaultValue 8192 */
  readonly maxQueueSize?: number;
  /** Spans of one export request at most. @defaultValue 1024 */
  readonly maxExportBatchSize?: number;
  /** How long a partial batch waits in the worker for more. @defaultValue 1000 */
  readonly scheduledDelayMillis?: number;
  /** How long ended spans wait on the core's thread before they are handed over. @defaultValue 100 */
  readonly handOffDelayMillis?: number;
  /** One export request's time limit. @defaultValue 10000 */
  readonly exportTimeoutMillis?: number;
  /** Called with the number of spans dropped (queue full, or the worker gone). */
  readonly onDropped?: (count: number) => void;
  /** Called with the reason an export request failed (its spans are given up). */
  readonly onExportError?: (message: string) => void;
}

/** How many ended spans make the core hand a batch over at once. */
const HAND_OFF_SIZE = 256;

export class WorkerSpanProcessor implements SpanProcessor {
  private readonly worker: Worker;
  private readonly maxQueueSize: number;
  private readonly handOffDelayMillis: number;
  private readonly handOffSize: number;
  /** Ended spans not yet handed over, in span-record.ts's flat form. */
  private buffer: unknown[] = [];
  /** A span in the buffer holds a value JSON would not keep: the buffer goes as it is. */
  private bufferNeedsClone = false;
  /** Spans buffered here or handed to the worker and not yet acknowledged. */
  private outstanding = 0;
  private timer: NodeJS.Timeout | undefined;
  private nextFlushId = 0;
  private readonly flushes = new Map<number, () => void>();
  private stopped: Promise<void> | undefined;
  /** The worker exited: nothing more reaches it. */
  private gone = false;
  private onStopped: (() => void) | undefined;

  constructor(private readonly options: WorkerSpanProcessorOptions) {
    this.maxQueueSize = options.maxQueueSize ?? 8192;
    const maxExportBatchSize = options.maxExportBatchSize ?? 1024;
    this.handOffSize = Math.min(HAND_OFF_SIZE, maxExportBatchSize);
    this.handOffDelayMillis = options.handOffDelayMillis ?? 100;
    const workerData: ExportWorkerData = {
      endpoint: options.endpoint,
      headers: { ...options.headers },
      resourceAttributes: options.resourceAttributes,
      maxExportBatchSize,
      scheduledDelayMillis: options.scheduledDelayMillis ?? 1000,
      exportTimeoutMillis: options.exportTimeoutMillis ?? 10_000,
    };
    this.worker = new Worker(workerFile(), { workerData, name: 'uhlp-span-export' });
    // The worker never holds the process open: a core stops through shutdown(), which waits for it.
    this.worker.unref();
    this.worker.on('message', (message: FromExportWorker) => this.heard(message));
    this.worker.on('error', (error) => options.onExportError?.(`the span export worker failed: ${error.message}`));
    this.worker.on('exit', () => this.lost());
  }

  onStart(_span: Span, _parentContext: Context): void {}

  onEnd(span: ReadableSpan): void {
    // As the SDK's batch processor: a span recorded but not sampled is not exported.
    if ((span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.outstanding >= this.maxQueueSize || this.gone || this.stopped !== undefined) {
      this.options.onDropped?.(1);
      return;
    }
    this.outstanding++;
    if (!appendSpanRecord(this.buffer, span)) this.bufferNeedsClone = true;
    if (this.buffer.length >= this.handOffSize * SPAN_RECORD_FIELDS) this.handOff();
    else this.timer ??= setTimeout(() => this.handOff(), this.handOffDelayMillis).unref();
  }

  /** Resolves once every span ended before the call has been exported (or failed). */
  forceFlush(): Promise<void> {
    if (this.gone) return Promise.resolve();
    this.handOff();
    const id = this.nextFlushId++;
    return new Promise<void>((resolve) => {
      this.flushes.set(id, resolve);
      this.post({ type: 'flush', id });
    });
  }

  /** Flushes, stops the worker's exporter and ends the worker; never rejects. */
  shutdown(): Promise<void> {
    this.stopped ??= (async () => {
      await this.forceFlush();
      if (!this.gone) {
        const stopped = new Promise<void>((resolve) => (this.onStopped = resolve));
        this.post({ type: 'shutdown' });
        await stopped;
      }
      await this.worker.terminate();
    })();
    return this.stopped;
  }

  private handOff(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.buffer.length === 0) return;
    const spans = this.buffer;
    const asJson = !this.bufferNeedsClone;
    this.buffer = [];
    this.bufferNeedsClone = false;
    // JSON text is copied in one piece; the array is walked value by value (span-record.ts).
    this.post(asJson ? { type: 'spans', json: JSON.stringify(spans) } : { type: 'spans', spans });
  }

  private post(message: ToExportWorker): void {
    if (!this.gone) this.worker.postMessage(message);
  }

  private heard(message: FromExportWorker): void {
    if (message.type === 'exported') {
      this.outstanding -= message.count;
      if (message.error !== undefined) this.options.onExportError?.(message.error);
    } else if (message.type === 'flushed') {
      this.flushes.get(message.id)?.();
      this.flushes.delete(message.id);
    } else {
      this.onStopped?.();
    }
  }

  /** The worker exited: what it held is lost (counted as dropped), and waiting flushes end. */
  private lost(): void {
    if (this.gone) return;
    this.gone = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.outstanding > 0 && this.stopped === undefined) this.options.onDropped?.(this.outstanding);
    this.outstanding = 0;
    this.buffer = [];
    this.bufferNeedsClone = false;
    for (const resolve of this.flushes.values()) resolve();
    this.flushes.clear();
    this.onStopped?.();
  }
}

/** The worker's file beside this one: the built .js, or the .ts source where the tests run it. */
function workerFile(): URL {
  return new URL(import.meta.url.endsWith('.ts') ? './span-export-worker.ts' : './span-export-worker.js', import.meta.url);
}
