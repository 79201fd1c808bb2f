/**
 * What the core's thread and the span export worker say to each other
 * (worker-span-processor.ts, span-export-worker.ts): types only, so that the
 * worker, loaded by path, imports nothing of the core at run time.
 */
import type { Attributes } from '@opentelemetry/api';

/** The worker's settings, its `workerData`. */
export interface ExportWorkerData {
  /** The OTLP/HTTP (protobuf) traces URL. */
  readonly endpoint: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The resource every span is exported with (service.name, telemetry.sdk.*, OTEL_RESOURCE_ATTRIBUTES). */
  readonly resourceAttributes: Attributes;
  /** Spans of one export request at most. */
  readonly maxExportBatchSize: number;
  /** How long a partial batch waits for more before it is sent. */
  readonly scheduledDelayMillis: number;
  /** One export request's time limit. */
  readonly exportTimeoutMillis: number;
}

export type ToExportWorker =
  /**
   * Spans in span-record.ts's flat form, SPAN_RECORD_FIELDS values each: as
   * JSON text (`json`, an undefined value read back as null), or, when a
   * value would not survive JSON (a non-finite number), as the array itself.
   */
  | { readonly type: 'spans'; readonly json: string }
  | { readonly type: 'spans'; readonly spans: readonly unknown[] }
  /** Send everything received so far, then answer `flushed` with the id. */
  | { readonly type: 'flush'; readonly id: number }
  /** Stop the exporter (after a flush), then answer `stopped`. */
  | { readonly type: 'shutdown' };

export type FromExportWorker =
  /** `count` spans are done with: sent, or (with `error`) failed and given up. */
  | { readonly type: 'exported'; readonly count: number; readonly error?: string }
  | { readonly type: 'flushed'; readonly id: number }
  | { readonly type: 'stopped' };
