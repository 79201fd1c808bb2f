/**
 * The export worker: a worker thread that takes batches of ended spans as plain
 * data (span-record.ts: one flat array a batch, as JSON text or cloned) from the core's thread, encodes them as OTLP protobuf
 * with the official exporter and POSTs them, one request at a time, so that
 * neither the encoding nor the HTTP request nor their garbage is on the core's
 * event loop. It acknowledges every span it is done with (sent or failed) so
 * that the core's queue bound (worker-span-processor.ts) counts what is still
 * on its way.
 *
 * Loaded by path (a .js file in dist, the .ts itself under the tests' loader):
 * it imports packages only, and types.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import type { Attributes, HrTime, SpanContext } from '@opentelemetry/api';
import type { ReadableSpan, TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { LinkRecord } from './span-record.js';
import type { ExportWorkerData, FromExportWorker, ToExportWorker } from './export-worker-messages.js';

const settings = workerData as ExportWorkerData;
const port = parentPort!;
const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: { ...settings.headers }, timeoutMillis: settings.exportTimeoutMillis });
// The serializer groups spans by resource and scope object identity: one of each per scope.
const resource = { attributes: settings.resourceAttributes } as unknown as ReadableSpan['resource'];
const scopes = new Map<string, ReadableSpan['instrumentationScope']>();

/** The number of values a span takes in a batch: SPAN_RECORD_FIELDS of span-record.ts (not imported: see there). */
const FIELDS = 23;

const pending: ReadableSpan[] = [];
let exporting = false;
let timer: NodeJS.Timeout | undefined;
/** Flushes asked for: answered once everything received before them has been exported. */
const flushes: Array<{ id: number; upTo: number }> = [];
let received = 0;
let done = 0;

port.on('message', (message: ToExportWorker) => {
  if (message.type === 'spans') {
    const values: readonly unknown[] = 'json' in message ? (JSON.parse(message.json) as unknown[]) : message.spans;
    for (let at = 0; at + FIELDS <= values.length; at += FIELDS) pending.push(readableAt(values, at));
    received += Math.floor(values.length / FIELDS);
    if (pending.length >= settings.maxExportBatchSize) exportNext();
    else timer ??= setTimeout(exportNext, settings.scheduledDelayMillis);
  } else if (message.type === 'flush') {
    flushes.push({ id: message.id, upTo: received });
    exportNext();
    answerFlushes();
  } else if (message.type === 'shutdown') {
    exporter.shutdown().finally(() => port.postMessage({ type: 'stopped' } satisfies FromExportWorker));
  }
});

function exportNext(): void {
  if (timer !== undefined) {
    clearTimeout(timer);
    timer = undefined;
  }
  if (exporting || pending.length === 0) return;
  exporting = true;
  const batch = pending.splice(0, settings.maxExportBatchSize);
  exporter.export(batch, (result) => {
    exporting = false;
    done += batch.length;
    const error = result.code === 0 ? undefined : String(result.error?.message ?? result.error ?? 'export failed');
    port.postMessage({ type: 'exported', count: batch.length, ...(error !== undefined ? { error } : {}) } satisfies FromExportWorker);
    answerFlushes();
    // A full batch, or a flush waiting, goes at once; a partial one waits for more.
    if (pending.length >= settings.maxExportBatchSize || flushes.length > 0) exportNext();
    else if (pending.length > 0) timer ??= setTimeout(exportNext, settings.scheduledDelayMillis);
  });
}

function answerFlushes(): void {
  while (flushes.length > 0 && flushes[0]!.upTo <= done) port.postMessage({ type: 'flushed', id: flushes.shift()!.id } satisfies FromExportWorker);
}

/** The span at `at` of a batch (span-record.ts's order), as the OTLP serializer reads a span (only the fields it reads). */
function readableAt(values: readonly unknown[], at: number): ReadableSpan {
  const traceId = values[at] as string;
  const traceFlags = values[at + 2] as number;
  // `?? undefined`: an undefined value comes back from JSON text as null.
  const traceState = (values[at + 3] ?? undefined) as string | undefined;
  const parentSpanId = (values[at + 4] ?? undefined) as string | undefined;
  const context: SpanContext = { traceId, spanId: values[at + 1] as string, traceFlags, ...(traceState !== undefined ? { traceState: traceStateOf(traceState) } : {}) };
  const message = (values[at + 16] ?? undefined) as string | undefined;
  return {
    name: values[at + 6] as string,
    kind: values[at + 7] as number,
    spanContext: () => context,
    parentSpanContext: parentSpanId !== undefined ? { traceId, spanId: parentSpanId, traceFlags, isRemote: values[at + 5] === true } : undefined,
    startTime: [values[at + 8], values[at + 9]] as HrTime,
    endTime: [values[at + 10], values[at + 11]] as HrTime,
    attributes: values[at + 12] as Attributes,
    events: values[at + 13] as TimedEvent[],
    links: (values[at + 14] as LinkRecord[]).map(linkOf),
    status: { code: values[at + 15] as number, ...(message !== undefined ? { message } : {}) },
    duration: [0, 0],
    ended: true,
    resource,
    instrumentationScope: scopeOf(values[at + 20] as string, (values[at + 21] ?? undefined) as string | undefined, (values[at + 22] ?? undefined) as string | undefined),
    droppedAttributesCount: values[at + 17] as number,
    droppedEventsCount: values[at + 18] as number,
    droppedLinksCount: values[at + 19] as number,
  } as ReadableSpan;
}

function linkOf(link: LinkRecord): { context: SpanContext; attributes?: Attributes; droppedAttributesCount?: number } {
  return {
    context: { traceId: link.traceId, spanId: link.spanId, traceFlags: link.traceFlags, ...(link.isRemote === true ? { isRemote: true } : {}), ...(link.traceState !== undefined ? { traceState: traceStateOf(link.traceState) } : {}) },
    ...(link.attributes !== undefined ? { attributes: link.attributes } : {}),
    ...(link.droppedAttributesCount !== undefined ? { droppedAttributesCount: link.droppedAttributesCount } : {}),
  };
}

/** The serializer only asks a trace state for its header form. */
function traceStateOf(header: string): NonNullable<SpanContext['traceState']> {
  return { serialize: () => header } as NonNullable<SpanContext['traceState']>;
}

function scopeOf(name: string, version: string | undefined, schemaUrl: string | undefined): ReadableSpan['instrumentationScope'] {
  const key = `${name}@${version ?? ''}:${schemaUrl ?? ''}`;
  let known = scopes.get(key);
  if (known === undefined) {
    known = { name, ...(version !== undefined ? { version } : {}), ...(schemaUrl !== undefined ? { schemaUrl } : {}) };
    scopes.set(key, known);
  }
  return known;
}
