/**
 * CPU time of a process and of everything it started (its sandboxes: bubblewrap
 * and the runners under it, the std-body host), read from /proc. On a shared
 * 2-core machine latencies move with the neighbours' load; the CPU a turn costs
 * moves far less, so the per-turn targets are checked on it.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks a second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
const TICKS_PER_SECOND = 100;

export interface ProcessTreeCpu {
  /** The process itself, all its threads (the ledger thread included), ms. */
  readonly selfMs: number;
  /** Its descendants alive now, ms. */
  readonly descendantsMs: number;
}

/** utime + stime of one process in ms, or undefined once it is gone. */
function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields are counted after its closing one.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
}

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/** The CPU `pid` and its live descendants have used so far. */
export function processTreeCpu(pid: number): ProcessTreeCpu {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const child = Number(entry);
    if (!Number.isInteger(child)) continue;
    const parent = parentOf(child);
    if (parent === undefined) continue;
    const list = children.get(parent);
    if (list === undefined) children.set(parent, [child]);
    else list.push(child);
  }
  let descendantsMs = 0;
  const queue = [...(children.get(pid) ?? [])];
  while (queue.length > 0) {
    const next = queue.pop()!;
    descendantsMs += cpuMsOf(next) ?? 0;
    queue.push(...(children.get(next) ?? []));
  }
  return { selfMs: cpuMsOf(pid) ?? 0, descendantsMs };
}

/** What a process tree used between two readings, per unit of work (a request, a step), ms. */
export function cpuPer(before: ProcessTreeCpu, after: ProcessTreeCpu, units: number): { core: number; sandboxes: number } {
  const per = (ms: number): number => Math.round((ms / Math.max(1, units)) * 1000) / 1000;
  return { core: per(after.selfMs - before.selfMs), sandboxes: per(after.descendantsMs - before.descendantsMs) };
}
