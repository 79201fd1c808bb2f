/**
 * Turns/s of one, two and three cores on one shared state — a single redis-server
 * or a three-master Redis Cluster — and where the CPU went while they ran: each
 * core process's own CPU, its sandboxes', every Redis process's (INFO cpu of each
 * node, replicas included), and the whole machine's (/proc/stat), all per turn.
 * On a machine with fewer CPUs than processes the turns/s are bounded by the CPU
 * the cores get, so the split says more than the ratio (docs/scaling.md).
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { Redis } from 'ioredis';
import { startUhlpDev, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { nativeLoad } from './lib/native-load.js';
import { processTreeCpu } from './lib/process-cpu.js';

export interface CoreScaling {
  /** `one Redis` or `Cluster (3 masters)`. */
  readonly state: string;
  readonly cores: number;
  readonly rps: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly errors: number;
  /** Redis's CPU per turn, µs (every node of the state, replicas included), and its share of one CPU at this rate. */
  readonly redisCpuUsPerTurn: number;
  readonly redisCpuShare: number;
  /** Where the CPU went, per turn, ms: the core processes, their sandboxes, Redis, and the rest of the machine (the load generator, other work). */
  readonly cpuMsPerTurn: { readonly cores: number; readonly sandboxes: number; readonly redis: number; readonly rest: number };
  /** The machine's CPUs busy during the measurement, of how many. */
  readonly machineBusyCpus: number;
  readonly machineCpus: number;
}

/** The state the cores share: its URL and a client of each of its Redis processes (for INFO cpu). */
export interface SharedState {
  readonly name: string;
  readonly url: string;
  readonly nodes: readonly Redis[];
}

interface Reading {
  readonly redisCpuSeconds: number;
  readonly coresMs: number;
  readonly sandboxesMs: number;
  readonly machine: { busy: number; total: number };
}

/** Busy and total jiffies of the machine, from /proc/stat's first line. */
function machineTicks(): { busy: number; total: number } {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  const total = fields.reduce((a, b) => a + b, 0);
  // idle and iowait are the 4th and 5th fields.
  return { busy: total - fields[3]! - (fields[4] ?? 0), total };
}

async function redisCpuSeconds(nodes: readonly Redis[]): Promise<number> {
  const infos = await Promise.all(nodes.map((node) => node.info('cpu')));
  const field = (text: string, name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return infos.reduce((sum, text) => sum + field(text, 'used_cpu_sys') + field(text, 'used_cpu_user'), 0);
}

async function read(state: SharedState, cores: readonly UhlpProcess[]): Promise<Reading> {
  const trees = cores.map((core) => processTreeCpu(core.child.pid!));
  return {
    redisCpuSeconds: await redisCpuSeconds(state.nodes),
    coresMs: trees.reduce((sum, tree) => sum + tree.selfMs, 0),
    sandboxesMs: trees.reduce((sum, tree) => sum + tree.descendantsMs, 0),
    machine: machineTicks(),
  };
}

const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/**
 * Plain HTTP turns through one, two, three cores on `state` at once, 8
 * connections a core, `durationMs` each; the cores are started here with
 * `start` and stopped before returning.
 */
export async function scaleCores(state: SharedState, start: (url: string) => Promise<UhlpProcess>, durationMs: number, path: string): Promise<CoreScaling[]> {
  const cores: UhlpProcess[] = [];
  const out: CoreScaling[] = [];
  try {
    for (let n = 1; n <= 3; n++) {
      while (cores.length < n) cores.push(await start(state.url));
      let before: Promise<Reading> | undefined;
      let after: Promise<Reading> | undefined;
      const result = await nativeLoad({
        targets: cores.map((c) => `tcp:${new URL(c.url).host}`),
        connections: 8 * n,
        path,
        durationMs,
        onPhase: (phase) => {
          if (phase === 'measuring') before = read(state, cores);
          else after = read(state, cores);
        },
      });
      const [b, a] = [await before!, await after!];
      const turns = Math.max(1, result.requests);
      const redisSeconds = a.redisCpuSeconds - b.redisCpuSeconds;
      const ticks = a.machine.total - b.machine.total;
      const cpus = os.availableParallelism();
      // /proc/stat counts every CPU's jiffies: the busy ones over the interval, in CPU-seconds.
      const busySeconds = ((a.machine.busy - b.machine.busy) / Math.max(1, ticks)) * cpus * result.seconds;
      const coresMs = a.coresMs - b.coresMs;
      const sandboxesMs = a.sandboxesMs - b.sandboxesMs;
      const rest = busySeconds * 1000 - coresMs - sandboxesMs - redisSeconds * 1000;
      out.push({
        state: state.name,
        cores: n,
        rps: Math.round(result.rps),
        p50Ms: result.p50Ms,
        p99Ms: result.p99Ms,
        errors: result.errors,
        redisCpuUsPerTurn: round((redisSeconds / turns) * 1e6, 1),
        redisCpuShare: round(redisSeconds / result.seconds, 3),
        cpuMsPerTurn: { cores: round(coresMs / turns, 3), sandboxes: round(sandboxesMs / turns, 3), redis: round((redisSeconds * 1000) / turns, 3), rest: round(Math.max(0, rest) / turns, 3) },
        machineBusyCpus: round(busySeconds / result.seconds),
        machineCpus: cpus,
      });
    }
    return out;
  } finally {
    for (const core of cores) await core.stop();
  }
}

export function coreScalingTable(rows: readonly CoreScaling[]): string {
  const lines = ['state                cores  turns/s  p50 ms  p99 ms  errors  Redis µs/turn  Redis share  CPU ms/turn: cores  sandboxes  Redis  rest   busy CPUs'];
  for (const s of rows) {
    const c = s.cpuMsPerTurn;
    lines.push(
      `${s.state.padEnd(20)} ${String(s.cores).padStart(5)}  ${String(s.rps).padStart(7)}  ${String(s.p50Ms).padStart(6)}  ${String(s.p99Ms).padStart(6)}  ${String(s.errors).padStart(6)}  ${String(s.redisCpuUsPerTurn).padStart(13)}  ${String(s.redisCpuShare).padStart(11)}  ${String(c.cores).padStart(18)}  ${String(c.sandboxes).padStart(9)}  ${String(c.redis).padStart(5)}  ${String(c.rest).padStart(5)}  ${s.machineBusyCpus}/${s.machineCpus}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function startCore(definitions: string, env: Record<string, string>, startMs: number): (url: string) => Promise<UhlpProcess> {
  return (url) => startUhlpDev(definitions, ['--state', url, '--log-level', 'error'], startMs, undefined, env);
}
