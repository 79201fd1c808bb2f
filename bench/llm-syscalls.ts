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
import { reply, startOpenAiTestServer } from '../test/helpers/openai-test-server.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { ANSWER, llmApp } from './llm-dispatch.js';
import { startBareStreamRelay } from './lib/bare-stream-relay.js';
import { loadThroughCore } from './lib/dispatch-load.js';
import { countSyscalls } from './lib/syscall-count.js';

const [mode = 'core', secondsArg = '4'] = process.argv.slice(2);
if (mode !== 'core' && mode !== 'hops') throw new Error('usage: llm-syscalls.ts core|hops [seconds]');
const seconds = Number(secondsArg);

let turns = 0;
const llm = await startOpenAiTestServer({ record: false });
llm.handle(() => {
  turns++;
  return reply.text(ANSWER, { usage: { prompt: 12, completion: 6 } });
});

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
  for (const traced of await countSyscalls(target.pid, seconds, () => turns)) {
    const role = traced.pid === target.pid ? (mode === 'core' ? 'core' : 'front') : 'child';
    report[`${role} ${traced.pid}`] = { command: traced.command, perTurn: traced.perUnit };
  }
  await load;
  process.stdout.write(`${JSON.stringify({ mode, processes: report }, null, 2)}\n`);
} finally {
  await target.stop();
  await llm.close();
}
