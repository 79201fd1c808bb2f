/**
 * An ended span as plain data: what crosses to the export worker
 * (worker-span-processor.ts) by postMessage. Only what the OTLP encoding reads
 * is kept — ids, times, name, kind, attributes, events, links, status, the
 * instrumentation scope — and nothing of the SDK's span object (its processor,
 * its resource, its closures), which cannot be cloned and would keep the span
 * alive.
 *
 * A batch is one flat array, SPAN_RECORD_FIELDS values a span, in the order
 * below, not an object per span: the structured clone of postMessage writes
 * every property name of every object again, and a flat array of values
 * clones in about a quarter of the time on the core's thread. Handed over as
 * JSON text it costs a fifth of that again (a string is copied, not walked):
 * the hand-off sends JSON whenever every value survives it
 * (appendSpanRecord's answer; a non-finite number does not). The attributes
 * and events are the span's own objects, not copies: an ended span no longer
 * changes. span-export-worker.ts reads the same order back (it imports no code
 * of the core, so the order is written out in both; the worker's tests send
 * every field through).
 */
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

/**
 * 0 traceId, 1 spanId, 2 traceFlags, 3 traceState (header form) or undefined,
 * 4 parent spanId or undefined, 5 parent is remote, 6 name, 7 kind,
 * 8-9 start [s, ns], 10-11 end [s, ns], 12 attributes, 13 events, 14 links
 * (LinkRecord[]), 15 status code, 16 status message or undefined,
 * 17-19 dropped attributes, events, links, 20-22 scope name, version, schemaUrl.
 */
export const SPAN_RECORD_FIELDS = 23;

/** A link with its context as plain values. */
export interface LinkRecord {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly traceState?: string;
  readonly isRemote?: boolean;
  readonly attributes?: ReadableSpan['attributes'];
  readonly droppedAttributesCount?: number;
}

const NO_LINKS: readonly LinkRecord[] = Object.freeze([]);

/**
 * Appends `span`'s SPAN_RECORD_FIELDS values to `batch`; answers whether they
 * read back the same from JSON text (spanRecordsAsJson).
 */
export function appendSpanRecord(batch: unknown[], span: ReadableSpan): boolean {
  const ids = span.spanContext();
  const parent = span.parentSpanContext;
  const scope = span.instrumentationScope;
  batch.push(
    ids.traceId,
    ids.spanId,
    ids.traceFlags,
    ids.traceState?.serialize() || undefined,
    parent?.spanId,
    parent?.isRemote === true,
    span.name,
    span.kind,
    span.startTime[0],
    span.startTime[1],
    span.endTime[0],
    span.endTime[1],
    span.attributes,
    span.events,
    span.links.length === 0 ? NO_LINKS : span.links.map(linkRecordOf),
    span.status.code,
    span.status.message,
    span.droppedAttributesCount,
    span.droppedEventsCount,
    span.droppedLinksCount,
    scope.name,
    scope.version,
    scope.schemaUrl,
  );
  return attributesSurviveJson(span.attributes) && span.events.every((event) => event.attributes === undefined || attributesSurviveJson(event.attributes)) && span.links.every((link) => link.attributes === undefined || attributesSurviveJson(link.attributes));
}

/**
 * Whether attributes read back the same from JSON: every value a string,
 * boolean or finite number, or an array of them (JSON has no NaN or
 * Infinity, and writes an undefined array item or property as null or not at all).
 */
function attributesSurviveJson(attributes: ReadableSpan['attributes']): boolean {
  for (const key in attributes) {
    const value = attributes[key];
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return false;
    } else if (Array.isArray(value)) {
      for (const item of value) if (item == null || (typeof item === 'number' && !Number.isFinite(item))) return false;
    } else if (value == null) {
      return false;
    }
  }
  return true;
}

function linkRecordOf(link: ReadableSpan['links'][number]): LinkRecord {
  const traceState = link.context.traceState?.serialize();
  return {
    traceId: link.context.traceId,
    spanId: link.context.spanId,
    traceFlags: link.context.traceFlags,
    ...(traceState !== undefined && traceState !== '' ? { traceState } : {}),
    ...(link.context.isRemote === true ? { isRemote: true } : {}),
    ...(link.attributes !== undefined ? { attributes: link.attributes } : {}),
    ...(link.droppedAttributesCount !== undefined ? { droppedAttributesCount: link.droppedAttributesCount } : {}),
  };
}
