/**
 * `npm run bench`: runs the benchmarks side by side in one process and prints
 * JSON (for machines) and a table (for people). Ratios matter more than absolute
 * figures: the machines are noisy, so both sides of a comparison run back to back.
 *
 *   BENCH_SECONDS=5 npm run bench
 *
 * With BENCH_DRIVER=pod (or --k8s; `npm run bench:k8s`), the pod driver's benchmarks
 * of bench/k8s-dispatch.ts on the single-node cluster (scripts/k8s-node.sh up first):
 * BENCH_CLAIMS (20) warm claims, BENCH_DIRECT (50) requests to a ready pod, BENCH_FRESH (10)
 * first requests to fresh pods, BENCH_MISS_ROUNDS (5) and BENCH_REFILL_ROUNDS (2).
 *
 * With BENCH_DRIVER=docker (or --docker; `npm run bench:docker`), the Docker
 * benchmarks of bench/docker-dispatch.ts instead: pool miss vs a bare start, warm
 * dispatch through the core vs direct to the same containers, refill vs bare
 * concurrent starts. BENCH_MISS_ROUNDS (10) and BENCH_REFILL_ROUNDS (3) set their repeats.
 *
 * Warm dispatch runs BENCH_DISPATCH_ROUNDS (3) rounds of every path and shape,
 * interleaved; each row shows the round with the median req/s, and lists all.
 * The LLM benchmark (bench/llm-dispatch.ts) runs the same way; BENCH_ONLY=dispatch
 * or BENCH_ONLY=llm runs one of the two. BENCH_ONLY=csjs runs the cs-js benchmark
 * (bench/csjs-dispatch.ts): BENCH_CSJS_CALLS (2000) warm calls a side,
 * BENCH_CSJS_VERSIONS (100) new versions, BENCH_CSJS_IDLE (100) idle isolates; then
 * the same function through the core (bench/csjs-through-core.ts, on Redis) named by
 * `latest`, by an alias and by sha256 beside a plain JIT script, BENCH_SECONDS a row,
 * BENCH_DISPATCH_ROUNDS interleaved rounds (BENCH_ONLY=csjs-core runs these rows alone).
 *
 * The ledger benchmark (bench/ledger-dispatch.ts, BENCH_ONLY=ledger) runs warm
 * dispatch with `--ledger off`, `async`, `sync` and `fsync` side by side, with the
 * ledger bytes per request, and times `uhlp ledger verify --full` over
 * BENCH_LEDGER_VERIFY_ENTRIES (1000000; 0 skips it) generated entries.
 *
 * The queue benchmark (bench/queue-dispatch.ts, BENCH_ONLY=queue; it needs Redis,
 * UHLP_TEST_REDIS_URL or 127.0.0.1:6379) runs queue throughput and XADD-to-script
 * latency through the core beside a bare consumer-group loop on the same sandbox.
 * BENCH_QUEUE_MESSAGES (20000), BENCH_QUEUE_RATE (100 a second for BENCH_SECONDS),
 * BENCH_QUEUE_CONCURRENCY (8) and BENCH_QUEUE_ROUNDS (3) shape it; BENCH_QUEUE_BEFORE (a built
 * tree) adds that tree's core as one more side, for its CPU per message beside this one's.
 *
 * The workflow benchmark (bench/workflow-bench.ts) measures the engine's overhead
 * per step and the time to the first streamed byte, over BENCH_WORKFLOW_RUNS (20) runs.
 *
 * The python benchmark (bench/python-dispatch.ts, BENCH_ONLY=python) runs a warm call of
 * a Python script beside the same work as a Node script (BENCH_PYTHON_CALLS, 2000 a
 * side), and a python pool miss beside a bare Python start (BENCH_PYTHON_MISSES, 20).
 *
 * The MCP benchmark (bench/mcp-federation.ts, BENCH_ONLY=mcp) sets a federated tool call
 * through the core beside the same call straight to the server, and a core.* call of this
 * tree beside one of BENCH_MCP_BEFORE (a built tree of the commit before), when given.
 * The secrets benchmark (bench/secrets-dispatch.ts, BENCH_ONLY=secrets) sets a warm call whose
 * fetch carries an injected credential beside the same call to a path no credential matches.
 * The Redis capacity benchmark (bench/redis-capacity.ts, BENCH_ONLY=redis; it starts its own redis-server)
 * measures Redis commands, bytes and CPU and the core's CPU per turn of each kind (BENCH_REDIS_TURNS, 400;
 * BENCH_REDIS_CONCURRENCY, 4), then plain turns/s through one, two and three cores on one Redis (BENCH_SECONDS each).
 * BENCH_ONLY=dispatch,llm,csjs,ledger,queue,workflow,python,mcp,secrets,redis picks the parts (all by default).
 * BENCH_ONLY=tracing (never by default: it needs the test Jaeger, scripts/jaeger-env.sh up) runs the
 * warm dispatch with tracing off and with every turn sampled to Jaeger (bench/tracing-dispatch.ts).
 */
