/**
 * The last step before a span leaves the core: every string it carries (its
 * name, attributes, events — a script's exception message and stack among them —
 * links and status message) passes the secret scrubber, as a log line does. A
 * script granted a secret may throw or log with it; the trace backend is one
 * more place the value must never reach. The span itself is not changed: the
 * exporter sends a view of it whose strings are scrubbed.
 */
import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { Attributes, AttributeValue } from '@opentelemetry/api';
import type { LineScrubber } from '../logger.js';

export class ScrubbingSpanExporter implements SpanExporter {
  constructor(
    private readonly inner: SpanExporter,
    private readonly scrubber: LineScrubber,
  ) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    // No secret known yet (most cores, most of the time): the spans go as they are.
    this.inner.export(this.scrubber.active ? spans.map((span) => scrubbedSpan(span, this.scrubber)) : spans, resultCallback);
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
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
