/**
 * A closed-loop load generator: `connections` workers, each sending its next
 * request as soon as the previous one is answered, for a fixed time. Latencies
 * are measured per request with the monotonic clock.
 */
export interface LoadResult {
  requests: number;
  errors: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p90Ms: number;
  p99Ms: number;
  maxMs: number;
  /**
   * CPU a request cost, ms, over the measured time: the core process (all its
   * threads) and its sandboxes (every process it started). Only for paths
   * through a process whose pid is known: the core, and the bare forwarder
   * (its own process, its sandboxes its children, like the core's).
   */
  cpuMsPerRequest?: { core: number; sandboxes: number };
  /** The core's CPU a request by thread name (MainThread, uhlp-span-expor, V8Worker, …), ms; where a bench reads it (bench/lib/thread-cpu.ts). */
  cpuByThreadMsPerRequest?: Record<string, number>;
  /** A collector's process (Jaeger) CPU a request, ms; where a bench reads it. */
  collectorCpuMsPerRequest?: number;
}

/** One request; resolves true when the answer is the expected one. */
export type Send = (worker: number, sequence: number) => Promise<boolean>;

export async function runLoad(send: Send, connections: number, durationMs: number): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const deadline = started + durationMs;
  await Promise.all(
    Array.from({ length: connections }, async (_, worker) => {
      for (let sequence = 0; performance.now() < deadline; sequence++) {
        const t0 = performance.now();
        let ok = false;
        try {
          ok = await send(worker, sequence);
        } catch {
          ok = false;
        }
        if (ok) latencies.push(performance.now() - t0);
        else errors += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q: number): number => round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN);
  return {
    requests: latencies.length,
    errors,
    seconds: round(seconds),
    rps: Math.round(latencies.length / seconds),
    p50Ms: at(0.5),
    p90Ms: at(0.9),
    p99Ms: at(0.99),
    maxMs: round(latencies[latencies.length - 1] ?? NaN),
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** Prints rows as an aligned text table. */
export function table(rows: Array<Record<string, string | number>>): string {
  const columns = Object.keys(rows[0] ?? {});
  const widths = columns.map((c) => Math.max(c.length, ...rows.map((r) => String(r[c]).length)));
  const line = (cells: string[]): string => cells.map((cell, i) => cell.padEnd(widths[i]!)).join('  ');
  return [line(columns), line(widths.map((w) => '-'.repeat(w))), ...rows.map((r) => line(columns.map((c) => String(r[c]))))].join('\n');
}

/** How a warm-dispatch run is laid out: connections, and the sandboxes (each running `concurrency` at once) that serve them. */
export interface DispatchShape {
  readonly connections: number;
  readonly sandboxes: number;
  readonly concurrency: number;
}

/**
 * The shapes measured: one connection on one sandbox; 16 connections on 16
 * single-execution sandboxes; and 16 on two sandboxes of 8, one per core of the
 * 2-core machine the targets are set for.
 */
export const DISPATCH_SHAPES: readonly DispatchShape[] = [
  { connections: 1, sandboxes: 1, concurrency: 1 },
  { connections: 16, sandboxes: 16, concurrency: 1 },
  { connections: 16, sandboxes: 2, concurrency: 8 },
];

export function shapeLabel(shape: DispatchShape): string {
  return `c${shape.connections} ${shape.sandboxes}x${shape.concurrency}`;
}

export type DispatchPath = 'direct' | 'forwarder' | 'hops' | 'core-before' | 'core' | 'core-unisolated' | 'core-traced';
/** The order paths run in within a round, and are listed in. */
const PATH_ORDER: readonly DispatchPath[] = ['direct', 'forwarder', 'hops', 'core-before', 'core', 'core-unisolated', 'core-traced'];

/** One warm-dispatch measurement: a path, the shape it ran in, and what it did. */
export interface DispatchRow extends DispatchShape {
  /**
   * direct to the runners; through a bare forwarder (the floor of the core's design, bare-forwarder.ts);
   * an LLM turn's hops between bare processes (bare-stream-relay.ts); through the core; through the core
   * with process sandboxes unisolated (what their containment costs); through the core with every turn
   * traced and exported to a running Jaeger, and through another tree's core (BENCH_TRACING_BEFORE) (bench/tracing-dispatch.ts).
   */
  path: DispatchPath;
  /** The round with the median req/s: its figures stay together. */
  result: LoadResult;
  /** Every round, in the order run. */
  rounds: LoadResult[];
}

/**
 * Runs every path of every shape `rounds` times, the paths of a shape in turn
 * within each round, so that a noisy spell on a shared machine hits all of them
 * rather than one. Each row keeps the round with the median req/s.
 */
export async function measureDispatch(
  paths: Partial<Record<DispatchPath, (shape: DispatchShape) => Promise<LoadResult>>>,
  rounds: number,
  shapes: readonly DispatchShape[] = DISPATCH_SHAPES,
): Promise<DispatchRow[]> {
  const rows: DispatchRow[] = [];
  const measured = PATH_ORDER.filter((path) => paths[path] !== undefined);
  for (const shape of shapes) {
    const runs = new Map<DispatchPath, LoadResult[]>(measured.map((path) => [path, []]));
    for (let round = 0; round < rounds; round++) {
      for (const path of measured) runs.get(path)!.push(await paths[path]!(shape));
    }
    for (const path of measured) {
      const byRps = [...runs.get(path)!].sort((a, b) => a.rps - b.rps);
      rows.push({ path, ...shape, result: byRps[Math.floor((byRps.length - 1) / 2)]!, rounds: runs.get(path)! });
    }
  }
  return rows;
}

/** Warm-dispatch rows (core vs direct, per shape) as a table. */
export function dispatchTable(rows: readonly DispatchRow[]): string {
  return table(
    rows.map((r) => ({
      path: r.path,
      conns: r.connections,
      sandboxes: `${r.sandboxes}x${r.concurrency}`,
      'req/s': r.result.rps,
      'req/s of each round': r.rounds.map((round) => round.rps).join(' '),
      'p50 ms': r.result.p50Ms,
      'p90 ms': r.result.p90Ms,
      'p99 ms': r.result.p99Ms,
      errors: r.result.errors,
      ...(rows.some((row) => row.result.cpuMsPerRequest !== undefined) ? { 'cpu ms/req core+sandboxes': cpuCell(r.result) } : {}),
    })),
  );
}

function cpuCell(result: LoadResult): string {
  const cpu = result.cpuMsPerRequest;
  return cpu === undefined ? '-' : `${cpu.core} + ${cpu.sandboxes}`;
}

/**
 * Ratios to the direct path per shape, keyed `c16 2x8`: p50, p99 and req/s through the core, and p50 through the bare forwarder;
 * and the core's against the forwarder's: p50, req/s, and the CPU a request takes in the process itself (its sandboxes not counted).
 */
export function dispatchRatios(rows: readonly DispatchRow[]): Record<string, DispatchRatios> {
  const out: Record<string, DispatchRatios> = {};
  const find = (path: DispatchRow['path'], shape: DispatchShape): DispatchRow | undefined => rows.find((r) => r.path === path && shapeLabel(r) === shapeLabel(shape));
  for (const core of rows.filter((r) => r.path === 'core')) {
    const direct = find('direct', core);
    if (!direct) continue;
    const ratio = (row: DispatchRow, key: 'p50Ms' | 'p99Ms' | 'rps'): number => Math.round((row.result[key] / direct.result[key]) * 100) / 100;
    const forwarder = find('forwarder', core);
    const overForwarder = (key: 'p50Ms' | 'rps'): number => Math.round((core.result[key] / forwarder!.result[key]) * 100) / 100;
    const coreCpu = core.result.cpuMsPerRequest?.core;
    const forwarderCpu = forwarder?.result.cpuMsPerRequest?.core;
    out[shapeLabel(core)] = {
      p50: ratio(core, 'p50Ms'),
      p99: ratio(core, 'p99Ms'),
      rps: ratio(core, 'rps'),
      ...(forwarder ? { forwarderP50: ratio(forwarder, 'p50Ms'), overForwarderP50: overForwarder('p50Ms'), overForwarderRps: overForwarder('rps') } : {}),
      ...(coreCpu !== undefined && forwarderCpu !== undefined && forwarderCpu > 0 ? { overForwarderCpu: Math.round((coreCpu / forwarderCpu) * 100) / 100 } : {}),
    };
  }
  return out;
}

export interface DispatchRatios {
  readonly p50: number;
  readonly p99: number;
  readonly rps: number;
  readonly forwarderP50?: number;
  /** The core's p50 over the forwarder's (target <= 1.25). */
  readonly overForwarderP50?: number;
  /** The core's req/s over the forwarder's (target >= 0.8). */
  readonly overForwarderRps?: number;
  /** The core process's CPU per request over the forwarder process's. */
  readonly overForwarderCpu?: number;
}
