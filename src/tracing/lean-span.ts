/**
 * The core's own spans without the SDK's span object: a span that implements
 * the API's `Span` (what the span sites call) and the SDK's `ReadableSpan`
 * (what the span processors read), so that an ended one goes through the same
 * chain as an SDK span — the secret scrubbing, then the worker hand-off and
 * its drop counter.
 *
 * Why: with every turn sampled, the SDK's SpanImpl was most of what tracing
 * cost a plain turn on the core's thread (bench/span-cost.ts): a Date.now and
 * a performance.now at its start and end with HrTime arithmetic, an attribute
 * copy and validation through sanitizeAttributes, the span metrics' callbacks,
 * two processor calls, and an id generator drawing bytes per id. A lean span
 * reads the clock once per edge (span-clock.ts; kept as epoch milliseconds, turned into an
 * HrTime once, when a processor reads it), takes ids from a pooled random
 * buffer (span-ids.ts) and validates attributes as they are set.
 *
 * What stays the SDK's: the sampler (the configured one decides, with the
 * same arguments), the context (a lean span in a context is a parent like any
 * other: spans that other code starts with the SDK's tracer keep it), the span
 * limits (the same OTEL_* variables and defaults), and the semantics of every
 * Span method (an ended span ignores changes; OK status is final; a recorded
 * exception is an `exception` event with type, message and stack).
 */
import { INVALID_SPAN_CONTEXT, SpanStatusCode, TraceFlags, diag, isSpanContextValid, trace, type Attributes, type AttributeValue, type Context, type Exception, type HrTime, type Link, type Span, type SpanContext, type SpanKind, type SpanStatus, type TimeInput } from '@opentelemetry/api';
import { getNumberFromEnv, isAttributeValue, isTimeInput, isTimeInputHrTime, isTracingSuppressed } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import { SamplingDecision, type ReadableSpan, type Sampler, type SpanProcessor, type TimedEvent } from '@opentelemetry/sdk-trace-base';
import type { InstrumentationScope } from '@opentelemetry/core';
import { epochMsAt, epochNowMs } from './span-clock.js';
import { randomSpanId, randomTraceId } from './span-ids.js';

/** The SDK's span limits, from the same variables with the same defaults (its TracerProvider). */
export interface LeanSpanLimits {
  readonly attributeCountLimit: number;
  readonly attributeValueLengthLimit: number;
  readonly eventCountLimit: number;
  readonly linkCountLimit: number;
  readonly attributePerEventCountLimit: number;
  readonly attributePerLinkCountLimit: number;
}

