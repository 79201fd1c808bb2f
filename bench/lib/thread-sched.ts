/**
 * How the kernel scheduled each thread of a process, grouped by thread name
 * like thread-cpu.ts: time on a CPU and time runnable but waiting for one
 * (/proc/<pid>/task/<tid>/schedstat, ns), and context switches, voluntary (the
 * thread waited for I/O or a lock) and involuntary (it was preempted). A
 * request thread that waits for a CPU inside a system call shows as time in
 * that call in a wall-clock profile; the wait here tells the two apart.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ThreadSched {
  /** On a CPU, ns. */
  readonly runNs: number;
  /** Runnable, waiting for a CPU, ns. */
  readonly waitNs: number;
  readonly voluntary: number;
  readonly involuntary: number;
}

function readSched(pid: number, tid: string): ThreadSched {
  const [run, wait] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
  const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { runNs: run ?? 0, waitNs: wait ?? 0, voluntary: field('voluntary_ctxt_switches'), involuntary: field('nonvoluntary_ctxt_switches') };
}

/** Each named group of `pid`'s threads so far (threads that ended are not counted). */
export function threadSchedByName(pid: number): Map<string, ThreadSched> {
  const out = new Map<string, ThreadSched>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
      const sched = readSched(pid, tid);
      const sum = out.get(name);
      out.set(name, sum === undefined ? sched : { runNs: sum.runNs + sched.runNs, waitNs: sum.waitNs + sched.waitNs, voluntary: sum.voluntary + sched.voluntary, involuntary: sum.involuntary + sched.involuntary });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
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
