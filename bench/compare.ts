/**
 * Before/after in one run: the same benchmark on two trees (an older commit's
 * worktree beside this one, or one tree on two Node binaries), in interleaved
 * rounds, so that a noisy spell on a shared machine hits both sides.
 *
 *   tsx bench/compare.ts before=/work/wt/old after=. [--rounds 3]
 *   tsx bench/compare.ts node20=.:/usr/bin/node node24=.
 *
 * Each side is `name=tree[:node]`; the tree must be built (`npm run build`) and
 * installed for that Node. Every round runs `bench/run.ts` once in each tree in
 * turn, as a child process with that Node first on PATH and one round of its
 * own (BENCH_DISPATCH_ROUNDS=1, BENCH_QUEUE_ROUNDS=1); the other BENCH_*
 * variables (BENCH_ONLY, BENCH_SECONDS, BENCH_DRIVER=pod for the pod driver's
 * rows, ...) pass through. Prints JSON and a
 * table: each figure's median over the rounds, with every round's value.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { table } from './lib/load.js';

interface Side {
  readonly name: string;
  readonly tree: string;
  readonly node: string;
}

/** Figures read from one `bench/run.ts` report, by a stable name. */
type Figures = Record<string, number>;

function parseSides(args: readonly string[]): { sides: Side[]; rounds: number } {
  const sides: Side[] = [];
  let rounds = 3;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--rounds') {
      rounds = Number(args[++i]);
      continue;
    }
    const match = /^([\w.-]+)=([^:]+)(?::(.+))?$/.exec(arg);
    if (!match) throw new Error(`compare: expected name=tree[:node] or --rounds N, got "${arg}"`);
    sides.push({ name: match[1]!, tree: path.resolve(match[2]!), node: match[3] ?? process.execPath });
  }
  if (sides.length < 2) throw new Error('compare: name two sides, e.g. before=../old after=.');
  if (!(rounds >= 1)) throw new Error('compare: --rounds must be a positive number');
  return { sides, rounds };
}

