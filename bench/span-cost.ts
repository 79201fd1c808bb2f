/**
 * What tracing a sampled plain turn costs the core's thread, in process
 * (`npx tsx bench/span-cost.ts`): the span calls of a plain HTTP turn (the
 * ingress's SERVER span with the caller's `traceparent` continued, its
 * attributes, `uhlp.execution` with a warm claim's and the runner's
 * attributes, the log line's and the exemplar's ids, the route's name, the
 * status, both ends) run through the real provider, sampler, scrubbing and
 * worker hand-off, with the export worker POSTing to a receiver in a child
 * process. Variants run alternately in chunks in one process, so the machine's
 * load falls on each alike:
 *
 * - `off`: tracing off (the span sites' one boolean), the loop's own cost;
 * - `sdk`: every span the SDK's (the build before lean spans);
 * - `lean`: the turn's own spans lean (lean-span.ts), as the core runs now;
 * - `lean-scrub`/`sdk-scrub`: the same with a secret known to the scrubber.
 *
 * CPU per turn is the main thread's (process.threadCpuUsage) and the
 * process's (the export worker's encoding included) over a chunk, less
 * nothing: `off` is printed beside them. BENCH_SPAN_TURNS (default 100000)
 * turns a variant; BENCH_SPAN_CHUNK (default 5000) turns a chunk.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { NodeTracerProvider, ParentBasedSampler, AlwaysOnSampler } from '@opentelemetry/sdk-trace-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { SecretScrubber } from '../src/secrets/secret-scrubber.js';
import { ScrubbingSpanProcessor } from '../src/tracing/scrubbing-span-processor.js';
import { WorkerSpanProcessor } from '../src/tracing/worker-span-processor.js';
import { LeanTracer, setLeanTracer } from '../src/tracing/lean-span.js';
import { setTracingActive } from '../src/tracing/tracing-active.js';
import { SpanKind, activeTraceIds, context, continuedContext, inSpan, startTurnSpan, turnSpanOf, trace } from '../src/tracing/spans.js';
import { recordClaim } from '../src/tracing/claim-span.js';
import { recordRunnerTimings } from '../src/tracing/runner-spans.js';

const TURNS = Number(process.env.BENCH_SPAN_TURNS ?? 100_000);
const CHUNK = Number(process.env.BENCH_SPAN_CHUNK ?? 5000);
const HEADERS = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01', host: 'localhost', accept: '*/*' };

/** A receiver in its own process: its CPU is not the core's. */
async function startReceiver(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, ['-e', "const s=require('node:http').createServer((q,r)=>{q.resume();q.on('end',()=>r.end())});s.listen(0,'127.0.0.1',()=>console.log(s.address().port))"], { stdio: ['ignore', 'pipe', 'inherit'] });
  const [line] = (await once(child.stdout!, 'data')) as [Buffer];
  return { url: `http://127.0.0.1:${line.toString().trim()}/v1/traces`, stop: () => child.kill() };
}

/** The span calls of one plain HTTP turn, as http-ingress.ts, turn-stages.ts and the executor make them. */
async function turn(i: number): Promise<void> {
  const { span, ctx } = startTurnSpan('GET', { kind: SpanKind.SERVER, parent: continuedContext(HEADERS), attributes: { 'http.request.method': 'GET', 'url.path': `/bench/hello/${i}`, 'uhlp.request_id': `req-${i}` } });
  await context.with(ctx, async () => {
    turnSpanOf()?.setAttribute('uhlp.component', 'hello');
    await inSpan('uhlp.execution', async () => {
      const sent = performance.now();
      recordClaim('bench', true, 1, sent, sent);
      activeTraceIds();
      recordRunnerTimings({ run: { start_ms: 0.01, duration_ms: 0.05 } }, sent, performance.now());
      // The exemplar's ids.
      trace.getActiveSpan()?.spanContext();
    });
  });
  span.setAttribute('uhlp.app', 'bench');
  span.setAttribute('http.route', '/hello/:id');
  span.updateName('GET /hello/:id');
  span.setAttribute('http.response.status_code', 200);
  span.end();
}

interface Variant {
  readonly name: string;
  readonly traced: boolean;
  readonly lean: boolean;
  readonly scrub: boolean;
}

const VARIANTS: readonly Variant[] = [
  { name: 'off', traced: false, lean: false, scrub: false },
  { name: 'sdk', traced: true, lean: false, scrub: false },
  { name: 'lean', traced: true, lean: true, scrub: false },
  { name: 'sdk-scrub', traced: true, lean: false, scrub: true },
  { name: 'lean-scrub', traced: true, lean: true, scrub: true },
];

