/**
 * `npm run bench`: runs the benchmarks side by side in one process and prints
 * JSON (for machines) and a table (for people). Ratios matter more than absolute
 * figures: the machines are noisy, so both sides of a comparison run back to back.
 *
 *   BENCH_SECONDS=5 npm run bench
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { table } from './lib/load.js';
import { benchWarmDispatch } from './warm-dispatch.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);

const dispatch = await benchWarmDispatch(seconds * 1000);
const ratio = (connections: number, key: 'p50Ms' | 'p99Ms' | 'rps'): number => {
  const core = dispatch.find((r) => r.path === 'core' && r.connections === connections)!.result[key];
  const direct = dispatch.find((r) => r.path === 'direct' && r.connections === connections)!.result[key];
  return Math.round((core / direct) * 100) / 100;
};

const report = {
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, at: new Date().toISOString() },
  seconds,
  warmDispatch: dispatch,
  ratios: Object.fromEntries([1, 16].map((c) => [`c${c}`, { p50: ratio(c, 'p50Ms'), p99: ratio(c, 'p99Ms'), rps: ratio(c, 'rps') }])),
};

mkdirSync('bench/results', { recursive: true });
writeFileSync(`bench/results/bench-${Date.now()}.json`, JSON.stringify(report, null, 2));
process.stdout.write(`${JSON.stringify(report)}\n\n`);
process.stdout.write(
  `${table(
    dispatch.map((r) => ({
      path: r.path,
      conns: r.connections,
      'req/s': r.result.rps,
      'p50 ms': r.result.p50Ms,
      'p90 ms': r.result.p90Ms,
      'p99 ms': r.result.p99Ms,
      errors: r.result.errors,
    })),
  )}\n\ncore/direct: ${Object.entries(report.ratios)
    .map(([c, r]) => `${c} p50 x${r.p50} p99 x${r.p99} rps x${r.rps}`)
    .join('; ')}\n`,
);
