import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { ROOT_CONTEXT, context, propagation, trace } from '@opentelemetry/api';
import { SpanKind, activeTraceIds, carrierOf, continuedContext, inSpan, recordScriptException, recordsUnder, spanIfPending, startTurnSpan } from './spans.js';
import { recordClaim } from './claim-span.js';
import { inCronFiringSpan, inDeliverySpan, inPublishSpan } from './delivery-spans.js';
import { setTracingActive, tracingActive } from './tracing-active.js';
import { recordRunnerTimings } from './runner-spans.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(contextManager.enable());
  // As start-tracing.ts registers them (the SDK's default).
  propagation.setGlobalPropagator(new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }));
});
afterAll(() => {
  setTracingActive(false);
  trace.disable();
  context.disable();
  propagation.disable();
});
beforeEach(() => {
  exporter.reset();
  setTracingActive(true);
});

const PARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('spans', () => {
  it('continue a caller traceparent and tracestate, and carry them on', async () => {
    const { span, ctx } = startTurnSpan('GET /x', { kind: SpanKind.SERVER, parent: continuedContext({ traceparent: PARENT, tracestate: 'a=1' }) });
    await context.with(ctx, () => inSpan('uhlp.execution', async () => expect(carrierOf()).toEqual({ traceparent: expect.stringMatching(/^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$/), tracestate: 'a=1' })));
    span.end();
    const [stage, turn] = exporter.getFinishedSpans();
    expect(turn!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(turn!.parentSpanContext?.spanId).toBe('b7ad6b7169203331');
    expect(stage!.parentSpanContext?.spanId).toBe(turn!.spanContext().spanId);
  });

  it('continue a repeated traceparent header (its first value) and a caller baggage without a traceparent; a carrier with neither is the root', () => {
    expect(trace.getSpanContext(continuedContext({ traceparent: [PARENT, 'x'] }))?.spanId).toBe('b7ad6b7169203331');
    const withBaggage = continuedContext({ baggage: 'tenant=blue' });
    expect(propagation.getBaggage(withBaggage)?.getEntry('tenant')?.value).toBe('blue');
    expect(trace.getSpanContext(withBaggage)).toBeUndefined();
    expect(continuedContext({ 'content-type': 'text/plain', Traceparent: PARENT })).toBe(ROOT_CONTEXT);
  });

  it.each([['00-zz-yy-01'], [`00-${'0'.repeat(32)}-${'1'.repeat(16)}-01`], [['not', 'a string']], ['x'.repeat(10_000)]])('start a new trace for a hostile traceparent %#', (traceparent) => {
    const { span } = startTurnSpan('GET /x', { kind: SpanKind.SERVER, parent: continuedContext({ traceparent }) });
    span.end();
    expect(exporter.getFinishedSpans()[0]!.parentSpanContext).toBeUndefined();
  });

  it("put a script's exception on the turn's span with its stack", () => {
    const { span } = startTurnSpan('GET /x', { kind: SpanKind.SERVER, parent: continuedContext(undefined) });
    recordScriptException(span, { code: 'UHLP_SCRIPT_EXCEPTION', message: 'boom', stack: 'at f (scripts/a.mjs:3:9)' });
    span.end();
    const [finished] = exporter.getFinishedSpans();
    expect(finished!.status.code).toBe(2);
    expect(finished!.events[0]).toMatchObject({ name: 'exception', attributes: { 'exception.type': 'UHLP_SCRIPT_EXCEPTION', 'exception.message': 'boom', 'exception.stacktrace': 'at f (scripts/a.mjs:3:9)' } });
  });

  it('mark a failed stage with its code', async () => {
    await expect(inSpan('uhlp.limit', () => Promise.reject(Object.assign(new Error('slow down'), { code: 'UHLP_RATE_LIMITED' })))).rejects.toThrow('slow down');
    expect(exporter.getFinishedSpans()[0]).toMatchObject({ name: 'uhlp.limit', status: { code: 2, message: 'UHLP_RATE_LIMITED' }, attributes: { 'error.type': 'UHLP_RATE_LIMITED' } });
  });

  it("link a delivery's span to its publish, in a trace of its own", async () => {
    let meta: string | undefined;
    const { span, ctx } = startTurnSpan('POST /p', { kind: SpanKind.SERVER, parent: continuedContext(undefined) });
    await context.with(ctx, () => inPublishSpan('queue', 'app', 'jobs', async (m) => void (meta = m)));
    span.end();
    const publish = exporter.getFinishedSpans().find((s) => s.name === 'publish jobs')!;
    expect(JSON.parse(meta!)).toEqual({ trace: { traceparent: `00-${publish.spanContext().traceId}-${publish.spanContext().spanId}-01` } });
    await inDeliverySpan({ kind: 'queue', name: 'jobs', messageId: '1-0', attempt: 1, meta: meta! }, { 'uhlp.app': 'app' }, async () => expect(activeTraceIds()?.trace_id).toBeDefined());
    const delivery = exporter.getFinishedSpans().find((s) => s.name === 'process jobs')!;
    expect(delivery.kind).toBe(SpanKind.CONSUMER);
    expect(delivery.spanContext().traceId).not.toBe(publish.spanContext().traceId);
    expect(delivery.links[0]!.context.spanId).toBe(publish.spanContext().spanId);
    // A meta that is not ours (garbage, no trace) makes no link and no failure.
    for (const bad of ['{', '{"trace":"x"}', '{"trace":{"traceparent":"00-bad"}}']) {
      await inDeliverySpan({ kind: 'queue', name: 'jobs', messageId: '2-0', attempt: 1, meta: bad }, {}, async () => undefined);
    }
    expect(exporter.getFinishedSpans().filter((s) => s.name === 'process jobs' && s.links.length === 0)).toHaveLength(3);
  });

  it("root a cron firing's trace in a span of its own, the slot's delivery its child; a core that lost the slot exports nothing", async () => {
    const firing = { app: 'app', jobId: 'nightly', schedule: '0 3 * * *', timezone: 'Europe/Paris', scheduledTime: '2026-11-29T02:00:00.000Z', claimant: 'core-7' };
    let meta: string | undefined;
    expect(await inCronFiringSpan(firing, async (m) => ((meta = m), true))).toBe(true);
    const root = exporter.getFinishedSpans().find((s) => s.name === 'cron nightly')!;
    expect(root.parentSpanContext).toBeUndefined();
    expect(root.kind).toBe(SpanKind.PRODUCER);
    expect(root.attributes).toMatchObject({ 'uhlp.cron.job_id': 'nightly', 'uhlp.cron.scheduled_time': '2026-11-29T02:00:00.000Z', 'uhlp.cron.lease_holder': 'core-7', 'uhlp.cron.schedule': '0 3 * * *', 'uhlp.app': 'app' });
    await inDeliverySpan({ kind: 'cron', name: 'nightly', messageId: '1-0', attempt: 1, meta: meta! }, {}, async () => undefined);
    const delivery = exporter.getFinishedSpans().find((s) => s.name === 'process nightly')!;
    expect(delivery.spanContext().traceId).toBe(root.spanContext().traceId);
    expect(delivery.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
    expect(delivery.links).toEqual([]);

    exporter.reset();
    expect(await inCronFiringSpan(firing, async () => false)).toBe(false);
    expect(exporter.getFinishedSpans()).toEqual([]);
    // A failed claim is the firing's failure, exported.
    await expect(inCronFiringSpan(firing, () => Promise.reject(new Error('redis down')))).rejects.toThrow('redis down');
    expect(exporter.getFinishedSpans()[0]).toMatchObject({ name: 'cron nightly', status: { code: 2 } });
    // Tracing off: the firing is just run, with no meta.
    setTracingActive(false);
    expect(await inCronFiringSpan(firing, async (m) => m === undefined)).toBe(true);
  });

  it("place a runner's timings under the execution, never past its answer, whatever the runner claims", async () => {
    const sentAt = performance.now() - 100;
    const answeredAt = sentAt + 50;
    await inSpan('uhlp.execution', async () =>
      recordRunnerTimings(
        {
          script_load: { start_ms: 1, duration_ms: 5 },
          run: { start_ms: 6, duration_ms: 30 },
          tool_calls: [
            { tool: 'core.kv.set', start_ms: 10, duration_ms: 4, outcome: 'ok' },
            { tool: 'x'.repeat(300), start_ms: 1e12, duration_ms: 1e12, outcome: 'UHLP_MCP_TOOL_NOT_FOUND' },
          ],
        },
        sentAt,
        answeredAt,
      ),
    );
    const spans = exporter.getFinishedSpans();
    const execution = spans.find((s) => s.name === 'uhlp.execution')!;
    const latest = performance.timeOrigin + answeredAt;
    const ms = (t: [number, number]): number => t[0] * 1000 + t[1] / 1e6;
    for (const span of spans.filter((s) => s.name.startsWith('uhlp.runner.'))) {
      expect(span.parentSpanContext?.spanId).toBe(execution.spanContext().spanId);
      expect(ms(span.endTime)).toBeLessThanOrEqual(latest + 1);
    }
    expect(spans.map((s) => s.name)).toEqual(expect.arrayContaining(['uhlp.runner.script_load', 'uhlp.runner.run', 'uhlp.runner.tool_call core.kv.set', `uhlp.runner.tool_call ${'x'.repeat(128)}`]));
    expect(spans.find((s) => s.name.startsWith('uhlp.runner.tool_call xx'))!.status.code).toBe(2);
  });

  it('put a plain run (no tool calls) on the execution span as an attribute, and a warm claim as attributes: one span', async () => {
    const sentAt = performance.now();
    await inSpan('uhlp.execution', async () => {
      recordClaim('node', true, 1, sentAt - 0.01, sentAt);
      recordRunnerTimings({ run: { start_ms: 1, duration_ms: 2.5 } }, sentAt, sentAt + 10);
    });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['uhlp.execution']);
    expect(spans[0]!.attributes).toMatchObject({ 'uhlp.runner.run_ms': 2.5, 'uhlp.pool': 'node', 'uhlp.sandbox.hit': true });
  });

  it('make a claim that waited a uhlp.claim span, and a wait for the ledger a uhlp.ledger span; nothing for a write not waited for', async () => {
    const { span, ctx } = startTurnSpan('GET /x', { kind: SpanKind.SERVER, parent: continuedContext(undefined) });
    await context.with(ctx, async () => {
      await inSpan('uhlp.execution', async () => recordClaim('node', false, 1, performance.now() - 5, performance.now()));
      expect(spanIfPending('uhlp.ledger', () => undefined)).toBeUndefined();
      await spanIfPending('uhlp.ledger', () => new Promise((resolve) => setTimeout(resolve, 5)));
    });
    span.end();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['uhlp.claim', 'uhlp.execution', 'uhlp.ledger', 'GET /x']);
    const ledger = spans[2]!;
    expect(ledger.parentSpanContext?.spanId).toBe(span.spanContext().spanId);
    expect(ledger.duration[0] * 1000 + ledger.duration[1] / 1e6).toBeGreaterThanOrEqual(4);
  });

  it("make no stage span in a turn the sampler left out (its caller's traceparent unsampled)", async () => {
    const { span, ctx } = startTurnSpan('GET /x', { kind: SpanKind.SERVER, parent: continuedContext({ traceparent: PARENT.replace(/-01$/, '-00') }) });
    // The provider's default sampler (parent-based) follows the caller: the turn's span records nothing.
    expect(span.isRecording()).toBe(false);
    await context.with(ctx, async () => {
      expect(recordsUnder()).toBe(false);
      await inSpan('uhlp.execution', async (stage) => {
        expect(stage).toBeUndefined();
        recordClaim('node', false, 2, performance.now() - 5, performance.now());
        recordRunnerTimings({ run: { start_ms: 1, duration_ms: 2 }, tool_calls: [{ tool: 'core.kv.get', start_ms: 1, duration_ms: 1, outcome: 'ok' }] }, performance.now() - 5, performance.now());
      });
      expect(spanIfPending('uhlp.ledger', () => Promise.resolve())).toBeInstanceOf(Promise);
    });
    span.end();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });

  it('do nothing with tracing off: no spans, no carrier, no ids', async () => {
    setTracingActive(false);
    expect(tracingActive()).toBe(false);
    await inSpan('uhlp.execution', async (span) => expect(span).toBeUndefined());
    await inPublishSpan('queue', 'a', 'q', async (meta) => expect(meta).toBeUndefined());
    expect(carrierOf()).toBeUndefined();
    expect(activeTraceIds()).toBeUndefined();
    expect(exporter.getFinishedSpans()).toHaveLength(0);
  });
});
