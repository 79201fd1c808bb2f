import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, InMemorySpanExporter, ParentBasedSampler, SimpleSpanProcessor, TraceIdRatioBasedSampler, type Sampler } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator, suppressTracing } from '@opentelemetry/core';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { context, propagation, trace } from '@opentelemetry/api';
import { SecretScrubber } from '../secrets/secret-scrubber.js';
import { LeanSpan, LeanTracer, setLeanTracer } from './lean-span.js';
import { ScrubbingSpanProcessor } from './scrubbing-span-processor.js';
import { randomSpanId, randomTraceId } from './span-ids.js';
import { SpanKind, SpanStatusCode, carrierOf, continuedContext, inSpan, recordScriptException, startTurnSpan, tracer, turnSpanOf } from './spans.js';
import { setTracingActive } from './tracing-active.js';

const exporter = new InMemorySpanExporter();
const processor = new SimpleSpanProcessor(exporter);
const resource = resourceFromAttributes({ 'service.name': 'lean-test' });
const provider = new BasicTracerProvider({ resource, spanProcessors: [processor] });
const contextManager = new AsyncLocalStorageContextManager();
const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

function useLean(sampler: Sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() }), limits?: ConstructorParameters<typeof LeanTracer>[0]['limits']): void {
  setLeanTracer(new LeanTracer({ sampler, processor, resource, scope: { name: 'uhlp' }, ...(limits !== undefined ? { limits } : {}) }));
}

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager.enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  trace.disable();
  context.disable();
  propagation.disable();
});
beforeEach(() => {
  exporter.reset();
  setTracingActive(true);
  useLean();
});
afterEach(() => {
  setLeanTracer(undefined);
  setTracingActive(false);
});