import { benchSecrets, secretsBenchTable } from './secrets-dispatch.js';
import { benchMcp, mcpBenchTable } from './mcp-federation.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { benchDocker, dockerBenchTable } from './docker-dispatch.js';
import { benchK8s, k8sBenchTable, writeK8sReport } from './k8s-dispatch.js';
import { dispatchRatios, dispatchTable, shapeLabel, type DispatchRow } from './lib/load.js';
import { benchLedger, ledgerBenchTables } from './ledger-dispatch.js';
import { benchLlmDispatch } from './llm-dispatch.js';
import { benchCsjs, csjsTable } from './csjs-dispatch.js';
import { benchCsjsThroughCore, csjsCoreTable } from './csjs-through-core.js';
import { benchPython, pythonTable } from './python-dispatch.js';
import { benchQueue, queueRatio, queueTable } from './queue-dispatch.js';
import { pathTargets, pathTargetsTable } from './lib/path-targets.js';
import { benchWarmDispatch } from './warm-dispatch.js';
import { benchTracing, tracingCost } from './tracing-dispatch.js';
import { benchWorkflow } from './workflow-bench.js';
import { benchRedisCapacity, redisCapacityTable } from './redis-capacity.js';

const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const dispatchRounds = Number(process.env.BENCH_DISPATCH_ROUNDS ?? 3);
const machine = (): Record<string, unknown> => ({
  cpus: os.cpus().length,
  model: os.cpus()[0]?.model,
  node: process.version,
  loadAverage: os.loadavg().map((l) => Math.round(l * 100) / 100),
  at: new Date().toISOString(),
});

if (process.env.BENCH_DRIVER === 'docker' || process.argv.includes('--docker')) await dockerBench();
else if (process.env.BENCH_DRIVER === 'pod' || process.argv.includes('--k8s')) await k8sBench();
else await processBench();

async function k8sBench(): Promise<void> {
  const before = machine();
  const k8s = await benchK8s({
    claims: Number(process.env.BENCH_CLAIMS ?? 20),
    direct: Number(process.env.BENCH_DIRECT ?? 50),
    missRounds: Number(process.env.BENCH_MISS_ROUNDS ?? 5),
    refillRounds: Number(process.env.BENCH_REFILL_ROUNDS ?? 2),
    fresh: Number(process.env.BENCH_FRESH ?? 10),
  });
  const report = { driver: 'pod', machine: before, loadAverageAfter: machine().loadAverage, ...k8s };
  writeK8sReport(report);
  process.stdout.write(`${JSON.stringify(report)}\n\n${k8sBenchTable(k8s)}`);
}

