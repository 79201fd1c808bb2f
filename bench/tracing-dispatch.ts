/**
 * What tracing costs a turn: the warm JIT dispatch through the core with
 * tracing off, and with every turn sampled (`OTEL_TRACES_SAMPLER=always_on`)
 * and exported to the test Jaeger (scripts/jaeger-env.sh up), in interleaved
 * rounds, at c1 and c16: req/s, latency and the core's CPU per request. With
 * BENCH_TRACING_BEFORE=<tree> (a built worktree of the commit before tracing),
 * that tree's core runs in the same rounds (path core-before): tracing off
 * against no tracing at all.
 */
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { jaegerEnv } from '../test/helpers/jaeger.js';
import { writeHelloApp } from './lib/bench-app.js';
import { loadThroughCore } from './lib/dispatch-load.js';
import { measureDispatch, type DispatchRow, type DispatchShape, type LoadResult } from './lib/load.js';

const SHAPES: readonly DispatchShape[] = [
  { connections: 1, sandboxes: 1, concurrency: 1 },
  { connections: 16, sandboxes: 2, concurrency: 8 },
];

async function throughCore(shape: DispatchShape, durationMs: number, env: Record<string, string>, tree?: string): Promise<LoadResult> {
  const app = writeHelloApp(`minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`);
  // Two minutes to start: on a loaded machine a core (and its warm sandboxes) can take more than the default 30 s.
  const core = await startUhlpDev(app, ['--log-level', 'error'], 120_000, undefined, env, ...(tree !== undefined ? [path.join(tree, 'bin', 'uhlp.js')] : []));
  try {
    return await loadThroughCore(core.url, '/bench/hello/{{id}}', shape.connections, durationMs, core.child.pid);
  } finally {
    await core.stop();
  }
}

export function benchTracing(durationMs: number, rounds: number): Promise<DispatchRow[]> {
  const jaeger = jaegerEnv();
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'uhlp-bench' };
  const before = process.env.BENCH_TRACING_BEFORE;
  return measureDispatch(
    {
      ...(before !== undefined && before !== '' ? { 'core-before': (shape: DispatchShape) => throughCore(shape, durationMs, {}, path.resolve(before)) } : {}),
      core: (shape) => throughCore(shape, durationMs, {}),
      'core-traced': (shape) => throughCore(shape, durationMs, traced),
    },
    rounds,
    SHAPES,
  );
}

/** Per shape: traced req/s as a share of untraced, and the CPU per request tracing adds. */
export function tracingCost(rows: readonly DispatchRow[]): Record<string, { rpsRatio: number; addedCoreCpuMs: number | undefined }> {
  const out: Record<string, { rpsRatio: number; addedCoreCpuMs: number | undefined }> = {};
  for (const traced of rows.filter((r) => r.path === 'core-traced')) {
    const plain = rows.find((r) => r.path === 'core' && r.connections === traced.connections && r.sandboxes === traced.sandboxes);
    if (plain === undefined) continue;
    const cpu = (row: DispatchRow): number | undefined => row.result.cpuMsPerRequest?.core;
    const added = cpu(traced) !== undefined && cpu(plain) !== undefined ? Math.round((cpu(traced)! - cpu(plain)!) * 1000) / 1000 : undefined;
    out[`c${traced.connections} ${traced.sandboxes}x${traced.concurrency}`] = { rpsRatio: Math.round((traced.result.rps / plain.result.rps) * 1000) / 1000, addedCoreCpuMs: added };
  }
  return out;
}
