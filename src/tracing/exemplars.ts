/**
 * Latency observations that lead to traces: with a sampled span active (the
 * turn's, a tool call's, a model call's, the execution's), the observation
 * keeps its trace and span ids as its bucket's OpenMetrics exemplar. Without
 * tracing, or in a turn the sampler left out, a plain observation.
 */
import type { HotHistogramChild } from '../hot-histogram.js';
import { TraceFlags, trace } from './spans.js';
import { tracingActive } from './tracing-active.js';

export function observeWithTrace(child: HotHistogramChild, seconds: number): void {
  const ids = tracingActive() ? trace.getActiveSpan()?.spanContext() : undefined;
  if (ids === undefined || (ids.traceFlags & TraceFlags.SAMPLED) === 0) return child.observe(seconds);
  child.observeWithExemplar(seconds, { trace_id: ids.traceId, span_id: ids.spanId });
}