async function main(): Promise<void> {
  const receiver = await startReceiver();
  const resource = resourceFromAttributes({ 'service.name': 'span-cost' });
  let dropped = 0;
  const batch = new WorkerSpanProcessor({ endpoint: receiver.url, resourceAttributes: resource.attributes, maxQueueSize: 1 << 20, maxExportBatchSize: 1024, scheduledDelayMillis: 1000, onDropped: (n) => (dropped += n) });
  const quiet = new SecretScrubber();
  const secret = new SecretScrubber();
  secret.addSource('bench', () => [{ name: 'TOKEN', value: 's3cr3t-value-never-seen' }]);
  const chains = { plain: new ScrubbingSpanProcessor(batch, quiet), scrub: new ScrubbingSpanProcessor(batch, secret) };
  const sampler = new ParentBasedSampler({ root: new AlwaysOnSampler() });
  const providers = {
    plain: new NodeTracerProvider({ resource, sampler, spanProcessors: [chains.plain] }),
    scrub: new NodeTracerProvider({ resource, sampler, spanProcessors: [chains.scrub] }),
  };
  providers.plain.register();
  const leans = { plain: new LeanTracer({ sampler, processor: chains.plain, resource, scope: { name: 'uhlp' } }), scrub: new LeanTracer({ sampler, processor: chains.scrub, resource, scope: { name: 'uhlp' } }) };

  const select = (v: Variant): void => {
    setTracingActive(v.traced);
    trace.disable();
    // register() sets the propagator and context manager too; the tracer provider alone is switched here.
    trace.setGlobalTracerProvider(v.scrub ? providers.scrub : providers.plain);
    setLeanTracer(v.lean ? (v.scrub ? leans.scrub : leans.plain) : undefined);
  };

  const totals = new Map<string, { turns: number; threadUs: number; processUs: number; wallMs: number }>(VARIANTS.map((v) => [v.name, { turns: 0, threadUs: 0, processUs: 0, wallMs: 0 }]));
  // Warm-up: every variant's code compiled before anything is counted.
  for (const v of VARIANTS) {
    select(v);
    for (let i = 0; i < 2000; i++) await turn(i);
    await batch.forceFlush();
  }
  for (let done = 0; done < TURNS; done += CHUNK) {
    for (const v of done / CHUNK % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      select(v);
      const thread = process.threadCpuUsage();
      const proc = process.cpuUsage();
      const wall = performance.now();
      for (let i = 0; i < CHUNK; i++) {
        await turn(i);
        // Let the worker's acknowledgements in, as a core's event loop would between requests.
        if (i % 100 === 99) await yieldToLoop();
      }
      // The worker's encoding and POSTs of this chunk's spans count against it.
      if (v.traced) await batch.forceFlush();
      const t = process.threadCpuUsage(thread);
      const p = process.cpuUsage(proc);
      const total = totals.get(v.name)!;
      total.turns += CHUNK;
      total.threadUs += t.user + t.system;
      total.processUs += p.user + p.system;
      total.wallMs += performance.now() - wall;
    }
  }
  setLeanTracer(undefined);
  setTracingActive(false);
  await batch.shutdown();
  receiver.stop();

  const rows = [...totals].map(([name, t]) => ({
    variant: name,
    turns: t.turns,
    mainThreadUsPerTurn: Math.round((t.threadUs / t.turns) * 100) / 100,
    processUsPerTurn: Math.round((t.processUs / t.turns) * 100) / 100,
    wallUsPerTurn: Math.round(((t.wallMs * 1000) / t.turns) * 100) / 100,
  }));
  const off = rows.find((r) => r.variant === 'off')!;
  const result = {
    turns: TURNS,
    chunk: CHUNK,
    loadAverage: (await import('node:os')).loadavg().map((l) => Math.round(l * 100) / 100),
    dropped,
    rows: rows.map((r) => ({ ...r, addedMainThreadUsPerTurn: Math.round((r.mainThreadUsPerTurn - off.mainThreadUsPerTurn) * 100) / 100, addedProcessUsPerTurn: Math.round((r.processUsPerTurn - off.processUsPerTurn) * 100) / 100 })),
  };
  console.log(JSON.stringify(result, null, 2));
  console.log(`\n${'variant'.padEnd(12)}${'main µs/turn'.padStart(14)}${'+ vs off'.padStart(10)}${'process µs/turn'.padStart(17)}${'+ vs off'.padStart(10)}`);
  for (const r of result.rows) console.log(`${r.variant.padEnd(12)}${String(r.mainThreadUsPerTurn).padStart(14)}${String(r.addedMainThreadUsPerTurn).padStart(10)}${String(r.processUsPerTurn).padStart(17)}${String(r.addedProcessUsPerTurn).padStart(10)}`);
  console.log(`\nload average ${result.loadAverage.join(' ')}; spans dropped ${dropped}`);
}

await main();
