/**
 * How the kernel runs the plain path's threads: the core (`uhlp dev` with the
 * hello app) and the bare forwarder (bench/lib/bare-forwarder.ts) in turn under
 * the same load, interleaved for `rounds`, and for each thread group of the
 * serving process, per request: time on a CPU, time runnable but waiting for
 * one, and context switches (bench/lib/thread-sched.ts). A profile samples by
 * wall time, so a request thread preempted inside write() shows as time in
 * write(); its wait here says how much of that was the thread off its CPU.
 * No profiler runs: the figures are those of the process as served.
 *
 *   npm run -s build && npx tsx bench/plain-sched.ts [connections] [sandboxes] [concurrency] [seconds] [rounds]
 *
 * Defaults: 16 2 8 4 3 (the c16 2×8 shape). Prints JSON and a table of the
 * medians of the rounds.
 */
import { loadThroughCore } from './lib/dispatch-load.js';
import { serveHello } from './lib/hello-target.js';
import { table } from './lib/load.js';
import { median } from './lib/numbers.js';
import { threadSchedByName, threadSchedPer, type ThreadSched, type ThreadSchedPer } from './lib/thread-sched.js';

const [connections = 16, sandboxes = 2, concurrency = 8, seconds = 4, rounds = 3] = process.argv.slice(2).map(Number);

interface Round {
  readonly rps: number;
  readonly p50Ms: number;
  readonly threads: Record<string, ThreadSchedPer>;
}

async function measure(target: 'core' | 'forwarder'): Promise<Round> {
  const served = await serveHello(target, sandboxes, concurrency);
  try {
    let before = new Map<string, ThreadSched>();
    let after = new Map<string, ThreadSched>();
    const result = await loadThroughCore(served.url, served.path, connections, seconds * 1000, undefined, (phase) => {
      if (phase === 'measuring') before = threadSchedByName(served.pid);
      else after = threadSchedByName(served.pid);
    });
    return { rps: result.rps, p50Ms: result.p50Ms, threads: threadSchedPer(before, after, result.requests) };
  } finally {
    await served.stop();
  }
}

const byTarget: Record<'core' | 'forwarder', Round[]> = { core: [], forwarder: [] };
for (let round = 0; round < rounds; round++) {
  for (const target of ['forwarder', 'core'] as const) byTarget[target].push(await measure(target));
}

const rows: Array<Record<string, string | number>> = [];
const summary: Record<string, unknown> = {};
for (const [target, list] of Object.entries(byTarget)) {
  const names = [...new Set(list.flatMap((round) => Object.keys(round.threads)))];
  const threads: Record<string, ThreadSchedPer> = {};
  for (const name of names) {
    const of = (key: keyof ThreadSchedPer): number => median(list.map((round) => round.threads[name]?.[key] ?? 0));
    threads[name] = { runUs: of('runUs'), waitUs: of('waitUs'), voluntary: of('voluntary'), involuntary: of('involuntary') };
  }
  const rps = median(list.map((round) => round.rps));
  const p50Ms = median(list.map((round) => round.p50Ms));
  summary[target] = { rps, p50Ms, threads };
  for (const [name, t] of Object.entries(threads).sort((a, b) => b[1].runUs - a[1].runUs)) {
    if (t.runUs < 0.5 && t.waitUs < 0.5) continue;
    rows.push({ target, 'req/s': Math.round(rps), 'p50 ms': p50Ms, thread: name, 'run µs': t.runUs, 'wait µs': t.waitUs, 'vol sw': t.voluntary, 'invol sw': t.involuntary });
  }
}
process.stdout.write(`${JSON.stringify({ shape: { connections, sandboxes, concurrency }, seconds, rounds, ...summary })}\n\nper request, medians of ${rounds} interleaved rounds:\n${table(rows)}\n`);
