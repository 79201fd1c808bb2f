/**
 * System calls a warm plain HTTP → JIT turn makes, per process of its path:
 * the core (`uhlp dev` with the hello app) and the bare forwarder
 * (bench/lib/bare-forwarder.ts), each with its sandboxes, under the same load
 * (bench/lib/syscall-count.ts: strace over the load's measured window, divided
 * by the requests answered in it). The counts do not move with the machine's
 * load, so the core's calls beyond the forwarder's are read on a busy machine.
 *
 *   npm run -s build && npx tsx bench/plain-syscalls.ts [connections] [sandboxes] [concurrency] [seconds]
 *
 * Defaults: 1 1 1 4. strace slows every call it sees: the counts hold, the
 * rates of such a run do not. Needs strace (and ptrace allowed).
 */
import { loadThroughCore } from './lib/dispatch-load.js';
import { serveHello } from './lib/hello-target.js';
import { startSyscallTrace, type TracedProcess } from './lib/syscall-count.js';

const [connections = 1, sandboxes = 1, concurrency = 1, seconds = 4] = process.argv.slice(2).map(Number);

async function traced(target: 'core' | 'forwarder'): Promise<TracedProcess[]> {
  const served = await serveHello(target, sandboxes, concurrency);
  try {
    let trace: ReturnType<typeof startSyscallTrace> | undefined;
    const result = await loadThroughCore(served.url, served.path, connections, seconds * 1000, undefined, (phase) => {
      if (phase === 'measuring') trace = startSyscallTrace(served.pid);
    });
    return await trace!.stop(result.requests);
  } finally {
    await served.stop();
  }
}

const report: Record<string, Array<{ pid: number; command: string; perRequest: Record<string, number> }>> = {};
for (const target of ['forwarder', 'core'] as const) {
  report[target] = (await traced(target)).map((one) => ({ pid: one.pid, command: one.command, perRequest: one.perUnit }));
}
process.stdout.write(`${JSON.stringify({ shape: { connections, sandboxes, concurrency }, seconds, ...report }, null, 2)}\n`);
const line = (calls: Record<string, number>): string =>
  Object.entries(calls)
    .sort((a, b) => b[1] - a[1])
    .map(([name, n]) => `${name} ${n}`)
    .join(', ');
for (const [target, processes] of Object.entries(report)) {
  process.stdout.write(`\n${target}, calls a request:\n`);
  for (const one of processes) process.stdout.write(`  ${one.command.slice(0, 40).padEnd(40)}  ${line(one.perRequest)}\n`);
}