/** One run of bench/run.ts in `side`'s tree; resolves with its JSON report. */
function runOnce(side: Side): Promise<Record<string, unknown>> {
  const env = {
    ...process.env,
    PATH: `${path.dirname(side.node)}${path.delimiter}${process.env.PATH ?? ''}`,
    BENCH_DISPATCH_ROUNDS: '1',
    BENCH_QUEUE_ROUNDS: '1',
  };
  const tsx = path.join(side.tree, 'node_modules', 'tsx', 'dist', 'cli.mjs');
  return new Promise((resolve, reject) => {
    const child = spawn(side.node, [tsx, path.join('bench', 'run.ts')], { cwd: side.tree, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => {
      const first = out.split('\n', 1)[0] ?? '';
      if (code !== 0 || !first.startsWith('{')) reject(new Error(`${side.name}: bench/run.ts exited ${code}\n${out.slice(0, 2000)}`));
      else resolve(JSON.parse(first) as Record<string, unknown>);
    });
  });
}

/** The figures a before/after claim is made of, from whichever parts the report has. */
export function figuresOf(report: Record<string, unknown>): Figures {
  const out: Figures = {};
  const put = (name: string, value: unknown): void => {
    if (typeof value === 'number' && Number.isFinite(value)) out[name] = value;
  };
  type Row = { path: string; connections: number; sandboxes: number; concurrency: number; result: Record<string, number> & { cpuMsPerRequest?: { core: number; sandboxes: number } } };
  const rows = (key: string, label: string): void => {
    for (const row of (report[key] as Row[] | undefined) ?? []) {
      const name = `${label} ${row.path} c${row.connections} ${row.sandboxes}x${row.concurrency}`;
      put(`${name} req/s`, row.result.rps);
      put(`${name} p50 ms`, row.result.p50Ms);
      put(`${name} p99 ms`, row.result.p99Ms);
      put(`${name} core cpu ms/req`, row.result.cpuMsPerRequest?.core);
      put(`${name} sandboxes cpu ms/req`, row.result.cpuMsPerRequest?.sandboxes);
      const cpu = row.result.cpuMsPerRequest;
      // An LLM turn's target is on the sum: the core's CPU and the orchestrator's.
      if (key === 'llmDispatch' && cpu !== undefined) put(`${name} cpu ms/turn (core + sandboxes)`, Math.round((cpu.core + cpu.sandboxes) * 1000) / 1000);
    }
  };
  rows('warmDispatch', 'dispatch');
  // The core against the bare forwarder of the same run (bench/lib/load.ts dispatchRatios).
  for (const [shape, ratio] of Object.entries((report.ratios as Record<string, { overForwarderP50?: number; overForwarderRps?: number; overForwarderCpu?: number }> | undefined) ?? {})) {
    put(`dispatch core/forwarder ${shape} p50`, ratio.overForwarderP50);
    put(`dispatch core/forwarder ${shape} req/s`, ratio.overForwarderRps);
    put(`dispatch core/forwarder ${shape} process cpu/req`, ratio.overForwarderCpu);
  }
  rows('llmDispatch', 'llm');
  rows('tracing', 'tracing');
  const csjs = report.csjs as
    | { warm: { csjs: { p50: number; p99: number }; jit: { p50: number }; overheadP50Ms: number }; firstCallOfNewVersion: { p50: number; p99: number }; firstRunInProcess: { p50: number } }
    | undefined;
  if (csjs) {
    put('csjs warm call p50 ms', csjs.warm.csjs.p50);
    put('csjs warm call p99 ms', csjs.warm.csjs.p99);
    put('csjs warm jit call p50 ms', csjs.warm.jit.p50);
    put('csjs warm overhead p50 ms', csjs.warm.overheadP50Ms);
    put('csjs first call of a new version p50 ms', csjs.firstCallOfNewVersion.p50);
    put('csjs first call of a new version p99 ms', csjs.firstCallOfNewVersion.p99);
    put('csjs first run in process p50 ms', csjs.firstRunInProcess.p50);
  }
  for (const row of (report.csjsCore as Array<{ path: string; result: { p50Ms: number; p99Ms: number; rps: number }; overJitP50Ms: number }> | undefined) ?? []) {
    put(`csjs through the core ${row.path} c1 p50 ms`, row.result.p50Ms);
    put(`csjs through the core ${row.path} c1 p99 ms`, row.result.p99Ms);
    if (row.path !== 'jit') put(`csjs through the core ${row.path} p50 over jit ms`, row.overJitP50Ms);
  }
  const python = report.python as
    | { warm: { python: { p50: number; p99: number }; node: { p50: number }; ratioP50: number }; miss: { pythonPoolMiss: { p50: number }; barePython: { p50: number }; ratioP50: number } }
    | undefined;
  if (python) {
    put('python warm call p50 ms', python.warm.python.p50);
    put('python warm call p99 ms', python.warm.python.p99);
    put('python warm node call p50 ms', python.warm.node.p50);
    put('python/node warm p50 ratio', python.warm.ratioP50);
    put('python pool miss p50 ms', python.miss.pythonPoolMiss.p50);
    put('python bare start p50 ms', python.miss.barePython.p50);
    put('python pool miss/bare start p50 ratio', python.miss.ratioP50);
  }
  type QueueRow = { path: string; result: { throughput: number; p50Ms: number; p99Ms: number; cpuMsPerMessage?: { core: number; sandboxes: number; bench: number } } };
  for (const row of (report.queue as QueueRow[] | undefined) ?? []) {
    const label = `queue ${row.path}`;
    put(`${label} msg/s`, row.result.throughput);
    put(`${label} p50 ms`, row.result.p50Ms);
    put(`${label} p99 ms`, row.result.p99Ms);
    put(`${label} consumer cpu ms/msg`, row.result.cpuMsPerMessage?.core);
    put(`${label} sandboxes cpu ms/msg`, row.result.cpuMsPerMessage?.sandboxes);
  }
  const ledger = report.ledger as
    | { dispatch: Array<{ mode: string; result: { rps: number; p50Ms: number; p99Ms: number } }>; verify: Array<{ threads: number; entriesPerSecond: number; peakMib: number }> }
    | undefined;
  for (const row of ledger?.dispatch ?? []) {
    put(`ledger ${row.mode} req/s`, row.result.rps);
    put(`ledger ${row.mode} p50 ms`, row.result.p50Ms);
    put(`ledger ${row.mode} p99 ms`, row.result.p99Ms);
  }
  for (const row of ledger?.verify ?? []) {
    put(`ledger verify --full ${row.threads} thread${row.threads === 1 ? '' : 's'} entries/s`, row.entriesPerSecond);
    put(`ledger verify --full ${row.threads} thread${row.threads === 1 ? '' : 's'} peak MiB`, row.peakMib);
  }
  type Latency = { p50Ms: number; p99Ms: number };
  const k8s = report.warmClaim as { core: Latency; direct: Latency; freshDirect?: Latency; claimPatch: Latency; breakdown?: Record<string, Latency> } | undefined;
  if (k8s) {
    put('k8s warm claim through the core p50 ms', k8s.core.p50Ms);
    put('k8s warm claim through the core p99 ms', k8s.core.p99Ms);
    for (const [part, stats] of Object.entries(k8s.breakdown ?? {})) {
      put(`k8s warm claim: ${part} p50 ms`, stats.p50Ms);
      put(`k8s warm claim: ${part} p99 ms`, stats.p99Ms);
    }
    put('k8s straight to a fresh pod, first request p50 ms', k8s.freshDirect?.p50Ms);
    put('k8s straight to a fresh pod, first request p99 ms', k8s.freshDirect?.p99Ms);
    put('k8s straight to a ready pod p50 ms', k8s.direct.p50Ms);
    put('k8s straight to a ready pod p99 ms', k8s.direct.p99Ms);
    put('k8s claim patch alone p50 ms', k8s.claimPatch.p50Ms);
    put('k8s claim patch alone p99 ms', k8s.claimPatch.p99Ms);
  }
  const miss = report.poolMiss as { core: { p50Ms: number }; bare: { p50Ms: number } } | undefined;
  if (miss) {
    put('k8s pool miss through the core p50 ms', miss.core.p50Ms);
    put('k8s bare pod create to first answer p50 ms', miss.bare.p50Ms);
  }
  const refill = report.refill as { poolMs: { p50Ms: number }; bareMs: { p50Ms: number } } | undefined;
  if (refill) {
    put('k8s refill 0 -> 10 Ready p50 ms', refill.poolMs.p50Ms);
    put('k8s 10 bare creates Ready p50 ms', refill.bareMs.p50Ms);
  }
  const workflow = report.workflow as
    | {
        perStepOverheadP50Ms?: number;
        cpuPerStep?: { overheadMs?: number; workflow?: { core?: number; sandboxes?: number }; direct?: { core?: number; sandboxes?: number } };
        mcpCall?: { p50Ms?: number; cpuMs?: number };
        aboveMcpFloor?: { p50Ms?: number; cpuMs?: number };
        firstByte?: {
          throughCore?: { p50Ms?: number };
          provider?: { p50Ms?: number };
          throughCoreBackToBack?: { p50Ms?: number };
          bareRelay?: { afterIdle?: { p50Ms?: number } };
          before?: { throughCore?: { p50Ms?: number }; throughCoreBackToBack?: { p50Ms?: number } };
        };
      }
    | undefined;
  if (workflow) {
    put('workflow overhead per step p50 ms', workflow.perStepOverheadP50Ms);
    put('workflow cpu added per step ms', workflow.cpuPerStep?.overheadMs);
    put('workflow core cpu per step ms', workflow.cpuPerStep?.workflow?.core);
    put('workflow sandboxes cpu per step ms', workflow.cpuPerStep?.workflow?.sandboxes);
    put('workflow direct core cpu per call ms', workflow.cpuPerStep?.direct?.core);
    put('workflow direct sandboxes cpu per call ms', workflow.cpuPerStep?.direct?.sandboxes);
    put('workflow floor: one MCP call p50 ms', workflow.mcpCall?.p50Ms);
    put('workflow floor: one MCP call cpu ms', workflow.mcpCall?.cpuMs);
    put('workflow above the floor per step p50 ms', workflow.aboveMcpFloor?.p50Ms);
    put('workflow above the floor per step cpu ms', workflow.aboveMcpFloor?.cpuMs);
    put('workflow first byte p50 ms', workflow.firstByte?.throughCore?.p50Ms);
    put('workflow provider first byte p50 ms', workflow.firstByte?.provider?.p50Ms);
    put('workflow first byte back to back p50 ms', workflow.firstByte?.throughCoreBackToBack?.p50Ms);
    put('workflow floor: first byte, same hops bare p50 ms', workflow.firstByte?.bareRelay?.afterIdle?.p50Ms);
    // BENCH_WORKFLOW_BEFORE's core, its runs interleaved with this tree's.
    put('workflow first byte p50 ms, BENCH_WORKFLOW_BEFORE core', workflow.firstByte?.before?.throughCore?.p50Ms);
    put('workflow first byte back to back p50 ms, BENCH_WORKFLOW_BEFORE core', workflow.firstByte?.before?.throughCoreBackToBack?.p50Ms);
  }
  const mcp = report.mcp as { rows: Array<{ path: string; round: number; result: { p50Ms: number; p99Ms: number } }>; coreCallOverFloorMs?: { p50: number } } | undefined;
  for (const path of new Set((mcp?.rows ?? []).map((row) => row.path))) {
    const p50s = mcp!.rows.filter((row) => row.path === path).map((row) => row.result.p50Ms).sort((a, b) => a - b);
    put(`mcp ${path} p50 ms`, p50s[Math.floor(p50s.length / 2)]);
  }
  put('mcp core.kv.get over a bare handler p50 ms', mcp?.coreCallOverFloorMs?.p50);
  const queueRatio = report.queueRatio as { throughput?: number; overOnceFloor?: number; addedP50Ms?: number; bareLoopCpuMs?: number; bareOnceLoopCpuMs?: number } | undefined;
  put('queue core/bare throughput ratio', queueRatio?.throughput);
  put('queue core/bare+once throughput ratio', queueRatio?.overOnceFloor);
  put('queue bare+once loop cpu ms/msg', queueRatio?.bareOnceLoopCpuMs);
  put('queue core p50 over bare ms', queueRatio?.addedP50Ms);
  put('queue bare loop cpu ms/msg', queueRatio?.bareLoopCpuMs);
  return out;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

const { sides, rounds } = parseSides(process.argv.slice(2));
const runs = new Map<string, Figures[]>(sides.map((side) => [side.name, []]));
const started = { cpus: os.cpus().length, loadAverage: os.loadavg(), at: new Date().toISOString() };
for (let round = 0; round < rounds; round++) {
  for (const side of sides) {
    process.stderr.write(`compare: round ${round + 1}/${rounds}, ${side.name} (${side.tree}, ${side.node})\n`);
    runs.get(side.name)!.push(figuresOf(await runOnce(side)));
  }
}

const names = [...new Set([...runs.values()].flatMap((list) => list.flatMap((figures) => Object.keys(figures))))];
const summary = names.map((figure) => {
  const row: Record<string, string | number> = { figure };
  for (const side of sides) {
    const values = runs.get(side.name)!.map((figures) => figures[figure]).filter((v): v is number => v !== undefined);
    row[side.name] = values.length > 0 ? median(values) : '-';
    row[`${side.name} rounds`] = values.join(' ');
  }
  return row;
});
const report = { machine: started, loadAverageAfter: os.loadavg(), rounds, sides, summary };
mkdirSync('bench/results', { recursive: true });
writeFileSync(`bench/results/compare-${Date.now()}.json`, JSON.stringify(report, null, 2));
process.stdout.write(`${JSON.stringify(report)}\n\n${table(summary)}\n`);
