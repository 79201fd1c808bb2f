/**
 * Every span, as it ends, has every string it carries (its name, attributes,
 * events — a script's exception message and stack among them — links and status
 * message) pass the secret scrubber, as a log line does, before it is queued
 * for export. A script granted a secret may throw or log with it; the trace
 * backend is one more place the value must never reach. At the span's end, not
 * at export: a batch leaves up to a second later, when a rotated secret's old
 * value may no longer be the one the scrubber looks for. The span itself is not
 * changed: the queue gets a view of it whose strings are scrubbed.
 */
import type { Context } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { LineScrubber } from '../logger.js';

export class ScrubbingSpanProcessor implements SpanProcessor {
  constructor(
    private readonly inner: SpanProcessor,
    private readonly scrubber: LineScrubber,
  ) {}

  onStart(span: Span, parentContext: Context): void {
    this.inner.onStart(span, parentContext);
  }

  onEnd(span: ReadableSpan): void {
    // No secret known (most cores, most of the time): the span goes as it is.
    this.inner.onEnd(this.scrubber.active ? scrubbedSpan(span, this.scrubber) : span);
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush();
  }
}

/** A view of the span whose own strings are scrubbed; everything else is read through to the span. */
export function scrubbedSpan(span: ReadableSpan, scrubber: LineScrubber): ReadableSpan {
  const text = (value: string): string => scrubber.scrub(value);
  return Object.create(span, {
    name: { value: text(span.name), enumerable: true },
    attributes: { value: scrubbedAttributes(span.attributes, text), enumerable: true },
    events: { value: span.events.map((event) => ({ ...event, name: text(event.name), ...(event.attributes !== undefined ? { attributes: scrubbedAttributes(event.attributes, text) } : {}) })), enumerable: true },
    links: { value: span.links.map((link) => ({ ...link, ...(link.attributes !== undefined ? { attributes: scrubbedAttributes(link.attributes, text) } : {}) })), enumerable: true },
    status: { value: span.status.message !== undefined ? { ...span.status, message: text(span.status.message) } : span.status, enumerable: true },
  }) as ReadableSpan;
}

function scrubbedAttributes(attributes: Attributes, text: (value: string) => string): Attributes {
  const out: Attributes = {};
  for (const [key, value] of Object.entries(attributes)) out[key] = scrubbedValue(value, text);
  return out;
}

function scrubbedValue(value: AttributeValue | undefined, text: (value: string) => string): AttributeValue | undefined {
  if (typeof value === 'string') return text(value);
  if (Array.isArray(value)) return value.map((item) => (typeof item === 'string' ? text(item) : item)) as AttributeValue;
  return value;
}
