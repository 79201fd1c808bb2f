/**
 * Where a warm JIT turn's core time goes: `uhlp dev` run with `--cpu-prof`
 * under the dispatch benchmark's load (one shape), and the samples of the
 * measured seconds alone summed by function and by module, self time, in µs a
 * request (bench/lib/core-profile.ts). The core gets this process's OTEL_*
 * variables (e.g. OTEL_EXPORTER_OTLP_ENDPOINT and OTEL_TRACES_SAMPLER=always_on
 * to profile a traced core).
 *
 *   npm run -s build && npx tsx bench/profile-core.ts [core|forwarder] [connections] [sandboxes] [concurrency] [seconds]
 *
 * `forwarder` profiles the bare forwarder (bench/lib/bare-forwarder.ts, its own
 * process with the same sandboxes) under the same load instead: the frames the
 * core has and the forwarder has not are the core's own.
 *
 * With PROFILE_TRACING=<rounds>, a core with tracing off and one with every
 * turn sampled and exported to the test Jaeger (scripts/jaeger-env.sh up) are
 * profiled in turn, `rounds` times each, and the self time tracing adds is
 * printed by function and by module (medians of the rounds), with the CPU a
 * request of the core's threads and of Jaeger's process.
 *
 * Defaults: core 1 1 1 8 (c1). The profiles stay in the printed directories (open
 * them in Chrome's DevTools for the flame graph).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { jaegerEnv } from '../test/helpers/jaeger.js';
import { profileCore, type CoreProfile } from './lib/core-profile.js';

const args = process.argv.slice(2);
const target = args[0] === 'forwarder' || args[0] === 'core' ? (args.shift() as 'core' | 'forwarder') : 'core';
const [connections = 1, sandboxes = 1, concurrency = 1, seconds = 8] = args.map(Number);
const shape = { connections, sandboxes, concurrency };
const rounds = Number(process.env.PROFILE_TRACING ?? 0);

const fmt = (us: number): string => us.toFixed(2).padStart(8);
const top = (counts: Map<string, number>, n: number): string =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, us]) => `${fmt(us)} µs  ${name}`)
    .join('\n');

if (rounds <= 0) {
  const otel = Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('OTEL_') && e[1] !== undefined));
  const profile = await profileCore({ target, shape, seconds, env: otel });
  process.stdout.write(
    `${JSON.stringify({ ...profile.result, threadsCpuMsPerRequest: profile.threads })}\nprofile ${profile.file}: ${profile.busyUs.toFixed(1)} µs busy a request in the measured window\n\n` +
      `self time by function, µs a request\n${top(profile.byFunction, 30)}\n\nself time by module, µs a request\n${top(profile.byModule, 20)}\n`,
  );
} else {
  const jaeger = jaegerEnv();
  const pidFile = path.join(process.env.UHLP_TEST_ENV_STATE ?? '/var/tmp/uhlp-test-env', 'jaeger.pid');
  const collectorPid = Number(readFileSync(pidFile, 'utf8').trim());
  const traced = { OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint, OTEL_TRACES_SAMPLER: 'always_on', OTEL_SERVICE_NAME: 'uhlp-bench' };
  const off: CoreProfile[] = [];
  const on: CoreProfile[] = [];
  for (let round = 0; round < rounds; round++) {
    off.push(await profileCore({ shape, seconds, collectorPid }));
    on.push(await profileCore({ shape, seconds, env: traced, collectorPid }));
  }
  const median = (values: number[]): number => {
    const sorted = [...values].sort((a, b) => a - b);
    const mid = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  };
  const medianOf = (profiles: CoreProfile[], pick: (p: CoreProfile) => Map<string, number>): Map<string, number> => {
    const keys = new Set(profiles.flatMap((p) => [...pick(p).keys()]));
    return new Map([...keys].map((key) => [key, median(profiles.map((p) => pick(p).get(key) ?? 0))]));
  };
  const diff = (pick: (p: CoreProfile) => Map<string, number>, n: number): string => {
    const a = medianOf(off, pick);
    const b = medianOf(on, pick);
    const keys = new Set([...a.keys(), ...b.keys()]);
    return [...keys]
      .map((key) => ({ key, off: a.get(key) ?? 0, on: b.get(key) ?? 0 }))
      .sort((x, y) => y.on - y.off - (x.on - x.off))
      .slice(0, n)
      .map((row) => `${fmt(row.on - row.off)} ${fmt(row.off)} ${fmt(row.on)}  ${row.key}`)
      .join('\n');
  };
  const threadNames = [...new Set([...off, ...on].flatMap((p) => Object.keys(p.threads)))].sort();
  const threadRow = (name: string): string => {
    const a = median(off.map((p) => p.threads[name] ?? 0)) * 1000;
    const b = median(on.map((p) => p.threads[name] ?? 0)) * 1000;
    return `${fmt(b - a)} ${fmt(a)} ${fmt(b)}  ${name}`;
  };
  const collector = (profiles: CoreProfile[]): number => median(profiles.map((p) => p.collectorMs ?? 0)) * 1000;
  const rps = (profiles: CoreProfile[]): number => Math.round(median(profiles.map((p) => p.result.rps)));
  process.stdout.write(
    `${JSON.stringify({ shape, seconds, rounds, rps: { off: rps(off), traced: rps(on) }, profiles: { off: off.map((p) => p.file), traced: on.map((p) => p.file) } })}\n` +
      `(profiled: req/s are the profiler's, not the bench's)\n\n` +
      `main thread busy, µs a request: off ${median(off.map((p) => p.busyUs)).toFixed(1)}, traced ${median(on.map((p) => p.busyUs)).toFixed(1)}\n\n` +
      `CPU a request by thread and of Jaeger, µs (added, off, traced)\n${threadNames.map(threadRow).join('\n')}\n${fmt(collector(on) - collector(off))} ${fmt(collector(off))} ${fmt(collector(on))}  jaeger (process)\n\n` +
      `self time tracing adds by function, µs a request (added, off, traced)\n${diff((p) => p.byFunction, 40)}\n\n` +
      `self time tracing adds by module, µs a request (added, off, traced)\n${diff((p) => p.byModule, 25)}\n`,
  );
}
