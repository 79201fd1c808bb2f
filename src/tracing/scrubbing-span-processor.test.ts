import { describe, expect, it } from 'vitest';
import { BasicTracerProvider, BatchSpanProcessor, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { SecretScrubber } from '../secrets/secret-scrubber.js';
import { ScrubbingSpanProcessor } from './scrubbing-span-processor.js';

const CANARY = 'canary-7f3e9a1c55d2';

function tracedWith(scrubber: SecretScrubber): { exporter: InMemorySpanExporter; provider: BasicTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new ScrubbingSpanProcessor(new SimpleSpanProcessor(exporter), scrubber)] });
  return { exporter, provider };
}

describe('ScrubbingSpanProcessor', () => {
  it('sends no secret value in a span: name, attributes, exception events, links and status are scrubbed', () => {
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value: CANARY }]);
    const { exporter, provider } = tracedWith(scrubber);
    const tracer = provider.getTracer('test');
    const linked = tracer.startSpan('publish');
    linked.end();
    const span = tracer.startSpan(`GET /pay/${CANARY}`, {
      attributes: { 'url.query': `token=${CANARY}`, 'uhlp.list': ['a', `b${CANARY}`], 'http.response.status_code': 500 },
      links: [{ context: linked.spanContext(), attributes: { note: `from ${encodeURIComponent(CANARY)}` } }],
    });
    span.recordException({ name: 'UHLP_SCRIPT_EXCEPTION', message: `bad key ${CANARY}`, stack: `Error: ${JSON.stringify(CANARY)}\n    at lib/sign.mjs:3:9` });
    span.setStatus({ code: SpanStatusCode.ERROR, message: `failed with ${CANARY}` });
    span.end();

    const [, sent] = exporter.getFinishedSpans();
    expect(JSON.stringify({ name: sent!.name, attributes: sent!.attributes, events: sent!.events, links: sent!.links.map((link) => link.attributes), status: sent!.status })).not.toContain(CANARY);
    expect(sent!.name).toBe('GET /pay/[secret:pay/token]');
    expect(sent!.attributes['http.response.status_code']).toBe(500);
    expect(sent!.events[0]!.attributes!['exception.stacktrace']).toContain('lib/sign.mjs:3:9');
    // What is not a string is the span's own: its ids and times read through.
    expect(sent!.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(sent!.duration).toEqual(expect.any(Array));
  });

  it('scrubs a span as it ends, with the values known then: a value rotated away before the export is still caught', async () => {
    let value = CANARY;
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value }]);
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new ScrubbingSpanProcessor(new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000 }), scrubber)] });
    const span = provider.getTracer('test').startSpan('sign');
    span.recordException({ name: 'UHLP_SCRIPT_EXCEPTION', message: `crashed holding ${CANARY}` });
    span.end();
    value = 'canary-rotated-0000';
    scrubber.update();
    await provider.forceFlush();
    expect(JSON.stringify(exporter.getFinishedSpans()[0]!.events)).not.toContain(CANARY);
  });

  it('sends a span holding no secret value as it is, not a copy, while secrets are known', () => {
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value: CANARY }]);
    const { exporter, provider } = tracedWith(scrubber);
    const span = provider.getTracer('test').startSpan('GET /pay', { attributes: { 'url.path': '/pay', list: ['a', 'b'], n: 1 } });
    span.recordException({ name: 'UHLP_SCRIPT_EXCEPTION', message: 'plain', stack: 'at lib/sign.mjs:3:9' });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'plain' });
    span.end();
    expect(exporter.getFinishedSpans()[0]).toBe(span);
  });

  it('copies only what held a value: the other attributes and events are the span\'s own', () => {
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value: CANARY }]);
    const { exporter, provider } = tracedWith(scrubber);
    const span = provider.getTracer('test').startSpan('GET /pay', { attributes: { 'url.path': '/pay', 'url.query': `t=${CANARY}` } });
    span.addEvent('first', { ok: 'plain' });
    span.addEvent('second', { bad: CANARY });
    span.end();
    const [sent] = exporter.getFinishedSpans();
    expect(sent).not.toBe(span);
    expect(sent!.attributes).toEqual({ 'url.path': '/pay', 'url.query': 't=[secret:pay/token]' });
    expect(sent!.events[0]).toBe((span as unknown as { events: unknown[] }).events[0]);
    expect(sent!.events[1]!.attributes).toEqual({ bad: '[secret:pay/token]' });
    expect((span as unknown as { attributes: Record<string, unknown> }).attributes['url.query']).toBe(`t=${CANARY}`);
  });

  it('sends the spans as they are while no secret is known', () => {
    const { exporter, provider } = tracedWith(new SecretScrubber());
    const span = provider.getTracer('test').startSpan(`GET /${CANARY}`);
    span.end();
    expect(exporter.getFinishedSpans()[0]!.name).toBe(`GET /${CANARY}`);
  });
});
