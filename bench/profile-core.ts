/**
 * Where a warm JIT turn's core time goes: `uhlp dev` run with `--cpu-prof`
 * under the dispatch benchmark's load (one shape), and the samples of the
 * measured seconds alone (not start-up, warm-up or shutdown) summed by
 * function and by module, self time, as shares of the core's busy samples.
 *
 *   npm run -s build && npx tsx bench/profile-core.ts [core|forwarder] [connections] [sandboxes] [concurrency] [seconds]
 *
 * Defaults: core 1 1 1 8 (c1). `forwarder` profiles the bare forwarder
 * (bench/lib/bare-forwarder.ts, its own process with the same sandboxes) under
 * the same load instead: the frames the core has and the forwarder has not are
 * the core's own. The profile stays in the printed directory (open it in
 * Chrome's DevTools for the flame graph).
 */
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { writeHelloApp } from './lib/bench-app.js';
import { startBareForwarderProcess } from './lib/bare-forwarder.js';
import { loadThroughCore } from './lib/dispatch-load.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const args = process.argv.slice(2);
const target = args[0] === 'forwarder' || args[0] === 'core' ? args.shift()! : 'core';
const [connections = 1, sandboxes = 1, concurrency = 1, seconds = 8] = args.map(Number);
const dir = mkdtempSync(path.join(os.tmpdir(), `uhlp-${target}-profile-`));
const env = { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` };
const server =
  target === 'forwarder'
    ? await startBareForwarderProcess(sandboxes, concurrency, env).then((bare) => ({ url: bare.url, pid: bare.pid, path: '/hello/{{id}}', stop: () => bare.close() }))
    : await startUhlpDev(
        writeHelloApp(`minWarm: ${sandboxes}, maxSize: ${sandboxes}, concurrency: ${concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`),
        ['--log-level', 'error'],
        180_000,
        undefined,
        env,
      ).then((core) => ({ url: core.url, pid: core.child.pid, path: '/bench/hello/{{id}}', stop: () => core.stop() }));
// The profile's clock is the monotonic one, in microseconds: the window is read on the same clock.
let from = 0;
let to = 0;
let result;
try {
  from = Number(process.hrtime.bigint() / 1000n);
  result = await loadThroughCore(server.url, server.path, connections, seconds * 1000, server.pid);
  to = Number(process.hrtime.bigint() / 1000n);
} finally {
  await server.stop();
}
// The core's (the forwarder's) own profile is the largest (the std-body host and the sandboxes write theirs beside it).
const file = readdirSync(dir)
  .map((name) => path.join(dir, name))
  .sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const byFunction = new Map<string, number>();
const byModule = new Map<string, number>();
let busy = 0;
let at = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  at += profile.timeDeltas[i]!;
  // The load generator's warm-up is the first 1.5 s of loadThroughCore's window.
  if (at < from + 1500_000 || at > to) continue;
  const frame = byId.get(profile.samples[i]!)!.callFrame;
  if (frame.functionName === '(idle)') continue;
  busy += 1;
  const where = frame.url.replace(/^file:\/\/.*?\/(dist|src|bench|test|node_modules)\//, '$1/');
  const fn = `${frame.functionName || '(anonymous)'} ${where ? `${where}:${frame.lineNumber + 1}` : '(native)'}`;
  byFunction.set(fn, (byFunction.get(fn) ?? 0) + 1);
  const module = where || `(native) ${frame.functionName}`;
  byModule.set(module, (byModule.get(module) ?? 0) + 1);
}
const top = (counts: Map<string, number>, n: number): string =>
  [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, count]) => `${((100 * count) / busy).toFixed(1).padStart(5)} %  ${name}`)
    .join('\n');
process.stdout.write(
  `${JSON.stringify(result)}\nprofile ${file}: ${busy} busy samples in the measured window\n\nself time by function\n${top(byFunction, 45)}\n\nself time by module\n${top(byModule, 20)}\n`,
);
