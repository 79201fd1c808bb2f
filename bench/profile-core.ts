/**
 * Where a warm JIT turn's core time goes: `uhlp dev` run with `--cpu-prof`
 * under the dispatch benchmark's load (one shape), and the samples of the
 * measured seconds alone (not start-up, warm-up or shutdown) summed by
 * function and by module, self time, as shares of the core's busy samples.
 *
 *   npm run -s build && npx tsx bench/profile-core.ts [connections] [sandboxes] [concurrency] [seconds]
 *
 * Defaults: 1 1 1 8 (c1). The profile stays in the printed directory (open it in
 * Chrome's DevTools for the flame graph).
 */
import { mkdtempSync, readdirSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { writeHelloApp } from './lib/bench-app.js';
import { monotonicUs, summarizeProfile, topShares } from './lib/cpu-profile.js';
import { loadThroughCore } from './lib/dispatch-load.js';

const [connections = 1, sandboxes = 1, concurrency = 1, seconds = 8] = process.argv.slice(2).map(Number);
const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-core-profile-'));
const app = writeHelloApp(`minWarm: ${sandboxes}, maxSize: ${sandboxes}, concurrency: ${concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`);
const core = await startUhlpDev(app, ['--log-level', 'error'], 180_000, undefined, { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${dir}` });
// The profile's clock is the monotonic one, in microseconds: the window is read on the same clock.
let from = 0;
let to = 0;
let result;
try {
  from = monotonicUs();
  result = await loadThroughCore(core.url, '/bench/hello/{{id}}', connections, seconds * 1000, core.child.pid);
  to = monotonicUs();
} finally {
  await core.stop();
}
// The core's own profile is the largest (the std-body host and the sandboxes write theirs beside it).
const file = readdirSync(dir)
  .map((name) => path.join(dir, name))
  .sort((a, b) => statSync(b).size - statSync(a).size)[0]!;
// The load generator's warm-up is the first 1.5 s of loadThroughCore's window.
const summary = summarizeProfile(file, from + 1500_000, to);
process.stdout.write(
  `${JSON.stringify(result)}\nprofile ${file}: ${summary.busy} busy samples in the measured window\n\nself time by function\n${topShares(summary.byFunction, summary.busy, 30)}\n\nself time by module\n${topShares(summary.byModule, summary.busy, 20)}\n`,
);
