/**
 * A `uhlp dev` core run with `--cpu-prof` under the dispatch benchmark's load,
 * and its main thread's samples of the measured window alone (not start-up,
 * warm-up or shutdown) summed as self time by function and by module, in
 * microseconds a request; with the CPU of its threads and of a collector's
 * process over the same window (thread-cpu.ts).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startUhlpDev } from '../../test/helpers/uhlp-process.js';
import { writeHelloApp } from './bench-app.js';
import { loadThroughCore } from './dispatch-load.js';
import type { DispatchShape, LoadResult } from './load.js';
import { processCpuMs, threadCpuByName, threadCpuPer } from './thread-cpu.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CoreProfile {
  readonly result: LoadResult;
  /** The profile file (open it in Chrome's DevTools for the flame graph). */
  readonly file: string;
  /** Busy (not idle) main-thread time in the measured window, µs a request. */
  readonly busyUs: number;
  readonly byFunction: Map<string, number>;
  readonly byModule: Map<string, number>;
  /** CPU a request by thread name (MainThread, uhlp-span-expor, V8Worker, …), ms. */
  readonly threads: Record<string, number>;
  /** CPU a request of the collector's process, when its pid was given, ms. */
  readonly collectorMs?: number;
}

export interface CoreProfileOptions {
  readonly shape: DispatchShape;
  readonly seconds: number;
  /** The core's environment beside the profiler's (OTEL_* for tracing). */
  readonly env?: Record<string, string>;
  /** The collector's pid (Jaeger): its CPU over the same window. */
  readonly collectorPid?: number;
  /** The profiler's sampling interval, µs. @defaultValue 250 */
  readonly intervalUs?: number;
}

export async function profileCore(options: CoreProfileOptions): Promise<CoreProfile> {
  const { shape } = options;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-core-profile-'));
  const app = writeHelloApp(`minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`);
  const core = await startUhlpDev(app, ['--log-level', 'error'], 180_000, undefined, {
    ...options.env,
    NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${options.intervalUs ?? 250}`,
  });
  const pid = core.child.pid!;
  // The profile's clock is the monotonic one, in microseconds: the window is read on the same clock.
  let from = 0;
  let to = 0;
  let threadsBefore = new Map<string, number>();
  let threadsAfter = new Map<string, number>();
  let collectorBefore: number | undefined;
  let collectorAfter: number | undefined;
  let result: LoadResult;
  try {
    result = await loadThroughCore(core.url, '/bench/hello/{{id}}', shape.connections, options.seconds * 1000, pid, (phase) => {
      const now = Number(process.hrtime.bigint() / 1000n);
      const collector = options.collectorPid !== undefined ? processCpuMs(options.collectorPid) : undefined;
      if (phase === 'measuring') {
        from = now;
        threadsBefore = threadCpuByName(pid);
        collectorBefore = collector;
      } else {
        to = now;
        threadsAfter = threadCpuByName(pid);
        collectorAfter = collector;
      }
    });
  } finally {
    await core.stop();
  }
  // The core's own profile is the largest (its worker threads, the std-body host and the sandboxes write theirs beside it).
  const file = readdirSync(dir)
    .map((name) => path.join(dir, name))
    .sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const byFunction = new Map<string, number>();
  const byModule = new Map<string, number>();
  const perRequest = 1 / Math.max(1, result.requests);
  let busyUs = 0;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i]!;
    at += delta;
    if (at < from || at > to) continue;
    const frame = byId.get(profile.samples[i]!)!.callFrame;
    if (frame.functionName === '(idle)') continue;
    // A sample stands for the time since the one before it.
    const us = delta * perRequest;
    busyUs += us;
    const where = frame.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/');
    const fn = `${frame.functionName || '(anonymous)'} ${where ? `${where}:${frame.lineNumber + 1}` : '(native)'}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    const module = where || `(native) ${frame.functionName}`;
    byModule.set(module, (byModule.get(module) ?? 0) + us);
  }
  return {
    result,
    file,
    busyUs,
    byFunction,
    byModule,
    threads: threadCpuPer(threadsBefore, threadsAfter, result.requests),
    ...(collectorBefore !== undefined && collectorAfter !== undefined ? { collectorMs: Math.round(((collectorAfter - collectorBefore) / Math.max(1, result.requests)) * 1000) / 1000 } : {}),
  };
}
