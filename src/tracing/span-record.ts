/**
 * An ended span as plain data: what crosses to the export worker
 * (worker-span-processor.ts) by postMessage. Only what the OTLP encoding reads
 * is kept — ids, times, name, kind, attributes, events, links, status, the
 * instrumentation scope — and nothing of the SDK's span object (its processor,
 * its resource, its closures), which cannot be cloned and would keep the span
 * alive. The attributes, events and times are the span's own objects, not
 * copies: an ended span no longer changes, and they are cloned once, in the
 * batch's postMessage.
 */
import type { Attributes, HrTime } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

export interface SpanRecordEvent {
  readonly name: string;
  readonly time: HrTime;
  readonly attributes?: Attributes;
  readonly droppedAttributesCount?: number;
}

export interface SpanRecordLink {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  readonly traceState?: string;
  readonly isRemote?: boolean;
  readonly attributes?: Attributes;
  readonly droppedAttributesCount?: number;
}

export interface SpanRecord {
  readonly traceId: string;
  readonly spanId: string;
  readonly traceFlags: number;
  /** The W3C `tracestate` header form. */
  readonly traceState?: string;
  readonly parentSpanId?: string;
  /** The parent came from another process (a continued `traceparent`). */
  readonly parentIsRemote?: boolean;
  readonly name: string;
  /** The API's SpanKind. */
  readonly kind: number;
  readonly startTime: HrTime;
  readonly endTime: HrTime;
  readonly attributes: Attributes;
  readonly events: readonly SpanRecordEvent[];
  readonly links: readonly SpanRecordLink[];
  readonly status: { readonly code: number; readonly message?: string };
  readonly droppedAttributesCount: number;
  readonly droppedEventsCount: number;
  readonly droppedLinksCount: number;
  /** The tracer's instrumentation scope (a plain object the SDK keeps per tracer). */
  readonly scope: { readonly name: string; readonly version?: string; readonly schemaUrl?: string };
}

export function spanRecordOf(span: ReadableSpan): SpanRecord {
  const ids = span.spanContext();
  const parent = span.parentSpanContext;
  const traceState = ids.traceState?.serialize();
  return {
    traceId: ids.traceId,
    spanId: ids.spanId,
    traceFlags: ids.traceFlags,
    ...(traceState !== undefined && traceState !== '' ? { traceState } : {}),
    ...(parent !== undefined ? { parentSpanId: parent.spanId, parentIsRemote: parent.isRemote === true } : {}),
    name: span.name,
    kind: span.kind,
    startTime: span.startTime,
    endTime: span.endTime,
    attributes: span.attributes,
    events: span.events,
    links: span.links.length === 0 ? NO_LINKS : span.links.map(linkRecordOf),
    status: span.status,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
    scope: span.instrumentationScope,
  };
}

const NO_LINKS: readonly SpanRecordLink[] = Object.freeze([]);

function linkRecordOf(link: ReadableSpan['links'][number]): SpanRecordLink {
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
