/**
 * Every span, as it ends, has every string it carries (its name, attributes,
 * events — a script's exception message and stack among them — links and status
 * message) pass the secret scrubber, as a log line does, before it is queued
 * for export. A script granted a secret may throw or log with it; the trace
 * backend is one more place the value must never reach. At the span's end, not
 * at export: a batch leaves up to a second later, when a rotated secret's old
 * value may no longer be the one the scrubber looks for. The span itself is not
 * changed: the queue gets a view of it whose strings are scrubbed, or, when no
 * string held a value (nearly always), the span as it is, with no copy made.
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

/**
 * The span itself when none of its strings holds a secret (nearly every span:
 * looking costs a search per string and no allocation); else a view of it
 * whose own strings are scrubbed, everything else read through to the span.
 */
export function scrubbedSpan(span: ReadableSpan, scrubber: LineScrubber): ReadableSpan {
  const text = (value: string): string => scrubber.scrub(value);
  const name = text(span.name);
  const attributes = scrubbedAttributes(span.attributes, text);
  const events = sameOr(span.events, (event) => {
    const eventName = text(event.name);
    const eventAttributes = event.attributes !== undefined ? scrubbedAttributes(event.attributes, text) : undefined;
    return eventName === event.name && eventAttributes === event.attributes ? event : { ...event, name: eventName, ...(eventAttributes !== undefined ? { attributes: eventAttributes } : {}) };
  });
  const links = sameOr(span.links, (link) => {
    const linkAttributes = link.attributes !== undefined ? scrubbedAttributes(link.attributes, text) : undefined;
    return linkAttributes === link.attributes ? link : { ...link, attributes: linkAttributes };
  });
  const message = span.status.message !== undefined ? text(span.status.message) : undefined;
  if (name === span.name && attributes === span.attributes && events === span.events && links === span.links && message === span.status.message) return span;
  return Object.create(span, {
    name: { value: name, enumerable: true },
    attributes: { value: attributes, enumerable: true },
    events: { value: events, enumerable: true },
    links: { value: links, enumerable: true },
    status: { value: message !== span.status.message ? { ...span.status, message } : span.status, enumerable: true },
  }) as ReadableSpan;
}

/** The array itself when `scrub` returns every item as it was; else the scrubbed copy. */
function sameOr<T>(items: readonly T[], scrub: (item: T) => T): T[] {
  let out: T[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const scrubbed = scrub(item);
    if (scrubbed !== item) (out ??= items.slice(0, i)).push(scrubbed);
    else out?.push(item);
  }
  return out ?? (items as T[]);
}

/** The attributes themselves when no string in them changes; else a scrubbed copy. */
function scrubbedAttributes(attributes: Attributes, text: (value: string) => string): Attributes {
  let out: Attributes | undefined;
  for (const key in attributes) {
    const value = attributes[key];
    const scrubbed = scrubbedValue(value, text);
    if (scrubbed !== value && out === undefined) out = { ...attributes };
    if (out !== undefined) out[key] = scrubbed;
  }
  return out ?? attributes;
}

function scrubbedValue(value: AttributeValue | undefined, text: (value: string) => string): AttributeValue | undefined {
  if (typeof value === 'string') return text(value);
  if (Array.isArray(value) && value.some((item) => typeof item === 'string' && text(item) !== item)) return value.map((item) => (typeof item === 'string' ? text(item) : item)) as AttributeValue;
  return value;
}
