/**
 * The span sites' few verbs, over the OpenTelemetry API: continue a caller's
 * W3C context, open a turn's span, run a stage in a child span, record a
 * script's exception, and carry the context on (HTTP headers, MCP `_meta`, a
 * queued message). Every one of them is a plain call when tracing is off
 * (tracingActive()).
 */
import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  createContextKey,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { leanTracer } from './lean-span.js';
import { epochMsAt } from './span-clock.js';
import { tracingActive } from './tracing-active.js';

export { ROOT_CONTEXT, SpanKind, SpanStatusCode, TraceFlags, context, trace, type Attributes, type Context, type Link, type Span };

/** The instrumentation scope of every span the core makes. */
const SCOPE = 'uhlp';

export function tracer() {
  return trace.getTracer(SCOPE);
}

/** The turn's own span (the ingress's SERVER span, a delivery's CONSUMER span): where a script's exception is recorded. */
const TURN_SPAN = createContextKey('uhlp.turn-span');

/** The turn's span in a context (the active one by default), when the turn is traced. */
export function turnSpanOf(ctx: Context = context.active()): Span | undefined {
  return ctx.getValue(TURN_SPAN) as Span | undefined;
}

const TRACEPARENT = 'traceparent';
const BAGGAGE = 'baggage';

/** A W3C `traceparent`/`tracestate` carrier: HTTP headers, MCP `_meta`, a queued message's context. */
export type TraceCarrier = Readonly<Record<string, unknown>>;

/** The context a carrier continues; the root context when it carries none (or a malformed one). */
export function continuedContext(carrier: TraceCarrier | undefined): Context {
  // The propagators registered (start-tracing.ts: W3C trace context and baggage) read these two keys only:
  // a carrier with neither (most requests) continues nothing, without the propagation API's calls.
  if (carrier === undefined || (carrier[TRACEPARENT] === undefined && carrier[BAGGAGE] === undefined)) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, carrier, {
    keys: (c) => Object.keys(c),
    get: (c, key) => {
      const value = c[key];
      return typeof value === 'string' ? value : Array.isArray(value) && typeof value[0] === 'string' ? (value[0] as string) : undefined;
    },
  });
}

/** The `traceparent` (and `tracestate`) of a context, to carry on; undefined when it has no sampled or unsampled span. */
export function carrierOf(ctx: Context = context.active()): Record<string, string> | undefined {
  if (!tracingActive() || trace.getSpanContext(ctx) === undefined) return undefined;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier.traceparent !== undefined ? carrier : undefined;
}

export interface TurnSpanOptions {
  readonly kind: SpanKind;
  readonly attributes?: Attributes;
  /** The parent: a continued caller's context, or the root. */
  readonly parent: Context;
  /** A delivery's link to its publish. */
  readonly links?: Link[];
}

/** Opens a turn's span; the context it returns is its parent's with the span active and marked as the turn's. */
export function startTurnSpan(name: string, options: TurnSpanOptions): { span: Span; ctx: Context } {
  const lean = leanTracer();
  const span = lean !== undefined ? lean.startSpan(name, options.kind, options.parent, options.attributes, options.links) : tracer().startSpan(name, { kind: options.kind, ...(options.attributes !== undefined ? { attributes: options.attributes } : {}), ...(options.links !== undefined ? { links: options.links } : {}) }, options.parent);
  return { span, ctx: trace.setSpan(options.parent, span).setValue(TURN_SPAN, span) };
}

/**
 * Whether a child of `ctx` would be recorded: tracing is on and the context's
 * span (if it has one) records. A turn the sampler left out (a ratio sampler's
 * unsampled share, a caller's unsampled traceparent) has a non-recording span:
 * its stages then cost no span, no sampler call and no context switch.
 */
export function recordsUnder(ctx: Context = context.active()): boolean {
  if (!tracingActive()) return false;
  const parent = trace.getSpan(ctx);
  return parent === undefined || parent.isRecording();
}

/**
 * Runs `run` in a child span of the active context named `name`; with tracing
 * off (or the turn not sampled), just runs it. A rejection sets the span's
 * status to ERROR with its code.
 */
export function inSpan<T>(name: string, run: (span: Span | undefined) => Promise<T>, attributes?: Attributes, kind: SpanKind = SpanKind.INTERNAL): Promise<T> {
  if (!recordsUnder()) return run(undefined);
  const lean = leanTracer();
  if (lean !== undefined) {
    const parent = context.active();
    const span = lean.startSpan(name, kind, parent, attributes);
    return context.with(trace.setSpan(parent, span), () => endingSpan(span, () => run(span)));
  }
  return tracer().startActiveSpan(name, { kind, ...(attributes !== undefined ? { attributes } : {}) }, (span) => endingSpan(span, () => run(span)));
}

/**
 * A span for a wait only when there is one: `run` starts something that either
 * is done at once (undefined: no span) or returns the promise to wait for,
 * which is then a child span of the active context, timed from before the call
 * (the ledger's `sync` write; with `async` durability a turn never waits for it).
 */
export function spanIfPending<T>(name: string, run: () => Promise<T> | undefined): Promise<T> | undefined {
  if (!recordsUnder()) return run();
  const started = epochMs(performance.now());
  const pending = run();
  if (pending === undefined) return undefined;
  return endingSpan(tracer().startSpan(name, { startTime: started }), () => pending);
}

/** Awaits `run` and ends `span` as it settles; a rejection marks the span failed (failSpan) and is thrown on. */
export async function endingSpan<T>(span: Span, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    failSpan(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Marks a span failed with an error's code (a UhlpError's `UHLP_*`) or message. */
export function failSpan(span: Span, error: unknown): void {
  const code = typeof (error as { code?: unknown } | null)?.code === 'string' ? (error as { code: string }).code : undefined;
  if (code !== undefined) span.setAttribute('error.type', code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: code ?? (error instanceof Error ? error.message : String(error)).slice(0, 200) });
}

/** A script's exception on the turn's span: an `exception` event with the script's own stack (its path and line). */
export function recordScriptException(span: Span, failure: { readonly code: string; readonly message: string; readonly stack?: string }): void {
  span.recordException({ name: failure.code, message: failure.message, ...(failure.stack !== undefined ? { stack: failure.stack } : {}) });
  span.setAttribute('error.type', failure.code);
  span.setStatus({ code: SpanStatusCode.ERROR, message: failure.code });
}

/** The trace and span ids of the active span, for a log line; undefined when none is recording. */
export function activeTraceIds(): { trace_id: string; span_id: string } | undefined {
  if (!tracingActive()) return undefined;
  const span = trace.getActiveSpan();
  if (span === undefined) return undefined;
  const { traceId, spanId } = span.spanContext();
  return { trace_id: traceId, span_id: spanId };
}

/** Epoch milliseconds of a performance.now() reading: the time base of spans recorded after the fact. */
export function epochMs(performanceNow: number): number {
  return epochMsAt(performanceNow);
}

/**
 * A span of something already measured (a sandbox claim, what a runner timed),
 * a child of `parent` (the active context by default). Nothing with tracing off.
 */
export function recordSpan(name: string, startEpochMs: number, endEpochMs: number, attributes?: Attributes, options: { readonly parent?: Context; readonly error?: string } = {}): void {
  const parent = options.parent ?? context.active();
  if (!recordsUnder(parent)) return;
  const span = tracer().startSpan(name, { startTime: startEpochMs, ...(attributes !== undefined ? { attributes } : {}) }, parent);
  if (options.error !== undefined) {
    span.setAttribute('error.type', options.error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: options.error });
  }
  span.end(Math.max(startEpochMs, endEpochMs));
}
