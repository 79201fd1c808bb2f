/**
 * System calls of a serving process and its descendants over a window, by
 * name, per unit of work: each process (its threads included) is traced with
 * `strace -c -f` while a load runs. Unlike CPU time, the counts do not move
 * with the machine's load, so two paths can be compared on a busy machine.
 * Needs strace (and ptrace allowed).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** The live descendants of `pid`. */
export function descendants(pid: number): number[] {
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

export function commandOf(pid: number): string {
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

export interface TracedProcess {
  readonly pid: number;
  readonly command: string;
  /** Calls by name per unit, those made at least once every two units. */
  readonly perUnit: Record<string, number>;
}

/** Starts tracing `pid` and its descendants; `stop(units)` ends it and divides each one's calls by `units`. */
export function startSyscallTrace(pid: number): { stop(units: number): Promise<TracedProcess[]> } {
  const traces = [pid, ...descendants(pid)].map((traced) => {
    const strace = spawn('strace', ['-c', '-f', '-p', String(traced)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let summary = '';
    strace.stderr.on('data', (chunk: Buffer) => (summary += chunk.toString()));
    return { pid: traced, command: commandOf(traced), strace, done: new Promise<string>((resolve) => strace.once('close', () => resolve(summary))) };
  });
  return {
    async stop(units) {
      for (const trace of traces) trace.strace.kill('SIGINT');
      const out: TracedProcess[] = [];
      for (const trace of traces) {
        const summary = await trace.done;
        const calls = callsOf(summary);
        const perUnit: Record<string, number> = {};
        for (const [name, count] of calls) if (count / Math.max(1, units) >= 0.5) perUnit[name] = Math.round((100 * count) / Math.max(1, units)) / 100;
        if (Object.keys(perUnit).length > 0) out.push({ pid: trace.pid, command: trace.command, perUnit });
        else if (calls.size === 0) process.stderr.write(`no summary for ${trace.pid}: ${summary.slice(0, 400)}\n`);
      }
      return out;
    },
  };
}

/**
 * Traces `pid` and its descendants for `seconds` (a load must run through the
 * window), then divides each one's calls by `units()`'s growth over the window.
 */
export async function countSyscalls(pid: number, seconds: number, units: () => number): Promise<TracedProcess[]> {
  const trace = startSyscallTrace(pid);
  // strace attaches in a few ms; the window starts once it surely has.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const from = units();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return trace.stop(units() - from);
}
