import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { ROOT_CONTEXT, SamplingDecision, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { SecretScrubber } from '../secrets/secret-scrubber.js';
import { ScrubbingSpanProcessor } from './scrubbing-span-processor.js';
import { WorkerSpanProcessor, type WorkerSpanProcessorOptions } from './worker-span-processor.js';

/** An OTLP/HTTP receiver on a loopback port: keeps every request's protobuf body; answers at once, or when released. */
interface Receiver {
  readonly endpoint: string;
  readonly bodies: Buffer[];
  /** Requests are held unanswered until release(). */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

async function receiver(): Promise<Receiver> {
  const bodies: Buffer[] = [];
  let holding = false;
  const held: ServerResponse[] = [];
  const answer = (response: ServerResponse): void => {
    response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  };
  const server: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      bodies.push(Buffer.concat(chunks));
      if (holding) held.push(response);
      else answer(response);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`,
    bodies,
    hold: () => (holding = true),
    release: () => {
      holding = false;
      for (const response of held.splice(0)) answer(response);
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** How many times a string occurs in what was received (span names and attribute strings are in the protobuf verbatim). */
function occurrences(bodies: readonly Buffer[], text: string | Buffer): number {
  let count = 0;
  for (const body of bodies) {
    let at = body.indexOf(text);
    while (at !== -1) {
      count++;
      at = body.indexOf(text, at + 1);
    }
  }
  return count;
}

async function until(check: () => boolean, what: string, deadlineMs = 5000): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(options: Partial<WorkerSpanProcessorOptions> = {}, scrubber?: SecretScrubber) {
  const target = await receiver();
  cleanups.push(() => target.close());
  const dropped: number[] = [];
  const errors: string[] = [];
  const processor = new WorkerSpanProcessor({
    endpoint: target.endpoint,
    resourceAttributes: { 'service.name': 'worker-export-test' },
    onDropped: (count) => dropped.push(count),
    onExportError: (message) => errors.push(message),
    ...options,
  });
  const provider = new BasicTracerProvider({ spanProcessors: [scrubber !== undefined ? new ScrubbingSpanProcessor(processor, scrubber) : processor] });
  cleanups.push(() => provider.shutdown());
  return { target, processor, provider, tracer: provider.getTracer('uhlp'), dropped, errors };
}

describe('WorkerSpanProcessor', () => {
  it('sends ended spans from a worker in batches no larger than maxExportBatchSize, with their ids, events, links and resource', async () => {
    const { target, processor, tracer } = await setUp({ maxExportBatchSize: 10, scheduledDelayMillis: 50, handOffDelayMillis: 5 });
    const publish = tracer.startSpan('publish-span', { kind: SpanKind.PRODUCER });
    publish.end();
    for (let i = 0; i < 25; i++) {
      const span = tracer.startSpan(`turn-${String(i).padStart(3, '0')}`, { kind: SpanKind.SERVER, attributes: { 'uhlp.app': 'shop' }, links: [{ context: publish.spanContext(), attributes: { 'link.note': 'from-publish' } }] });
      span.addEvent('stage-event', { 'uhlp.stage': 'claim' });
      span.setStatus({ code: SpanStatusCode.ERROR, message: 'status-message' });
      span.end();
    }
    await processor.forceFlush();
    // 26 spans, batches of at most 10: three requests or more, never fewer.
    expect(target.bodies.length).toBeGreaterThanOrEqual(3);
    for (let i = 0; i < 25; i++) expect(occurrences(target.bodies, `turn-${String(i).padStart(3, '0')}`)).toBe(1);
    expect(occurrences(target.bodies, 'publish-span')).toBe(1);
    expect(occurrences(target.bodies, 'stage-event')).toBe(25);
    expect(occurrences(target.bodies, 'from-publish')).toBe(25);
    expect(occurrences(target.bodies, 'status-message')).toBe(25);
    // The resource goes with every request, and the trace id as its 16 bytes.
    expect(occurrences(target.bodies, 'worker-export-test')).toBe(target.bodies.length);
    expect(occurrences(target.bodies, Buffer.from(publish.spanContext().traceId, 'hex'))).toBeGreaterThan(0);
  });

  it('hands a span holding a value JSON cannot keep (±Infinity) over as it is: the backend gets the doubles', async () => {
    const { target, processor, tracer } = await setUp({ handOffDelayMillis: 5 });
    const parent = tracer.startSpan('plain-parent');
    const child = tracer.startSpan('non-finite-child', { attributes: { 'uhlp.ratio': Infinity, 'uhlp.spread': [1.5, -Infinity] } }, trace.setSpan(ROOT_CONTEXT, parent));
    child.end();
    parent.end();
    await processor.forceFlush();
    expect(occurrences(target.bodies, 'non-finite-child')).toBe(1);
    // IEEE 754 doubles, little-endian, as OTLP's AnyValue.double_value carries them (JSON would have made them null).
    const double = (value: number): Buffer => {
      const bytes = Buffer.alloc(8);
      bytes.writeDoubleLE(value);
      return bytes;
    };
    expect(occurrences(target.bodies, double(Infinity))).toBe(1);
    expect(occurrences(target.bodies, double(-Infinity))).toBe(1);
    expect(occurrences(target.bodies, double(1.5))).toBe(1);
    // The child keeps its parent, in a batch that went as JSON or not.
    expect(occurrences(target.bodies, Buffer.from(parent.spanContext().spanId, 'hex'))).toBe(2);
  });

  it('drops and counts the spans past maxQueueSize while the backend has not answered, and sends the rest', async () => {
    const { target, processor, tracer, dropped } = await setUp({ maxQueueSize: 4, maxExportBatchSize: 2, scheduledDelayMillis: 10, handOffDelayMillis: 1 });
    target.hold();
    for (let i = 0; i < 10; i++) tracer.startSpan(`queued-${i}`).end();
    // Four queued (handed over, unanswered), six dropped at once: nothing waits for room.
    expect(dropped.reduce((a, b) => a + b, 0)).toBe(6);
    await until(() => target.bodies.length >= 1, 'the first export request');
    target.release();
    await processor.forceFlush();
    for (let i = 0; i < 4; i++) expect(occurrences(target.bodies, `queued-${i}`)).toBe(1);
    for (let i = 4; i < 10; i++) expect(occurrences(target.bodies, `queued-${i}`)).toBe(0);
    // Room again once acknowledged.
    tracer.startSpan('after-room').end();
    await processor.forceFlush();
    expect(occurrences(target.bodies, 'after-room')).toBe(1);
    expect(dropped.reduce((a, b) => a + b, 0)).toBe(6);
  });

  it('sends what is still queued when it shuts down, and nothing after', async () => {
    // A minute's delay: only the shutdown's flush can send these.
    const { target, processor, tracer, dropped } = await setUp({ scheduledDelayMillis: 60_000, handOffDelayMillis: 60_000 });
    for (let i = 0; i < 3; i++) tracer.startSpan(`last-turn-${i}`).end();
    expect(target.bodies).toHaveLength(0);
    await processor.shutdown();
    for (let i = 0; i < 3; i++) expect(occurrences(target.bodies, `last-turn-${i}`)).toBe(1);
    tracer.startSpan('too-late').end();
    expect(dropped).toEqual([1]);
  });

  it('exports no span that was recorded but not sampled', async () => {
    const { target, processor } = await setUp({ handOffDelayMillis: 1, scheduledDelayMillis: 10 });
    // A sampler that records without sampling: the span reaches onEnd with its sampled flag off.
    const recordOnly = new BasicTracerProvider({ sampler: { shouldSample: () => ({ decision: SamplingDecision.RECORD }), toString: () => 'record-only' }, spanProcessors: [processor] });
    recordOnly.getTracer('uhlp').startSpan('recorded-only').end();
    await processor.forceFlush();
    expect(occurrences(target.bodies, 'recorded-only')).toBe(0);
  });

  it('hands the worker spans already scrubbed: a secret rotated away before the export is still not sent', async () => {
    const secret = 'canary-91b2e7d04f3a';
    let value = secret;
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value }]);
    const { target, processor, tracer } = await setUp({ scheduledDelayMillis: 60_000, handOffDelayMillis: 60_000 }, scrubber);
    const span = tracer.startSpan(`GET /pay/${secret}`, { attributes: { 'url.query': `token=${secret}` } });
    span.recordException({ name: 'UHLP_SCRIPT_EXCEPTION', message: `bad key ${secret}`, stack: `Error: ${secret}\n    at lib/sign.mjs:3:9` });
    span.end();
    // Rotated before anything left the core's thread: the scrubber no longer knows the old value.
    value = 'canary-rotated-5566778899';
    scrubber.update();
    await processor.forceFlush();
    expect(target.bodies.length).toBeGreaterThan(0);
    expect(occurrences(target.bodies, secret)).toBe(0);
    expect(occurrences(target.bodies, 'GET /pay/[secret:pay/token]')).toBe(1);
    expect(occurrences(target.bodies, 'lib/sign.mjs:3:9')).toBe(1);
  });

  it('reports an export the backend refuses, and gives its spans up (the queue frees)', async () => {
    const { processor, tracer, errors, dropped } = await setUp({ endpoint: 'http://127.0.0.1:9/v1/traces', maxQueueSize: 2, handOffDelayMillis: 1, scheduledDelayMillis: 10, exportTimeoutMillis: 2000 });
    tracer.startSpan('refused-1').end();
    tracer.startSpan('refused-2').end();
    await processor.forceFlush();
    expect(errors.length).toBeGreaterThan(0);
    tracer.startSpan('refused-3').end();
    expect(dropped).toEqual([]);
  });
});
