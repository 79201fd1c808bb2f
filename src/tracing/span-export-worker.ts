/**
 * The export worker: a worker thread that takes batches of ended spans as plain
 * data (span-record.ts) from the core's thread, encodes them as OTLP protobuf
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
import type { Attributes, SpanContext } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import type { SpanRecord, SpanRecordLink } from './span-record.js';
import type { ExportWorkerData, FromExportWorker, ToExportWorker } from './export-worker-messages.js';

const settings = workerData as ExportWorkerData;
const port = parentPort!;
const exporter = new OTLPTraceExporter({ url: settings.endpoint, headers: { ...settings.headers }, timeoutMillis: settings.exportTimeoutMillis });
// The serializer groups spans by resource and scope object identity: one of each per scope.
const resource = { attributes: settings.resourceAttributes } as unknown as ReadableSpan['resource'];
const scopes = new Map<string, ReadableSpan['instrumentationScope']>();

const pending: SpanRecord[] = [];
let exporting = false;
let timer: NodeJS.Timeout | undefined;
/** Flushes asked for: answered once everything received before them has been exported. */
const flushes: Array<{ id: number; upTo: number }> = [];
let received = 0;
let done = 0;

port.on('message', (message: ToExportWorker) => {
  if (message.type === 'spans') {
    for (const span of message.spans) pending.push(span);
    received += message.spans.length;
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
  exporter.export(batch.map(readableOf), (result) => {
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

/** The record as the OTLP serializer reads a span (only the fields it reads). */
function readableOf(record: SpanRecord): ReadableSpan {
  const context: SpanContext = { traceId: record.traceId, spanId: record.spanId, traceFlags: record.traceFlags, ...(record.traceState !== undefined ? { traceState: traceStateOf(record.traceState) } : {}) };
  return {
    name: record.name,
    kind: record.kind,
    spanContext: () => context,
    parentSpanContext: record.parentSpanId !== undefined ? { traceId: record.traceId, spanId: record.parentSpanId, traceFlags: record.traceFlags, isRemote: record.parentIsRemote === true } : undefined,
    startTime: record.startTime,
    endTime: record.endTime,
    status: record.status,
    attributes: record.attributes,
    links: record.links.map(linkOf),
    events: record.events,
    duration: [0, 0],
    ended: true,
    resource,
    instrumentationScope: scopeOf(record.scope),
    droppedAttributesCount: record.droppedAttributesCount,
    droppedEventsCount: record.droppedEventsCount,
    droppedLinksCount: record.droppedLinksCount,
  } as ReadableSpan;
}

function linkOf(link: SpanRecordLink): { context: SpanContext; attributes?: Attributes; droppedAttributesCount?: number } {
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

function scopeOf(scope: SpanRecord['scope']): ReadableSpan['instrumentationScope'] {
  const key = `${scope.name}@${scope.version ?? ''}:${scope.schemaUrl ?? ''}`;
  let known = scopes.get(key);
  if (known === undefined) {
    known = { name: scope.name, ...(scope.version !== undefined ? { version: scope.version } : {}), ...(scope.schemaUrl !== undefined ? { schemaUrl: scope.schemaUrl } : {}) };
    scopes.set(key, known);
  }
  return known;
}
