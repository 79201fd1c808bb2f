/**
 * CPU time of a process by thread, grouped by the thread's name
 * (/proc/<pid>/task/<tid>/comm): the core's main thread (`MainThread`), a
 * worker thread by the name it was started with (`uhlp-span-expor`, cut to 15
 * characters by the kernel), V8's platform threads (`V8Worker`: concurrent GC
 * and compilation) and libuv's pool. What tracing adds to a turn is split
 * between the event loop, the export worker and the collector this way.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second of /proc's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

/** utime + stime in ms of a /proc stat line. */
function statCpuMs(stat: string): number {
  // The command name (field 2) may hold spaces and parentheses: fields are counted after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** A reading of each live thread of `pid`, summed by thread name (threads that end meanwhile are left out). */
export function byThreadName<T>(pid: number, read: (taskDir: string) => T, add: (sum: T, one: T) => T): Map<string, T> {
  const out = new Map<string, T>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const dir = `/proc/${pid}/task/${tid}`;
      const name = readFileSync(`${dir}/comm`, 'utf8').trim();
      const one = read(dir);
      const sum = out.get(name);
      out.set(name, sum === undefined ? one : add(sum, one));
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** The CPU each named group of `pid`'s threads has used so far, ms (threads that ended are not counted). */
export function threadCpuByName(pid: number): Map<string, number> {
  return byThreadName(pid, (dir) => statCpuMs(readFileSync(`${dir}/stat`, 'utf8')), (a, b) => a + b);
}

/** utime + stime of one whole process in ms (all its threads), or undefined once it is gone. */
export function processCpuMs(pid: number): number | undefined {
  try {
    return statCpuMs(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** What each thread group used between two readings, per unit of work, ms. */
export function threadCpuPer(before: Map<string, number>, after: Map<string, number>, units: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, ms] of after) out[name] = Math.round(((ms - (before.get(name) ?? 0)) / Math.max(1, units)) * 1000) / 1000;
  return out;
}