describe('lean spans', () => {
  it("continue a caller's traceparent; a stage and a span the SDK's tracer starts keep their parents", async () => {
    const { span, ctx } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext({ traceparent: PARENT, tracestate: 'a=1' }), attributes: { 'http.request.method': 'GET', 'url.path': '/x/1' } });
    expect(span).toBeInstanceOf(LeanSpan);
    let carried: Record<string, string> | undefined;
    await context.with(ctx, () =>
      inSpan('uhlp.execution', async (stage) => {
        expect(stage).toBeInstanceOf(LeanSpan);
        expect(turnSpanOf()).toBe(span);
        carried = carrierOf();
        tracer().startSpan('mcp.tool kv.get').end();
      }),
    );
    span.setAttribute('http.route', '/x/:id');
    span.updateName('GET /x/:id');
    span.end();
    const [tool, stage, turn] = exporter.getFinishedSpans();
    expect(turn).toMatchObject({ name: 'GET /x/:id', kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'url.path': '/x/1', 'http.route': '/x/:id' }, instrumentationScope: { name: 'uhlp' } });
    expect(turn!.resource.attributes['service.name']).toBe('lean-test');
    expect(turn!.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', traceFlags: 1 });
    expect(turn!.spanContext().traceState?.serialize()).toBe('a=1');
    expect(turn!.parentSpanContext).toMatchObject({ spanId: 'b7ad6b7169203331', isRemote: true });
    expect(stage!.name).toBe('uhlp.execution');
    expect(stage!.parentSpanContext?.spanId).toBe(turn!.spanContext().spanId);
    // A span of other code (a tool call's) is the SDK's own, under the lean stage.
    expect(tool!).not.toBeInstanceOf(LeanSpan);
    expect(tool!.parentSpanContext?.spanId).toBe(stage!.spanContext().spanId);
    expect(tool!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(carried).toEqual({ traceparent: `00-0af7651916cd43dd8448eb211c80319c-${stage!.spanContext().spanId}-01`, tracestate: 'a=1' });
  });

  it('start a new trace without a caller, with times in order', () => {
    const before = Date.now();
    const { span } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext(undefined) });
    span.end();
    const [turn] = exporter.getFinishedSpans();
    expect(turn!.parentSpanContext).toBeUndefined();
    expect(turn!.spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
    const startMs = turn!.startTime[0] * 1000 + turn!.startTime[1] / 1e6;
    const endMs = turn!.endTime[0] * 1000 + turn!.endTime[1] / 1e6;
    expect(startMs).toBeGreaterThanOrEqual(before - 5);
    expect(endMs).toBeGreaterThanOrEqual(startMs);
    expect(endMs).toBeLessThanOrEqual(Date.now() + 5);
    expect(turn!.startTime[1]).toBeLessThan(1e9);
    expect(turn!.duration[0]).toBeGreaterThanOrEqual(0);
    expect(turn!.ended).toBe(true);
  });

  it("record a script's exception with its stack, and a failed stage's status and code", async () => {
    const { span, ctx } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext(undefined) });
    await expect(context.with(ctx, () => inSpan('uhlp.execution', () => Promise.reject(Object.assign(new Error('gone'), { code: 'UHLP_SANDBOX_UNAVAILABLE' }))))).rejects.toThrow('gone');
    recordScriptException(span, { code: 'UHLP_SCRIPT_EXCEPTION', message: 'boom', stack: 'at f (scripts/a.mjs:3:9)' });
    span.end();
    const [stage, turn] = exporter.getFinishedSpans();
    expect(stage!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'UHLP_SANDBOX_UNAVAILABLE' });
    expect(stage!.attributes['error.type']).toBe('UHLP_SANDBOX_UNAVAILABLE');
    expect(turn!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'UHLP_SCRIPT_EXCEPTION' });
    expect(turn!.events).toEqual([
      expect.objectContaining({ name: 'exception', attributes: { 'exception.type': 'UHLP_SCRIPT_EXCEPTION', 'exception.message': 'boom', 'exception.stacktrace': 'at f (scripts/a.mjs:3:9)' }, droppedAttributesCount: 0 }),
    ]);
    expect(turn!.events[0]!.time[0]).toBeGreaterThan(1e9);
  });

  it('keep a delivery span\'s links with their attributes', () => {
    const publish = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true };
    const { span } = startTurnSpan('process q', { kind: SpanKind.CONSUMER, parent: continuedContext(undefined), links: [{ context: publish, attributes: { 'messaging.message.id': 'm-1' } }] });
    span.end();
    expect(exporter.getFinishedSpans()[0]!.links).toEqual([{ context: publish, attributes: { 'messaging.message.id': 'm-1' } }]);
  });

  it('follow the SDK: an ended span ignores changes and a second end, OK status is final, invalid attributes are left out', () => {
    const span = new LeanTracer({ sampler: new AlwaysOnSampler(), processor, resource, scope: { name: 'uhlp' } }).startSpan('s', SpanKind.INTERNAL, continuedContext(undefined)) as LeanSpan;
    span.setAttribute('', 'x').setAttribute('obj', { a: 1 } as never).setAttribute('none', undefined).setAttribute('mixed', [1, 'a'] as never).setAttribute('ok', 1);
    span.setStatus({ code: SpanStatusCode.OK });
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'late' });
    span.end();
    span.setAttribute('after', 1).updateName('renamed').addEvent('late');
    span.end();
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    const [ended] = exporter.getFinishedSpans();
    expect(ended).toMatchObject({ name: 's', attributes: { ok: 1 }, status: { code: SpanStatusCode.OK }, events: [] });
    expect(Object.keys(ended!.attributes)).toEqual(['ok']);
    expect(span.isRecording()).toBe(false);
  });

  it('apply the span limits: attribute count and value length, event count', () => {
    useLean(undefined, { attributeCountLimit: 2, attributeValueLengthLimit: 4, eventCountLimit: 1, linkCountLimit: 1, attributePerEventCountLimit: 1, attributePerLinkCountLimit: 1 });
    const { span } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext(undefined), attributes: { a: 'abcdefgh', b: ['xyzxyz', 'ab'], c: 3 } });
    span.setAttribute('a', 'again-long');
    span.addEvent('first', { x: 1, y: 2 });
    span.addEvent('second', { x: 'long-value' });
    span.end();
    const [ended] = exporter.getFinishedSpans();
    expect(ended!.attributes).toEqual({ a: 'agai', b: ['xyzx', 'ab'] });
    expect(ended!.droppedAttributesCount).toBe(1);
    expect(ended!.events).toEqual([expect.objectContaining({ name: 'second', attributes: { x: 'long' } })]);
    expect(ended!.droppedEventsCount).toBe(1);
  });

  it.each([
    ['always_off', new AlwaysOffSampler()],
    ['ratio 0', new TraceIdRatioBasedSampler(0)],
    ['parent based, unsampled caller', new ParentBasedSampler({ root: new AlwaysOnSampler() })],
  ])('make no recorded span where the sampler says so (%s), and carry the context on unsampled', async (_name, sampler) => {
    useLean(sampler);
    const unsampledCaller = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00';
    const { span, ctx } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext({ traceparent: unsampledCaller }) });
    expect(span.isRecording()).toBe(false);
    let stage: unknown = 'not run';
    await context.with(ctx, () => inSpan('uhlp.execution', async (s) => void (stage = s)));
    span.end();
    expect(stage).toBeUndefined();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
    expect(span.spanContext()).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', traceFlags: 0 });
    expect(carrierOf(ctx)?.traceparent).toMatch(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-00$/);
  });

  it('make no span at all where tracing is suppressed', () => {
    const { span } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: suppressTracing(continuedContext(undefined)) });
    span.end();
    expect(span.isRecording()).toBe(false);
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });

  it("pass through the secret scrubbing: a secret in a lean span's strings never reaches the exporter", () => {
    const canary = 'canary-lean-5c1d9e';
    const scrubber = new SecretScrubber();
    scrubber.addSource('file', () => [{ name: 'pay/token', value: canary }]);
    setLeanTracer(new LeanTracer({ sampler: new AlwaysOnSampler(), processor: new ScrubbingSpanProcessor(processor, scrubber), resource, scope: { name: 'uhlp' } }));
    const { span } = startTurnSpan(`GET /pay/${canary}`, { kind: SpanKind.SERVER, parent: continuedContext(undefined), attributes: { 'url.path': `/pay/${canary}` } });
    recordScriptException(span, { code: 'UHLP_SCRIPT_EXCEPTION', message: `bad ${canary}`, stack: `Error: ${canary}\n    at lib/sign.mjs:3:9` });
    span.end();
    const [sent] = exporter.getFinishedSpans();
    expect(JSON.stringify({ name: sent!.name, attributes: sent!.attributes, events: sent!.events })).not.toContain(canary);
    expect(sent!.events[0]!.attributes!['exception.stacktrace']).toContain('lib/sign.mjs:3:9');
    expect(sent!.spanContext().traceId).toBe(span.spanContext().traceId);
    expect(sent!.startTime).toEqual((span as LeanSpan).startTime);
  });
});

describe('span ids', () => {
  it('are lowercase hex of their W3C length, never zero, and do not repeat', () => {
    const traces = new Set<string>();
    const spans = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const t = randomTraceId();
      const s = randomSpanId();
      expect(t).toMatch(/^[0-9a-f]{32}$/);
      expect(s).toMatch(/^[0-9a-f]{16}$/);
      expect(t).not.toBe('0'.repeat(32));
      expect(s).not.toBe('0'.repeat(16));
      traces.add(t);
      spans.add(s);
    }
    expect(traces.size).toBe(20_000);
    expect(spans.size).toBe(20_000);
  });
});
