/**
 * `npm run bench`: runs the benchmarks side by side in one process and prints
 * JSON (for machines) and a table (for people). Ratios matter more than absolute
 * figures: the machines are noisy, so both sides of a comparison run back to back.
 *
 *   BENCH_SECONDS=5 npm run bench
 *
 * With BENCH_DRIVER=docker (or --docker; `npm run bench:docker`), the Docker
 * benchmarks of bench/docker-dispatch.ts instead: pool miss vs a bare start, warm
 * dispatch through the core vs direct to the same containers, refill vs bare
 * concurrent starts. BENCH_MISS_ROUNDS (10) and BENCH_REFILL_ROUNDS (3) set their repeats.
 *
 * Warm dispatch runs BENCH_DISPATCH_ROUNDS (3) rounds of every path and shape,
 * interleaved; each row shows the round with the median req/s, and lists all.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchDocker, dockerBenchTable } from './docker-dispatch.js';
import { dispatchRatios, dispatchTable } from './lib/load.js';
import { benchWarmDispatch } from './warm-dispatch.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const dispatchRounds = Number(process.env.BENCH_DISPATCH_ROUNDS ?? 3);
const machine = (): Record<string, unknown> => ({
  cpus: os.cpus().length,
  model: os.cpus()[0]?.model,
  node: process.version,
  loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  at: new Date().toISOString(),
});

if (process.env.BENCH_DRIVER === 'docker' || process.argv.includes('--docker')) await dockerBench();
else await processBench();

async function dockerBench(): Promise<void> {
  const before = machine();
  const docker = await benchDocker({
    missRounds: Number(process.env.BENCH_MISS_ROUNDS ?? 10),
    dispatchMs: seconds * 1000,
    dispatchRounds,
    refillRounds: Number(process.env.BENCH_REFILL_ROUNDS ?? 3),
  });
  const report = { driver: 'docker', machine: before, loadAverageAfter: machine().loadAverage, seconds, dispatchRounds, ...docker };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-docker-${Date.now()}.json`, JSON.stringify(report, null, 2));
  process.stdout.write(`${JSON.stringify(report)}\n\n${dockerBenchTable(docker)}`);
}

async function processBench(): Promise<void> {
  const dispatch = await benchWarmDispatch(seconds * 1000, dispatchRounds);
  const report = {
    machine: machine(),
    seconds,
    dispatchRounds,
    warmDispatch: dispatch,
    ratios: dispatchRatios(dispatch),
  };

  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-${Date.now()}.json`, JSON.stringify(report, null, 2));
  process.stdout.write(`${JSON.stringify(report)}\n\n`);
  process.stdout.write(
    `${dispatchTable(dispatch)}\n\ncore/direct: ${Object.entries(report.ratios)
      .map(([c, r]) => `${c} p50 x${r.p50} p99 x${r.p99} rps x${r.rps} (bare forwarder p50 x${r.forwarderP50})`)
      .join('; ')}\n`,
  );
}