async function dockerBench(): Promise<void> {
  const before = machine();
  const docker = await benchDocker({
    missRounds: Number(process.env.BENCH_MISS_ROUNDS ?? 10),
    dispatchMs: seconds * 1000,
    dispatchRounds,
    refillRounds: Number(process.env.BENCH_REFILL_ROUNDS ?? 3),
  });
  const report = { driver: 'docker', machine: before, loadAverageAfter: machine().loadAverage, seconds, dispatchRounds, ...docker };
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-docker-${Date.now()}.json`, JSON.stringify(report, null, 2));
  process.stdout.write(`${JSON.stringify(report)}\n\n${dockerBenchTable(docker)}`);
}

async function processBench(): Promise<void> {
  const started = machine();
  const dispatch = only('dispatch') ? await benchWarmDispatch(seconds * 1000, dispatchRounds) : [];
  const llm = only('llm') ? await benchLlmDispatch(seconds * 1000, dispatchRounds) : [];
  const ledger = only('ledger') ? await benchLedger(seconds * 1000, dispatchRounds, Number(process.env.BENCH_LEDGER_VERIFY_ENTRIES ?? 1_000_000)) : undefined;
  const csjs = only('csjs')
    ? await benchCsjs({
        warmCalls: Number(process.env.BENCH_CSJS_CALLS ?? 2000),
        newVersions: Number(process.env.BENCH_CSJS_VERSIONS ?? 100),
        idleIsolates: Number(process.env.BENCH_CSJS_IDLE ?? 100),
      })
    : undefined;
  const csjsCore = only('csjs') || only('csjs-core') ? await benchCsjsThroughCore({ durationMs: seconds * 1000, rounds: dispatchRounds }) : [];
  const queue = only('queue')
    ? await benchQueue({
        messages: Number(process.env.BENCH_QUEUE_MESSAGES ?? 20000),
        rate: Number(process.env.BENCH_QUEUE_RATE ?? 100),
        latencyMs: seconds * 1000,
        concurrency: Number(process.env.BENCH_QUEUE_CONCURRENCY ?? 8),
        rounds: Number(process.env.BENCH_QUEUE_ROUNDS ?? 3),
        ...(process.env.BENCH_QUEUE_BEFORE ? { beforeTree: process.env.BENCH_QUEUE_BEFORE } : {}),
      })
    : [];
  const workflow = only('workflow') ? await benchWorkflow(Number(process.env.BENCH_WORKFLOW_RUNS ?? 20)) : undefined;
  // Named only: it needs the test Jaeger running (scripts/jaeger-env.sh up).
  const tracing = onlyNamed('tracing') ? await benchTracing(seconds * 1000, dispatchRounds) : undefined;
  const python = only('python')
    ? await benchPython({ warmCalls: Number(process.env.BENCH_PYTHON_CALLS ?? 2000), misses: Number(process.env.BENCH_PYTHON_MISSES ?? 20) })
    : undefined;
  const mcp = only('mcp') ? await benchMcp(seconds * 1000, dispatchRounds) : undefined;
  const secrets = only('secrets') ? await benchSecrets(seconds * 1000, dispatchRounds) : undefined;
  const redisCapacity = only('redis')
    ? await benchRedisCapacity({ turns: Number(process.env.BENCH_REDIS_TURNS ?? 400), concurrency: Number(process.env.BENCH_REDIS_CONCURRENCY ?? 4), durationMs: seconds * 1000 })
    : undefined;
  const report = {
    machine: started,
    loadAverageAfter: machine().loadAverage,
    seconds,
    dispatchRounds,
    warmDispatch: dispatch,
    ratios: dispatchRatios(dispatch),
    llmDispatch: llm,
    llmAddedMs: addedMs(llm),
    ...(csjs !== undefined ? { csjs } : {}),
    ...(csjsCore.length > 0 ? { csjsCore } : {}),
    queue,
    queueRatio: queueRatio(queue),
    ...(ledger ? { ledger } : {}),
    ...(workflow !== undefined ? { workflow } : {}),
    ...(python !== undefined ? { python } : {}),
    ...(mcp !== undefined ? { mcp } : {}),
    ...(secrets !== undefined ? { secrets } : {}),
    ...(redisCapacity !== undefined ? { redisCapacity } : {}),
    ...(tracing !== undefined ? { tracing, tracingCost: tracingCost(tracing) } : {}),
  };

  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-${Date.now()}.json`, JSON.stringify(report, null, 2));
  process.stdout.write(`${JSON.stringify(report)}\n`);
  if (dispatch.length > 0) {
    process.stdout.write(
      `\nWarm dispatch of a JIT component\n${dispatchTable(dispatch)}\n\ncore/direct: ${Object.entries(report.ratios)
        .map(([c, r]) => `${c} p50 x${r.p50} p99 x${r.p99} rps x${r.rps} (bare forwarder p50 x${r.forwarderP50})`)
        .join('; ')}\ncore/forwarder: ${Object.entries(report.ratios)
        .map(([c, r]) => `${c} p50 x${r.overForwarderP50 ?? '-'} rps x${r.overForwarderRps ?? '-'} process CPU/req x${r.overForwarderCpu ?? '-'}`)
        .join('; ')} (targets: c1 p50 <= x1.25, c16 rps >= x0.8)\n`,
    );
  }
  if (llm.length > 0) {
    process.stdout.write(
      `\nAn LLM component through the core vs the same completion sent to the server\n${dispatchTable(llm)}\n\ncore - direct: ${Object.entries(report.llmAddedMs)
        .map(([c, r]) => `${c} p50 +${r.p50} ms (target <= 1 ms), p99 +${r.p99} ms`)
        .join('; ')}\nCPU per turn, core + orchestrator: ${llm
        .filter((r) => r.path === 'core' && r.result.cpuMsPerRequest !== undefined)
        .map((r) => `${shapeLabel(r)} ${cpuPerTurn(r)} ms`)
        .join('; ')} (target <= 0.5 ms); the floor, a bare relay sending the same completion (path forwarder): ${llm
        .filter((r) => r.path === 'forwarder' && r.result.cpuMsPerRequest !== undefined)
        .map((r) => `${shapeLabel(r)} ${cpuPerTurn(r)} ms`)
        .join('; ')}; the same hops between bare processes (path hops): ${llm
        .filter((r) => r.path === 'hops' && r.result.cpuMsPerRequest !== undefined)
        .map((r) => `${shapeLabel(r)} ${cpuPerTurn(r)} ms`)
        .join('; ')}\n`,
    );
  }
  if (ledger) process.stdout.write(`\n${ledgerBenchTables(ledger)}`);
  if (csjs !== undefined) process.stdout.write(`\ncs-js bundle vs the same function as a plain JIT script\n${csjsTable(csjs)}\n`);
  if (csjsCore.length > 0) process.stdout.write(`\ncs-js components through the core (Redis store) vs a plain JIT script, c1, ${dispatchRounds} interleaved rounds\n${csjsCoreTable(csjsCore)}\n`);
  if (python !== undefined) process.stdout.write(`\nA Python script vs the same work as a Node script; a python pool miss vs a bare Python start\n${pythonTable(python)}\n`);
  if (queue.length > 0) {
    process.stdout.write(`\nQueue delivery on Redis Streams through the core vs a bare consumer-group loop on the same sandbox\n${queueTable(queue)}\n`);
  }
  if (mcp !== undefined) process.stdout.write(`\nMCP: a federated tool through the core vs straight to the server; a core.* call before and after the SDK move\n${mcpBenchTable(mcp)}`);
  if (secrets !== undefined) process.stdout.write(`\nA warm call whose fetch carries an injected credential vs the same call without one, ${dispatchRounds} interleaved rounds\n${secretsBenchTable(secrets)}`);
  if (redisCapacity !== undefined) process.stdout.write(`\nRedis per turn of each kind (one core, its own redis-server), and turns/s of one, two, three cores on one Redis and on a three-master Cluster\n${redisCapacityTable(redisCapacity)}`);
  if (workflow !== undefined) {
    const { workflow20, direct20, firstByte } = workflow;
    process.stdout.write(
      `\nWorkflow engine (${workflow.runs} runs)\n` +
        `20 no-op JIT steps in a workflow: p50 ${workflow20.p50Ms} ms, p90 ${workflow20.p90Ms} ms\n` +
        `20 direct JIT calls:              p50 ${direct20.p50Ms} ms, p90 ${direct20.p90Ms} ms\n` +
        `overhead per step (p50):          ${workflow.perStepOverheadP50Ms} ms (target <= 0.5 ms); a JIT step's invoke in the trace p50 ${workflow.jitStepInTrace.p50Ms} ms\n` +
        `CPU per step, core + sandboxes:   workflow ${workflow.cpuPerStep.workflow.core} + ${workflow.cpuPerStep.workflow.sandboxes} ms, direct ${workflow.cpuPerStep.direct.core} + ${workflow.cpuPerStep.direct.sandboxes} ms: the engine adds ${workflow.cpuPerStep.overheadMs} ms\n` +
        `floor, one MCP call from a sandbox (20 in a JIT script, p50 ${workflow.mcp20.p50Ms} ms): ${workflow.mcpCall.p50Ms} ms, CPU ${workflow.mcpCall.cpuMs} ms; the engine above it per step: ${workflow.aboveMcpFloor.p50Ms} ms, CPU ${workflow.aboveMcpFloor.cpuMs} ms\n` +
        `first streamed byte: through the core p50 ${firstByte.throughCore.p50Ms} ms, the provider's own p50 ${firstByte.provider.p50Ms} ms (target: provider + 2 ms; its whole answer p50 ${firstByte.providerWholeAnswer.p50Ms} ms)\n` +
        `  right after another run (no idle gap): p50 ${firstByte.throughCoreBackToBack?.p50Ms} ms\n` +
        (firstByte.bareRelay !== undefined
          ? `  floor, the same hops between bare processes (client, front, brain, provider): p50 ${firstByte.bareRelay.afterIdle.p50Ms} ms, back to back ${firstByte.bareRelay.backToBack.p50Ms} ms\n`
          : '') +
        (firstByte.before !== undefined
          ? `  BENCH_WORKFLOW_BEFORE's core, its runs interleaved with these: p50 ${firstByte.before.throughCore.p50Ms} ms, back to back ${firstByte.before.throughCoreBackToBack.p50Ms} ms\n`
          : ''),
    );
  }
  if (tracing !== undefined) {
    process.stdout.write(
      `\nTracing: off vs every turn sampled and exported to Jaeger, ${dispatchRounds} interleaved rounds\n${dispatchTable(tracing)}\n\ntraced/off: ${Object.entries(tracingCost(tracing))
        .map(
          ([shape, cost]) =>
            `${shape} req/s x${cost.rpsRatio}, core CPU +${cost.addedCoreCpuMs ?? '-'} ms/req` +
            (cost.addedCpuSplitMs !== undefined ? ` (${Object.entries(cost.addedCpuSplitMs).map(([where, ms]) => `${where} ${ms >= 0 ? '+' : ''}${ms}`).join(', ')})` : ''),
        )
        .join('; ')} (target: c16 >= x0.9)\n`,
    );
  }
  const targets = pathTargets(report);
  if (targets.length > 0) process.stdout.write(`\nEvery path against its floor and target (the warm pod claim: npm run bench:k8s)\n${pathTargetsTable(targets)}\n`);
}

