/**
 * Where a warm LLM turn's CPU goes, in each process of its path: the core and
 * the llm-orchestrator (`uhlp dev` with the llm bench's app,
 * bench/llm-dispatch.ts), or the front and brain of the same hops between bare
 * processes (bench/lib/bare-stream-relay.ts), each run with `--cpu-prof` under
 * the same load. The samples of the measured window alone are summed by
 * function and by module, self time, as shares of each process's busy samples
 * and as µs a turn.
 *
 *   npm run -s build && npx tsx bench/profile-llm.ts core|hops [connections] [sandboxes] [concurrency] [seconds]
 *
 * Defaults: 1 1 1 8 (c1); the llm bench's c16 is 16 2 8. The profiles stay in
 * the printed directory (open them in Chrome's DevTools for the flame graphs).
 *
 * The orchestrator is not profiled: bubblewrap gives the runner an environment
 * of its own, so NODE_OPTIONS does not reach it; its CPU a turn is the load's
 * `cpuMsPerRequest.sandboxes`. V8 samples on a wall-clock timer: on a loaded
 * machine a thread descheduled in a system call (writev, a futex wake) gets the
 * samples of the time it waited, so read the JavaScript frames against each
 * other and the native ones with care.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reply, startOpenAiTestServer } from '../test/helpers/openai-test-server.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { ANSWER, llmApp } from './llm-dispatch.js';
import { monotonicUs, summarizeProfile, topShares } from './lib/cpu-profile.js';
import { startBareStreamRelay } from './lib/bare-stream-relay.js';
import { loadThroughCore } from './lib/dispatch-load.js';

const [mode = 'core', ...rest] = process.argv.slice(2);
if (mode !== 'core' && mode !== 'hops') throw new Error('usage: profile-llm.ts core|hops [connections] [sandboxes] [concurrency] [seconds]');
const [connections = 1, sandboxes = 1, concurrency = 1, seconds = 8] = rest.map(Number);
const INTERVAL_US = 250;
const dir = mkdtempSync(path.join(os.tmpdir(), `uhlp-llm-profile-${mode}-`));
const nodeOptions = `--cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${INTERVAL_US}`;

const llm = await startOpenAiTestServer({ record: false });
llm.handle(() => reply.text(ANSWER, { usage: { prompt: 12, completion: 6 } }));
// The load generator's warm-up is the first 1.5 s of loadThroughCore's window.
let from = 0;
let to = 0;
let result;
let mainPid: number;
try {
  if (mode === 'core') {
    const shape = { connections, sandboxes, concurrency };
    const core = await startUhlpDev(llmApp(shape), ['--log-level', 'error'], 180_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl, NODE_OPTIONS: nodeOptions });
    mainPid = core.child.pid!;
    try {
      from = monotonicUs() + 1_500_000;
      result = await loadThroughCore(core.url, '/bench/greet/{{id}}', connections, seconds * 1000, core.child.pid);
      to = monotonicUs();
    } finally {
      await core.stop();
    }
  } else {
    const saved = process.env['NODE_OPTIONS'];
    process.env['NODE_OPTIONS'] = nodeOptions;
    const bare = await startBareStreamRelay(llm.baseUrl);
    if (saved === undefined) delete process.env['NODE_OPTIONS'];
    else process.env['NODE_OPTIONS'] = saved;
    mainPid = bare.pid;
    try {
      from = monotonicUs() + 1_500_000;
      result = await loadThroughCore(bare.url, '/greet/{{id}}', connections, seconds * 1000, bare.pid);
      to = monotonicUs();
    } finally {
      await bare.close();
    }
  }
} finally {
  await llm.close();
}

// CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile: the main thread is thread 0.
let out = `${JSON.stringify(result)}\nprofiles in ${dir}\n`;
for (const name of readdirSync(dir).sort()) {
  const [, , , pid, thread] = name.split('.');
  const summary = summarizeProfile(path.join(dir, name), from, to);
  if (summary.busy === 0) continue;
  const urls = [...summary.urls].join(' ');
  const role =
    Number(pid) === mainPid ? (mode === 'core' ? 'core' : 'front') : urls.includes('llm-orchestrator') ? 'orchestrator' : urls.includes('bare-stream-relay') ? 'brain' : 'other';
  const turns = result.requests;
  const us = summary.busy * summary.intervalUs;
  out += `\n== ${role} (pid ${pid}, thread ${thread}): ${summary.busy} busy samples, ${(us / turns).toFixed(1)} µs a turn (sampled)\n`;
  out += `self time by function\n${topShares(summary.byFunction, summary.busy, 60, summary.intervalUs, turns)}\n`;
  out += `self time by module\n${topShares(summary.byModule, summary.busy, 30, summary.intervalUs, turns)}\n`;
}
process.stdout.write(out);
