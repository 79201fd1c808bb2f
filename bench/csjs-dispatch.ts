/**
 * cs-js (BENCH_ONLY=csjs): the same function called as a published cs-js
 * bundle (csjs runner, V8 isolate) and as a plain JIT script (jit-runner),
 * warm, on process sandboxes (bubblewrap) side by side, each POST /execute
 * straight to its runner; then the first call of never-seen versions on the
 * warm csjs runner (fetch over MCP + verify + compile + run), and the same
 * without sandbox, HTTP or fetch in this process; then the memory
 * one idle isolate holding a compiled bundle costs (RSS growth over many idle
 * isolates in this process, and V8's heap figure for one of them).
 *
 * Targets (issue 19): first call of a new version <= 10 ms p50; warm overhead
 * <= 0.2 ms p50 over the plain script.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ExecuteRequest } from '../src/contract/execute-contract.js';
import { buildBundle, openBundle, type BuiltBundle } from '../src/contract/cs-bundle/function-bundle.js';
import { IsolateRuntime } from '../src/runners/csjs/isolate-runtime.js';
import { runLocal } from '../src/cli/fn-run.js';
import { SandboxClient } from '../src/sandbox/sandbox-client.js';
import { startFakeMcpServer, FAKE_MCP_TOKEN } from '../test/helpers/fake-mcp-server.js';
import { poolSpec } from '../test/helpers/pool-spec.js';
import { makeProcessDriver } from '../test/helpers/process-driver.js';

const REVISION = 'c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5';
const SOURCE = `export default async function handle(event) {
  const { a, b } = event.triggerDetails.payload;
  return { statusCode: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sum: a + b }) };
}
`;
const MANIFEST = JSON.stringify({ schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default', limits: { timeoutMs: 3000, memoryMb: 32 } });

export interface Percentiles {
  readonly n: number;
  readonly p50: number;
  readonly p99: number;
  readonly mean: number;
}

export interface CsjsBench {
  readonly warm: { readonly csjs: Percentiles; readonly jit: Percentiles; readonly overheadP50Ms: number; readonly overheadP99Ms: number };
  readonly firstCallOfNewVersion: Percentiles;
  /** The same, in this process with no sandbox, HTTP or fetch: verify the bytes, compile, run. */
  readonly firstRunInProcess: Percentiles;
  readonly idleIsolate: { readonly isolates: number; readonly rssBytesPerIsolate: number; readonly v8HeapBytes: number };
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), mean: round(sorted.reduce((s, v) => s + v, 0) / sorted.length) };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function body(requestId: string, task: Record<string, unknown>): string {
  const request: ExecuteRequest = {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'bench', triggerEvent: 'sum', payload: { a: 2, b: 3 } } },
    context: {
      appId: 'bench',
      componentId: 'sum',
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      mcp_token: FAKE_MCP_TOKEN,
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'production' },
      taskDetails: { handler: 'JIT', revision: REVISION, timeoutMs: 3000, ...task } as ExecuteRequest['context']['taskDetails'],
    },
  };
  return JSON.stringify(request);
}

async function timed(client: SandboxClient, requestId: string, text: string): Promise<number> {
  const started = performance.now();
  const raw = await client.execute(text, requestId, 5000);
  const elapsed = performance.now() - started;
  const answer = JSON.parse(raw.body.toString('utf8')) as { resultType: string; data: { body?: string } };
  if (raw.status !== 200 || answer.resultType !== 'httpResponse' || answer.data.body !== '{"sum":5}') throw new Error(`unexpected answer: ${raw.body.toString('utf8').slice(0, 300)}`);
  return elapsed;
}

export async function benchCsjs(options: { warmCalls: number; newVersions: number; idleIsolates: number }): Promise<CsjsBench> {
  const definitions = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-csjs-'));
  mkdirSync(path.join(definitions, REVISION, 'scripts'), { recursive: true });
  writeFileSync(path.join(definitions, REVISION, 'scripts', 'sum.mjs'), SOURCE);
  const bundles = new Map<string, BuiltBundle>();
  const add = (functionJs: string): BuiltBundle => {
    const bundle = buildBundle({ functionJs, manifestJson: MANIFEST });
    bundles.set(bundle.sha256, bundle);
    return bundle;
  };
  const warmBundle = add(SOURCE);
  const mcp = await startFakeMcpServer({
    revision: REVISION,
    tools: {
      'core.fn.bundle': (args) => ({ sha256: args['sha256'], bundle: bundles.get(String(args['sha256']))!.bytes.toString('base64') }),
      'core.fn.log': () => ({ kept: 0 }),
    },
  });
  const driver = await makeProcessDriver();
  const limits = { memoryMb: 256, cpus: 1, timeoutMs: 5000 };
  const jitHandle = await driver.create({ appId: 'bench', pool: poolSpec({ name: 'jit', runner: 'jit', limits }), definitionsRoot: definitions, labels: {}, mcpSocket: mcp.socketPath });
  const csjsHandle = await driver.create({ appId: 'bench', pool: poolSpec({ name: 'cs', runner: 'csjs', limits }), definitionsRoot: definitions, labels: {}, mcpSocket: mcp.socketPath });
  const jit = new SandboxClient(jitHandle.endpoint);
  const csjs = new SandboxClient(csjsHandle.endpoint);
  try {
    const csTask = (bundle: BuiltBundle) => ({ cs: { tenant: 'bench', namespace: 'bench', function: 'sum', version: 1, sha256: bundle.sha256 } });
    const jitBody = (id: string) => body(id, { script: 'scripts/sum.mjs' });
    // Warm both: module import, isolate compile, connections.
    for (let i = 0; i < 200; i++) {
      await timed(jit, `wj${i}`, jitBody(`wj${i}`));
      await timed(csjs, `wc${i}`, body(`wc${i}`, csTask(warmBundle)));
    }
    const jitSamples: number[] = [];
    const csSamples: number[] = [];
    // Interleaved in blocks, so both sides see the same machine.
    for (let block = 0; block < options.warmCalls / 100; block++) {
      for (let i = 0; i < 100; i++) jitSamples.push(await timed(jit, `j${block}-${i}`, jitBody(`j${block}-${i}`)));
      for (let i = 0; i < 100; i++) csSamples.push(await timed(csjs, `c${block}-${i}`, body(`c${block}-${i}`, csTask(warmBundle))));
    }
    const newVersionSamples: number[] = [];
    for (let i = 0; i < options.newVersions; i++) {
      // A warm runner between requests: idle for a moment, as it is when a new version first arrives.
      await new Promise((resolve) => setTimeout(resolve, 25));
      const fresh = add(`${SOURCE}// version ${i} ${Date.now()}\n`);
      newVersionSamples.push(await timed(csjs, `n${i}`, body(`n${i}`, { cs: { tenant: 'bench', namespace: 'bench', function: 'sum', version: 100 + i, sha256: fresh.sha256 } })));
    }
    const csjsP = percentiles(csSamples);
    const jitP = percentiles(jitSamples);
    return {
      warm: { csjs: csjsP, jit: jitP, overheadP50Ms: round(csjsP.p50 - jitP.p50), overheadP99Ms: round(csjsP.p99 - jitP.p99) },
      firstCallOfNewVersion: percentiles(newVersionSamples),
      firstRunInProcess: await firstRunsInProcess(options.newVersions),
      idleIsolate: await idleIsolateMemory(options.idleIsolates),
    };
  } finally {
    jit.close();
    csjs.close();
    await driver.close();
    await mcp.close();
  }
}