/** A benchmark that runs only when BENCH_ONLY names it (it needs a service the others do not). */
function onlyNamed(name: string): boolean {
  return (process.env.BENCH_ONLY ?? '').split(',').map((w) => w.trim()).includes(name);
}

/** Which process benchmarks run: BENCH_ONLY=dispatch,llm,csjs,ledger,queue,workflow,python,mcp,secrets,redis (all by default). */
function only(name: string): boolean {
  const wanted = process.env.BENCH_ONLY;
  return wanted === undefined || wanted === '' || wanted.split(',').map((w) => w.trim()).includes(name);
}

/** What the core adds to the direct path, per shape, in ms. */
/** CPU a request cost, the process measured and everything it started, ms. */
function cpuPerTurn(row: DispatchRow): number {
  return Math.round((row.result.cpuMsPerRequest!.core + row.result.cpuMsPerRequest!.sandboxes) * 1000) / 1000;
}

function addedMs(rows: readonly DispatchRow[]): Record<string, { p50: number; p99: number }> {
  const out: Record<string, { p50: number; p99: number }> = {};
  for (const core of rows.filter((r) => r.path === 'core')) {
    const direct = rows.find((r) => r.path === 'direct' && shapeLabel(r) === shapeLabel(core));
    if (direct === undefined) continue;
    const diff = (key: 'p50Ms' | 'p99Ms'): number => Math.round((core.result[key] - direct.result[key]) * 1000) / 1000;
    out[shapeLabel(core)] = { p50: diff('p50Ms'), p99: diff('p99Ms') };
  }
  return out;
}
