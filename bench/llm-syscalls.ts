/**
 * System calls a warm LLM turn makes, per process of its path: the core and
 * the llm-orchestrator (`uhlp dev` with the llm bench's app,
 * bench/llm-dispatch.ts), or the front and brain of the same hops between bare
 * processes (bench/lib/bare-stream-relay.ts). Each process (its threads
 * included) is traced with `strace -c -f` for a few seconds of a c1 load; the
 * calls are divided by the turns the OpenAI-compatible server answered in the
 * same window. Unlike CPU time, the counts do not move with the machine's
 * load, so the two paths can be compared on a busy machine.
 *
 *   npm run -s build && npx tsx bench/llm-syscalls.ts core|hops [seconds]
 *
 * Needs strace (and ptrace allowed). Prints JSON: per process, its command and
 * the calls a turn by name (those made at least once every two turns). The
 * reads, writes and stats are the turn's own; futex, epoll_pwait and mprotect
 * also count V8's background threads and the garbage collector, and move more.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { reply, startOpenAiTestServer } from '../test/helpers/openai-test-server.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { ANSWER, llmApp } from './llm-dispatch.js';
import { startBareStreamRelay } from './lib/bare-stream-relay.js';
import { loadThroughCore } from './lib/dispatch-load.js';

const [mode = 'core', secondsArg = '4'] = process.argv.slice(2);
if (mode !== 'core' && mode !== 'hops') throw new Error('usage: llm-syscalls.ts core|hops [seconds]');
const seconds = Number(secondsArg);

let turns = 0;
const llm = await startOpenAiTestServer({ record: false });
llm.handle(() => {
  turns++;
  return reply.text(ANSWER, { usage: { prompt: 12, completion: 6 } });
});

/** The live descendants of `pid`. */
function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const child = Number(entry);
    if (!Number.isInteger(child)) continue;
    try {
      const stat = readFileSync(`/proc/${child}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), child]);
    } catch {
      // Gone since the listing.
    }
  }
  const out: number[] = [];
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.shift()!;
    out.push(next);
    queue.push(...(children.get(next) ?? []));
  }
  return out;
}

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).map((arg) => arg.split('/').pop()).slice(0, 4).join(' ');
  } catch {
    return '';
  }
}

/** `strace -c` summary lines: `% time  seconds  usecs/call  calls  [errors]  syscall`. */
function callsOf(summary: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of summary.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 5 || !/^[\d.]+$/.test(fields[0]!) || !/^\d+$/.test(fields[3]!)) continue;
    calls.set(fields[fields.length - 1]!, Number(fields[3]));
  }
  return calls;
}

const shape = { connections: 1, sandboxes: 1, concurrency: 1 };
let target: { url: string; path: string; pid: number; stop: () => Promise<void> };
if (mode === 'core') {
  const core = await startUhlpDev(llmApp(shape), ['--log-level', 'error'], 180_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl });
  target = { url: core.url, path: '/bench/greet/{{id}}', pid: core.child.pid!, stop: async () => void (await core.stop()) };
} else {
  const bare = await startBareStreamRelay(llm.baseUrl);
  target = { url: bare.url, path: '/greet/{{id}}', pid: bare.pid, stop: () => bare.close() };
}
const report: Record<string, { command: string; perTurn: Record<string, number> }> = {};
try {
  // The load runs past the traced window on both sides.
  const load = loadThroughCore(target.url, target.path, 1, (seconds + 5) * 1000);
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const pids = [target.pid, ...descendants(target.pid)];
  const traces = pids.map((pid) => {
    const strace = spawn('strace', ['-c', '-f', '-p', String(pid)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let summary = '';
    strace.stderr.on('data', (chunk: Buffer) => (summary += chunk.toString()));
    return { pid, strace, done: new Promise<string>((resolve) => strace.once('exit', () => resolve(summary))) };
  });
  // strace attaches in a few ms; the window starts once it surely has.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const from = turns;
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const traced = turns - from;
  for (const trace of traces) trace.strace.kill('SIGINT');
  for (const trace of traces) {
    const calls = callsOf(await trace.done);
    const perTurn: Record<string, number> = {};
    for (const [name, count] of calls) if (count / traced >= 0.5) perTurn[name] = Math.round((100 * count) / traced) / 100;
    if (Object.keys(perTurn).length > 0) report[`${trace.pid === target.pid ? (mode === 'core' ? 'core' : 'front') : 'child'} ${trace.pid}`] = { command: commandOf(trace.pid), perTurn };
    else if (calls.size === 0) process.stderr.write(`no summary for ${trace.pid}: ${(await trace.done).slice(0, 400)}\n`);
  }
  await load;
  process.stdout.write(`${JSON.stringify({ mode, turns: traced, processes: report }, null, 2)}\n`);
} finally {
  await target.stop();
  await llm.close();
}
