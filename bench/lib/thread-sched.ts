/**
 * How the kernel scheduled each thread of a process, grouped by thread name
 * like thread-cpu.ts: time on a CPU and time runnable but waiting for one
 * (/proc/<pid>/task/<tid>/schedstat, ns), and context switches, voluntary (the
 * thread waited for I/O or a lock) and involuntary (it was preempted). A
 * request thread that waits for a CPU inside a system call shows as time in
 * that call in a wall-clock profile; the wait here tells the two apart.
 */
import { readFileSync } from 'node:fs';
import { byThreadName } from './thread-cpu.js';

export interface ThreadSched {
  /** On a CPU, ns. */
  readonly runNs: number;
  /** Runnable, waiting for a CPU, ns. */
  readonly waitNs: number;
  readonly voluntary: number;
  readonly involuntary: number;
}

function readSched(dir: string): ThreadSched {
  const [run, wait] = readFileSync(`${dir}/schedstat`, 'utf8').trim().split(' ').map(Number);
  const status = readFileSync(`${dir}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { runNs: run ?? 0, waitNs: wait ?? 0, voluntary: field('voluntary_ctxt_switches'), involuntary: field('nonvoluntary_ctxt_switches') };
}

/** Each named group of `pid`'s threads so far (threads that ended are not counted). */
export function threadSchedByName(pid: number): Map<string, ThreadSched> {
  return byThreadName(pid, readSched, (a, b) => ({ runNs: a.runNs + b.runNs, waitNs: a.waitNs + b.waitNs, voluntary: a.voluntary + b.voluntary, involuntary: a.involuntary + b.involuntary }));
}

/** Per unit of work between two readings: run and wait in µs, switches as counts. */
export interface ThreadSchedPer {
  readonly runUs: number;
  readonly waitUs: number;
  readonly voluntary: number;
  readonly involuntary: number;
}

export function threadSchedPer(before: Map<string, ThreadSched>, after: Map<string, ThreadSched>, units: number): Record<string, ThreadSchedPer> {
  const out: Record<string, ThreadSchedPer> = {};
  const per = (value: number, digits: number): number => Math.round((value / Math.max(1, units)) * 10 ** digits) / 10 ** digits;
  for (const [name, now] of after) {
    const then = before.get(name) ?? { runNs: 0, waitNs: 0, voluntary: 0, involuntary: 0 };
    out[name] = {
      runUs: per((now.runNs - then.runNs) / 1000, 1),
      waitUs: per((now.waitNs - then.waitNs) / 1000, 1),
      voluntary: per(now.voluntary - then.voluntary, 3),
      involuntary: per(now.involuntary - then.involuntary, 3),
    };
  }
  return out;
}
