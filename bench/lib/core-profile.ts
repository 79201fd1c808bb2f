/**
 * A `uhlp dev` core (or the bare forwarder, bare-forwarder.ts: the same
 * sandboxes behind the core's own HTTP server and client, nothing else) run
 * with `--cpu-prof` under the dispatch benchmark's load, and its main thread's
 * samples of the measured window alone (not start-up, warm-up or shutdown)
 * summed as self time by function and by module (cpu-profile.ts), in
 * microseconds a request; with the CPU of its threads and of a collector's
 * process over the same window (thread-cpu.ts).
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { monotonicUs, summarizeProfile } from './cpu-profile.js';
import { loadThroughCore } from './dispatch-load.js';
import { serveHello } from './hello-target.js';
import type { DispatchShape, LoadResult } from './load.js';
import { processCpuMs, threadCpuByName, threadCpuPer } from './thread-cpu.js';

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
  /** What is profiled. @defaultValue 'core' */
  readonly target?: 'core' | 'forwarder';
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
  const target = options.target ?? 'core';
  const dir = mkdtempSync(path.join(os.tmpdir(), `uhlp-${target}-profile-`));
  const env = { ...options.env, NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${options.intervalUs ?? 250}` };
  const server = await serveHello(target, shape.sandboxes, shape.concurrency, env);
  const pid = server.pid;
  // The profile's clock is the monotonic one, in microseconds: the window is read on the same clock.
  let from = 0;
  let to = 0;
  let threadsBefore = new Map<string, number>();
  let threadsAfter = new Map<string, number>();
  let collectorBefore: number | undefined;
  let collectorAfter: number | undefined;
  let result: LoadResult;
  try {
    result = await loadThroughCore(server.url, server.path, shape.connections, options.seconds * 1000, pid, (phase) => {
      const now = monotonicUs();
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
    await server.stop();
  }
  // The process's own profile is the largest (its worker threads, the std-body host and the sandboxes write theirs beside it).
  const file = readdirSync(dir)
    .map((name) => path.join(dir, name))
    .sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
  const summary = summarizeProfile(file, from, to);
  // A sample stands for the mean time between samples.
  const usPerRequest = summary.intervalUs / Math.max(1, result.requests);
  const inUs = (counts: ReadonlyMap<string, number>): Map<string, number> => new Map([...counts].map(([name, count]) => [name, count * usPerRequest]));
  const byFunction = inUs(summary.byFunction);
  const byModule = inUs(summary.byModule);
  const busyUs = summary.busy * usPerRequest;
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
