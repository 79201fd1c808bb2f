/**
 * Latency observations that lead to traces: with a sampled turn span active,
 * the observation keeps the trace's ids as its bucket's OpenMetrics exemplar.
 */
import type { HotHistogramChild } from '../hot-histogram.js';
import { TraceFlags, turnSpanOf } from './spans.js';
import { tracingActive } from './tracing-active.js';

export function observeWithTrace(child: HotHistogramChild, seconds: number): void {
  const span = tracingActive() ? turnSpanOf() : undefined;
  const ids = span?.spanContext();
  if (ids === undefined || (ids.traceFlags & TraceFlags.SAMPLED) === 0) return child.observe(seconds);
  child.observeWithExemplar(seconds, { trace_id: ids.traceId, span_id: ids.spanId });
}