export function spanLimitsFromEnv(): LeanSpanLimits {
  const general = (name: string): number | undefined => getNumberFromEnv(name);
  return {
    attributeCountLimit: general('OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT') ?? general('OTEL_ATTRIBUTE_COUNT_LIMIT') ?? 128,
    attributeValueLengthLimit: general('OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? general('OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT') ?? Infinity,
    eventCountLimit: general('OTEL_SPAN_EVENT_COUNT_LIMIT') ?? 128,
    linkCountLimit: general('OTEL_SPAN_LINK_COUNT_LIMIT') ?? 128,
    attributePerEventCountLimit: general('OTEL_SPAN_ATTRIBUTE_PER_EVENT_COUNT_LIMIT') ?? 128,
    attributePerLinkCountLimit: general('OTEL_SPAN_ATTRIBUTE_PER_LINK_COUNT_LIMIT') ?? 128,
  };
}

export interface LeanTracerOptions {
  readonly sampler: Sampler;
  /** Where an ended span goes: the provider's processor chain. */
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
  readonly limits?: LeanSpanLimits;
}

const NO_ATTRIBUTES: Attributes = Object.freeze({}) as Attributes;
const NO_LINKS: Link[] = [];

export class LeanTracer {
  readonly limits: LeanSpanLimits;

  constructor(readonly options: LeanTracerOptions) {
    this.limits = options.limits ?? spanLimitsFromEnv();
  }

  /** As the SDK's Tracer.startSpan: a recording span when the sampler records, else a non-recording one carrying the context on. */
  startSpan(name: string, kind: SpanKind, parent: Context, attributes?: Attributes, links?: Link[]): Span {
    if (isTracingSuppressed(parent)) return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
    const parentIds = trace.getSpanContext(parent);
    const continued = parentIds !== undefined && isSpanContextValid(parentIds) ? parentIds : undefined;
    const traceId = continued?.traceId ?? randomTraceId();
    const spanId = randomSpanId();
    const sampling = this.options.sampler.shouldSample(parent, traceId, name, kind, attributes ?? NO_ATTRIBUTES, links ?? NO_LINKS);
    const traceState = sampling.traceState ?? continued?.traceState;
    const ids: SpanContext = {
      traceId,
      spanId,
      traceFlags: sampling.decision === SamplingDecision.RECORD_AND_SAMPLED ? TraceFlags.SAMPLED : TraceFlags.NONE,
      ...(traceState !== undefined ? { traceState } : {}),
    };
    if (sampling.decision === SamplingDecision.NOT_RECORD) return trace.wrapSpanContext(ids);
    const span = new LeanSpan(this, ids, continued, name, kind);
    if (attributes !== undefined) span.setAttributes(attributes);
    if (sampling.attributes !== undefined) span.setAttributes(sampling.attributes);
    if (links !== undefined) span.addLinks(links);
    return span;
  }
}

const nowMs = epochNowMs;

function hrTimeOf(epochMs: number): HrTime {
  const seconds = Math.trunc(epochMs / 1000);
  // Whole nanoseconds; a float's rounding may not carry into the next second.
  const nanos = Math.min(999_999_999, Math.max(0, Math.round((epochMs - seconds * 1000) * 1e6)));
  return [seconds, nanos];
}

/** A TimeInput as epoch milliseconds, as the SDK reads one (a number not past performance.now() is a performance time). */
function epochMsOf(time: TimeInput): number {
  if (typeof time === 'number') return time <= performance.now() ? epochMsAt(time) : time;
  if (time instanceof Date) return time.getTime();
  if (isTimeInputHrTime(time)) return time[0] * 1000 + time[1] / 1e6;
  return nowMs();
}

export class LeanSpan implements Span, ReadableSpan {
  readonly attributes: Attributes = {};
  links: Link[] = [];
  events: TimedEvent[] = [];
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  droppedAttributesCount = 0;
  droppedEventsCount = 0;
  droppedLinksCount = 0;
  private attributeCount = 0;
  private readonly startMs: number;
  private endMs = 0;
  private done = false;
  private startHr: HrTime | undefined;
  private endHr: HrTime | undefined;

  constructor(
    private readonly tracer: LeanTracer,
    private readonly ids: SpanContext,
    readonly parentSpanContext: SpanContext | undefined,
    public name: string,
    readonly kind: SpanKind,
  ) {
    this.startMs = nowMs();
  }

  spanContext(): SpanContext {
    return this.ids;
  }

  setAttribute(key: string, value: AttributeValue | undefined): this {
    if (value == null || this.done || key.length === 0 || !isAttributeValue(value)) return this;
    const isNew = !Object.prototype.hasOwnProperty.call(this.attributes, key);
    if (isNew && this.attributeCount >= this.tracer.limits.attributeCountLimit) {
      this.droppedAttributesCount++;
      return this;
    }
    this.attributes[key] = this.truncated(value);
    if (isNew) this.attributeCount++;
    return this;
  }

  setAttributes(attributes: Attributes): this {
    for (const key in attributes) {
      if (Object.prototype.hasOwnProperty.call(attributes, key)) this.setAttribute(key, attributes[key]);
    }
    return this;
  }

  addEvent(name: string, attributesOrTime?: Attributes | TimeInput, time?: TimeInput): this {
    if (this.done) return this;
    const limits = this.tracer.limits;
    if (limits.eventCountLimit === 0) {
      this.droppedEventsCount++;
      return this;
    }
    if (this.events.length >= limits.eventCountLimit) {
      this.events.shift();
      this.droppedEventsCount++;
    }
    let given: Attributes | undefined;
    if (isTimeInput(attributesOrTime)) {
      if (!isTimeInput(time)) time = attributesOrTime;
    } else {
      given = attributesOrTime;
    }
    const { attributes, dropped } = this.limitedAttributes(given, limits.attributePerEventCountLimit);
    this.events.push({ name, attributes, time: hrTimeOf(time !== undefined ? epochMsOf(time) : nowMs()), droppedAttributesCount: dropped });
    return this;
  }

  addLink(link: Link): this {
    if (this.done) return this;
    const limits = this.tracer.limits;
    if (limits.linkCountLimit === 0) {
      this.droppedLinksCount++;
      return this;
    }
    if (this.links.length >= limits.linkCountLimit) {
      this.links.shift();
      this.droppedLinksCount++;
    }
    const { attributes, dropped, count } = this.limitedAttributes(link.attributes, limits.attributePerLinkCountLimit);
    this.links.push({ context: link.context, ...(count > 0 ? { attributes } : {}), ...(dropped > 0 ? { droppedAttributesCount: dropped } : {}) });
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  setStatus(status: SpanStatus): this {
    if (this.done || status.code === SpanStatusCode.UNSET || this.status.code === SpanStatusCode.OK) return this;
    this.status = status.code === SpanStatusCode.ERROR && typeof status.message === 'string' ? { code: status.code, message: status.message } : { code: status.code };
    return this;
  }

  updateName(name: string): this {
    if (!this.done) this.name = name;
    return this;
  }

  end(endTime?: TimeInput): void {
    if (this.done) {
      diag.error(`${this.name} ${this.ids.traceId}-${this.ids.spanId} - You can only call end() on a span once.`);
      return;
    }
    this.endMs = Math.max(this.startMs, endTime !== undefined ? epochMsOf(endTime) : nowMs());
    this.done = true;
    this.tracer.options.processor.onEnd(this);
  }

  isRecording(): boolean {
    return !this.done;
  }

  recordException(exception: Exception, time?: TimeInput): void {
    const attributes: Attributes = {};
    if (typeof exception === 'string') {
      attributes['exception.message'] = exception;
    } else if (exception) {
      if (exception.code) attributes['exception.type'] = exception.code.toString();
      else if (exception.name) attributes['exception.type'] = exception.name;
      if (exception.message) attributes['exception.message'] = exception.message;
      if (exception.stack) attributes['exception.stacktrace'] = exception.stack;
    }
    if (attributes['exception.type'] || attributes['exception.message']) this.addEvent('exception', attributes, time);
  }

  get startTime(): HrTime {
    return (this.startHr ??= hrTimeOf(this.startMs));
  }

  get endTime(): HrTime {
    if (!this.done) return [0, 0];
    return (this.endHr ??= hrTimeOf(this.endMs));
  }

  get duration(): HrTime {
    if (!this.done) return [-1, -1];
    const ms = this.endMs - this.startMs;
    const seconds = Math.trunc(ms / 1000);
    return [seconds, Math.round((ms - seconds * 1000) * 1e6)];
  }

  get ended(): boolean {
    return this.done;
  }

  get resource(): Resource {
    return this.tracer.options.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.tracer.options.scope;
  }

  private truncated(value: AttributeValue): AttributeValue {
    const limit = this.tracer.limits.attributeValueLengthLimit;
    if (!(limit < Infinity) || limit <= 0) return value;
    if (typeof value === 'string') return value.length <= limit ? value : value.slice(0, limit);
    if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' && item.length > limit ? item.slice(0, limit) : item)) as AttributeValue;
    return value;
  }

  private limitedAttributes(given: Attributes | undefined, limit: number): { attributes: Attributes; dropped: number; count: number } {
    const attributes: Attributes = {};
    let dropped = 0;
    let count = 0;
    for (const key in given) {
      if (!Object.prototype.hasOwnProperty.call(given, key)) continue;
      const value = given[key];
      if (key.length === 0 || value == null || !isAttributeValue(value)) continue;
      if (count >= limit) {
        dropped++;
        continue;
      }
      attributes[key] = this.truncated(value);
      count++;
    }
    return { attributes, dropped, count };
  }
}

/** The lean tracer of the running tracing, if any (set by start-tracing.ts). */
let current: LeanTracer | undefined;

export function leanTracer(): LeanTracer | undefined {
  return current;
}

export function setLeanTracer(tracer: LeanTracer | undefined): void {
  current = tracer;
}