/** First runs of never-seen versions on a warm engine in this process: how much of a first call is the isolate's own work. */
async function firstRunsInProcess(count: number): Promise<Percentiles> {
  const runtime = new IsolateRuntime();
  const event = { triggerDetails: { payload: { a: 2, b: 3 } } };
  await runLocal({ bundle: buildBundle({ functionJs: SOURCE, manifestJson: MANIFEST }), event, runtime });
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    const built = buildBundle({ functionJs: `${SOURCE}// in-process ${i} ${Date.now()}\n`, manifestJson: MANIFEST });
    const started = performance.now();
    const output = await runLocal({ bundle: openBundle(built.sha256, built.bytes), event, runtime });
    samples.push(performance.now() - started);
    if (output.result.resultType !== 'httpResponse') throw new Error(`unexpected answer: ${JSON.stringify(output.result).slice(0, 300)}`);
  }
  runtime.dispose();
  return percentiles(samples);
}

/** RSS growth per idle isolate holding a compiled bundle, in this process; and V8's heap size of one. */
async function idleIsolateMemory(count: number): Promise<CsjsBench['idleIsolate']> {
  const runtime = new IsolateRuntime({ maxIdleIsolates: count + 1 });
  // One run first: the engine and its threads are loaded before the baseline.
  await runLocal({ bundle: buildBundle({ functionJs: SOURCE, manifestJson: MANIFEST }), event: { triggerDetails: { payload: { a: 1, b: 1 } } }, runtime });
  global.gc?.();
  const before = process.memoryUsage().rss;
  for (let i = 0; i < count; i++) {
    await runLocal({ bundle: buildBundle({ functionJs: `${SOURCE}// idle ${i}\n`, manifestJson: MANIFEST }), event: { triggerDetails: { payload: { a: 1, b: 1 } } }, runtime });
  }
  global.gc?.();
  const after = process.memoryUsage().rss;
  const ivm = ((await import('isolated-vm')) as unknown as { default: typeof import('isolated-vm') }).default;
  const probe = new ivm.Isolate({ memoryLimit: 32 });
  const context = await probe.createContext();
  const module = await probe.compileModule(SOURCE);
  await module.instantiate(context, () => {
    throw new Error('no imports');
  });
  await module.evaluate();
  const heap = probe.getHeapStatisticsSync();
  probe.dispose();
  if (runtime.idleIsolates < count) throw new Error(`only ${runtime.idleIsolates} isolates stayed idle`);
  runtime.dispose();
  return { isolates: count, rssBytesPerIsolate: Math.round((after - before) / count), v8HeapBytes: heap.total_heap_size + heap.externally_allocated_size };
}

export function csjsTable(result: CsjsBench): string {
  const row = (name: string, p: Percentiles): string => `${name.padEnd(44)} p50 ${p.p50.toFixed(3).padStart(8)} ms  p99 ${p.p99.toFixed(3).padStart(8)} ms  (n=${p.n})`;
  return [
    row('warm call, plain JIT script (jit-runner)', result.warm.jit),
    row('warm call, cs-js bundle (csjs runner)', result.warm.csjs),
    `${'cs-js - JIT'.padEnd(44)} p50 ${result.warm.overheadP50Ms >= 0 ? '+' : ''}${result.warm.overheadP50Ms} ms  p99 ${result.warm.overheadP99Ms >= 0 ? '+' : ''}${result.warm.overheadP99Ms} ms  (target p50 <= +0.2 ms)`,
    row('first call of a never-seen version', result.firstCallOfNewVersion) + '  (target p50 <= 10 ms)',
    row('  of it: verify, compile, run (in-process)', result.firstRunInProcess),
    `idle isolate: ${(result.idleIsolate.rssBytesPerIsolate / 1024).toFixed(0)} KiB RSS each over ${result.idleIsolate.isolates}; V8 heap of one ${(result.idleIsolate.v8HeapBytes / 1024).toFixed(0)} KiB`,
  ].join('\n');
}
