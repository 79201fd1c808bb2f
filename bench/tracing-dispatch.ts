/**
 * What tracing costs a turn: the warm JIT dispatch through the core with
 * tracing off, and with every turn sampled (`OTEL_TRACES_SAMPLER=always_on`)
 * and exported to the test Jaeger (scripts/jaeger-env.sh up), in interleaved
 * rounds, at c1 and c16: req/s, latency and the core's CPU per request, split
 * by the core's threads (its event loop, the span export worker, V8's GC
 * threads) with Jaeger's own CPU beside it (the collector shares the cores). With
 * BENCH_TRACING_BEFORE=<tree> (a built worktree of the commit before tracing),
 * that tree's core runs in the same rounds (path core-before): tracing off
 * against no tracing at all.
 */
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { jaegerEnv } from '../test/helpers/jaeger.js';
import { writeHelloApp } from './lib/bench-app.js';
import { readFileSync } from 'node:fs';
import { loadThroughCore } from './lib/dispatch-load.js';
import { processCpuMs, threadCpuByName, threadCpuPer } from './lib/thread-cpu.js';
import { measureDispatch, type DispatchRow, type DispatchShape, type LoadResult } from './lib/load.js';

const SHAPES: readonly DispatchShape[] = [
  { connections: 1, sandboxes: 1, concurrency: 1 },
  { connections: 16, sandboxes: 2, concurrency: 8 },
];

/** The test Jaeger's pid (scripts/jaeger-env.sh up writes it), to read its CPU; undefined when it is not known. */
function jaegerPid(): number | undefined {
  try {
    const pid = Number(readFileSync(path.join(process.env.UHLP_TEST_ENV_STATE ?? '/var/tmp/uhlp-test-env', 'jaeger.pid'), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

async function throughCore(shape: DispatchShape, durationMs: number, env: Record<string, string>, tree?: string): Promise<LoadResult> {
  const app = writeHelloApp(`minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`);
  // Two minutes to start: on a loaded machine a core (and its warm sandboxes) can take more than the default 30 s.
  const core = await startUhlpDev(app, ['--log-level', 'error'], 120_000, undefined, env, ...(tree !== undefined ? [path.join(tree, 'bin', 'uhlp.js')] : []));
  // Over the measured window: the core's CPU by thread (its event loop, the span export worker, V8's GC threads) and Jaeger's.
  const pid = core.child.pid!;
  const collector = jaegerPid();
  let threads = new Map<string, number>();
  let collectorMs: number | undefined;
  let split: Pick<LoadResult, 'cpuByThreadMsPerRequest' | 'collectorCpuMsPerRequest'> = {};
  try {
    const result = await loadThroughCore(core.url, '/bench/hello/{{id}}', shape.connections, durationMs, pid, (phase) => {
      const now = threadCpuByName(pid);
      const collectorNow = collector !== undefined ? processCpuMs(collector) : undefined;
      if (phase === 'measuring') {
        threads = now;
        collectorMs = collectorNow;
        return;
      }
      split = {
        cpuByThreadMsPerRequest: threadCpuPer(threads, now, 1),
        ...(collectorMs !== undefined && collectorNow !== undefined ? { collectorCpuMsPerRequest: collectorNow - collectorMs } : {}),
      };
    });
    // The totals above are per window: per request once the count is known.
    const per = (ms: number): number => Math.round((ms / Math.max(1, result.requests)) * 1000) / 1000;
    return {
      ...result,
      ...(split.cpuByThreadMsPerRequest !== undefined ? { cpuByThreadMsPerRequest: Object.fromEntries(Object.entries(split.cpuByThreadMsPerRequest).map(([name, ms]) => [name, per(ms)])) } : {}),
      ...(split.collectorCpuMsPerRequest !== undefined ? { collectorCpuMsPerRequest: per(split.collectorCpuMsPerRequest) } : {}),
    };
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

/** The core's threads as the split reports them: its event loop, the span export worker, V8's GC and compiler threads, the rest. */
const THREAD_GROUPS: ReadonlyArray<readonly [string, (name: string) => boolean]> = [
  ['main', (name) => name === 'MainThread'],
  ['exportWorker', (name) => name === 'uhlp-span-expor'],
  ['v8Workers', (name) => name === 'V8Worker'],
  ['other', (name) => name !== 'MainThread' && name !== 'uhlp-span-expor' && name !== 'V8Worker'],
];

export interface TracingCost {
  rpsRatio: number;
  addedCoreCpuMs: number | undefined;
  /** What tracing adds a request, ms: by the core's thread groups, and Jaeger's process (the collector shares the machine's cores). */
  addedCpuSplitMs?: Record<string, number>;
}

/** Per shape: traced req/s as a share of untraced, and the CPU per request tracing adds (in all, by thread, and Jaeger's). */
export function tracingCost(rows: readonly DispatchRow[]): Record<string, TracingCost> {
  const out: Record<string, TracingCost> = {};
  for (const traced of rows.filter((r) => r.path === 'core-traced')) {
    const plain = rows.find((r) => r.path === 'core' && r.connections === traced.connections && r.sandboxes === traced.sandboxes);
    if (plain === undefined) continue;
    const cpu = (row: DispatchRow): number | undefined => row.result.cpuMsPerRequest?.core;
    const round = (ms: number): number => Math.round(ms * 1000) / 1000;
    const added = cpu(traced) !== undefined && cpu(plain) !== undefined ? round(cpu(traced)! - cpu(plain)!) : undefined;
    const group = (row: DispatchRow, match: (name: string) => boolean): number =>
      Object.entries(row.result.cpuByThreadMsPerRequest ?? {})
        .filter(([name]) => match(name))
        .reduce((sum, [, ms]) => sum + ms, 0);
    const split =
      traced.result.cpuByThreadMsPerRequest !== undefined && plain.result.cpuByThreadMsPerRequest !== undefined
        ? {
            ...Object.fromEntries(THREAD_GROUPS.map(([name, match]) => [name, round(group(traced, match) - group(plain, match))])),
            jaeger: round((traced.result.collectorCpuMsPerRequest ?? 0) - (plain.result.collectorCpuMsPerRequest ?? 0)),
          }
        : undefined;
    out[`c${traced.connections} ${traced.sandboxes}x${traced.concurrency}`] = {
      rpsRatio: Math.round((traced.result.rps / plain.result.rps) * 1000) / 1000,
      addedCoreCpuMs: added,
      ...(split !== undefined ? { addedCpuSplitMs: split } : {}),
    };
  }
  return out;
}
