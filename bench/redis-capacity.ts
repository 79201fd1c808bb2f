/**
 * What a turn costs Redis, per kind, and how turns/s grow with cores on one Redis: the
 * figures of docs/scaling.md's capacity model (BENCH_ONLY=redis).
 *
 * Each kind runs BENCH_REDIS_TURNS (400) turns, BENCH_REDIS_CONCURRENCY (4) at a time,
 * through one core on a fresh redis-server of its own (appendonly, fsync every second,
 * as a production master), and reads Redis's `INFO commandstats`, `INFO stats` (network
 * bytes in and out, and each command's `usec`: its execution alone, the lower bound of
 * Redis's time a turn) and `INFO cpu` (the upper bound) before and after, less what the idle core does in the
 * same time (delivery readers, lease renewals: measured first, per second), and the
 * core's CPU (its process, not its sandboxes). Kinds: a plain HTTP turn, the same turn
 * continuing a session, a once-only request (Idempotency-Key), a queue message (the
 * bench's XADD is subtracted: what remains is the delivery's turn), an LLM call with a
 * daily token budget, missing and hitting the answer cache.
 *
 * A session turn is the plain turn sent with the `X-UHLP-Session-ID` of a stored
 * session (opened once with `X-UHLP-Session: new`). A workflow step is the
 * difference between a run of six no-op JIT steps and a run of one, over five:
 * what one more step costs, the run's own start and end left out (those are the
 * `workflow run (1 step)` row).
 *
 * Then plain HTTP turns through one, two and three cores on one Redis, and on a
 * three-master Redis Cluster, at once (BENCH_SECONDS each; redis-core-scaling.ts),
 * with where the CPU went: where the installation's ceiling is.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { RedisServerProcess } from '../test/helpers/redis-server-process.js';
import { RedisClusterTopology } from '../test/helpers/redis-cluster-topology.js';
import { startUhlpDev, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { RuntimeKeys } from '../src/state/runtime-keys.js';
import { writeBenchApp } from './lib/bench-app.js';
import { processTreeCpu } from './lib/process-cpu.js';
import { coreScalingTable, scaleCores, startCore, type CoreScaling } from './redis-core-scaling.js';

const APP = `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools:
    - { name: p, minWarm: 2, maxSize: 2, concurrency: 8, maxUses: 100000000, limits: { timeoutMs: 5000 } }
    - { name: brain, runner: llm, minWarm: 1, maxSize: 1, maxUses: 100000000, limits: { timeoutMs: 30000 } }
  components:
    - { id: hello, handler: JIT, pool: p, jit: { script: scripts/cap.mjs, function: hello } }
    - { id: once, handler: JIT, pool: p, jit: { script: scripts/cap.mjs, function: hello } }
    - { id: ask, handler: JIT, pool: p, jit: { script: scripts/cap.mjs, function: ask } }
    - { id: work, handler: JIT, pool: p, jit: { script: scripts/cap.mjs, function: hello } }
    - { id: noop, handler: JIT, pool: p, jit: { script: scripts/cap.mjs, function: noop } }
    - { id: one, handler: WORKFLOW, pool: brain, workflow: { workflowId: one } }
    - { id: six, handler: WORKFLOW, pool: brain, workflow: { workflowId: six } }
  routes:
    - { http: { method: GET, path: /hello/:name }, component: hello }
    - { http: { method: POST, path: /once }, component: once }
    - { http: { method: GET, path: /ask/:n }, component: ask }
    - { queue: { name: jobs }, component: work }
    - { http: { method: POST, path: /one }, component: one }
    - { http: { method: POST, path: /six }, component: six }
  capabilities:
    llm: { models: [small], maxTokens: 64, tokensPerDay: 100000000 }
`;

/** A core's start on a busy two-core machine can take most of a minute (the sandbox driver's probe). */
const START_MS = 180_000;

/** A workflow of `steps` no-op JIT steps, one after the other. */
function workflowOf(steps: number): string {
  const nodes = Array.from({ length: steps }, (_, i) => `  s${i}: { type: jit, component: noop, inputs_map: { n: input.n }, output: out.s${i}, next: ${i + 1 < steps ? `s${i + 1}` : 'done'} }`);
  return `start: s0\nnodes:\n${nodes.join('\n')}\n  done: { type: end, output: out.s0 }\n`;
}

/** Steps of the longer workflow: a step's cost is (six - one) / (WORKFLOW_STEPS - 1). */
const WORKFLOW_STEPS = 6;

const SCRIPT = `export const hello = () => ({ hello: 'world' });
export const noop = () => null;
export async function ask(event, ctx) {
  const answer = await ctx.tools.call('core.llm.generate', { prompt: 'question ' + event.httpDetails.pathParameters.n, temperature: 0, cacheTtlSeconds: 300 });
  return { answer: answer.text };
}
`;

/** What Redis did between two readings, per turn. */
export interface RedisCost {
  readonly kind: string;
  readonly turns: number;
  /** Commands per turn, all, and by command (calls). */
  readonly commandsPerTurn: number;
  readonly byCommand: Record<string, number>;
  /** Bytes per turn Redis read from and wrote to its clients. */
  readonly bytesInPerTurn: number;
  readonly bytesOutPerTurn: number;
  /** Redis's CPU per turn, µs (INFO cpu: the process's whole CPU, its event loop and cron too, less the idle core's: an upper bound). */
  readonly redisCpuUsPerTurn: number;
  /** The time Redis spent running the turn's commands, µs (INFO commandstats `usec`: execution alone, no I/O; a lower bound). */
  readonly commandUsPerTurn: number;
  /** The core's own CPU per turn (not its sandboxes), ms. */
  readonly coreCpuMsPerTurn: number;
}

export interface RedisCapacityReport {
  readonly idleCommandsPerSecond: number;
  readonly kinds: RedisCost[];
  /** One, two, three cores on one Redis, then on a three-master Cluster. */
  readonly scaling: CoreScaling[];
}

interface Reading {
  readonly at: number;
  readonly calls: Map<string, number>;
  /** Microseconds spent in each command so far. */
  readonly usec: Map<string, number>;
  readonly bytesIn: number;
  readonly bytesOut: number;
  readonly cpuSeconds: number;
  readonly coreCpuMs: number;
}

async function read(redis: Redis, corePid: number | undefined): Promise<Reading> {
  const [commandstats, stats, cpu] = await Promise.all([redis.info('commandstats'), redis.info('stats'), redis.info('cpu')]);
  const calls = new Map<string, number>();
  const usec = new Map<string, number>();
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    calls.set(match[1]!, Number(match[2]));
    usec.set(match[1]!, Number(match[3]));
  }
  const field = (text: string, name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1] ?? 0);
  return {
    at: performance.now(),
    calls,
    usec,
    bytesIn: field(stats, 'total_net_input_bytes'),
    bytesOut: field(stats, 'total_net_output_bytes'),
    cpuSeconds: field(cpu, 'used_cpu_sys') + field(cpu, 'used_cpu_user'),
    coreCpuMs: corePid !== undefined ? processTreeCpu(corePid).selfMs : 0,
  };
}

/** Commands between two readings, without the reading's own INFO calls. */
function delta(before: Reading, after: Reading): Map<string, number> {
  const out = new Map<string, number>();
  for (const [name, calls] of after.calls) {
    const n = calls - (before.calls.get(name) ?? 0) - (name === 'info' ? 3 : 0);
    if (n > 0) out.set(name, n);
  }
  return out;
}

/** Microseconds of command execution between two readings, without the readings' own INFO. */
function usecDelta(before: Reading, after: Reading): number {
  let total = 0;
  for (const [name, usec] of after.usec) if (name !== 'info') total += usec - (before.usec.get(name) ?? 0);
  return total;
}

const round = (n: number, digits = 2): number => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs `turns` calls of `one`, `concurrency` at a time. */
async function drive(turns: number, concurrency: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < turns) await one(next++);
    }),
  );
}

async function ok(response: Response): Promise<Response> {
  await response.arrayBuffer();
  if (response.status !== 200) throw new Error(`${response.url}: ${response.status}`);
  return response;
}

async function deliveries(core: UhlpProcess): Promise<number> {
  const text = await (await fetch(`${core.url}/metrics`)).text();
  return [...text.matchAll(/^uhlp_deliveries_total\{[^}]*outcome="ok"[^}]*\} (\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

export async function benchRedisCapacity(options: { turns: number; concurrency: number; durationMs: number }): Promise<RedisCapacityReport> {
  const server = await RedisServerProcess.create();
  await server.start();
  const redis = new Redis(server.url);
  await redis.config('SET', 'appendfsync', 'everysec');
  const definitions = writeBenchApp(APP, { 'scripts/cap.mjs': SCRIPT, 'workflows/one.yaml': workflowOf(1), 'workflows/six.yaml': workflowOf(WORKFLOW_STEPS) });
  const answers = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-llm-')), 'answers.yaml');
  writeFileSync(answers, 'answers: []\ndefault: { answer: "forty-two" }\n');
  const prefix = 'uhlp:';
  const env = { UHLP_STATE_PREFIX: prefix, UHLP_LLM_SCRIPT_FILE: answers };
  const cores: UhlpProcess[] = [];
  try {
    cores.push(await startUhlpDev(definitions, ['--state', server.url, '--log-level', 'error'], START_MS, undefined, env));
    const core = cores[0]!;
    const base = `${core.url}/bench`;
    const pid = core.child.pid;
    // Warm: pools, scripts, the LLM path, the queue's consumer group.
    for (let i = 0; i < 20; i++) await ok(await fetch(`${base}/hello/w`));
    await ok(await fetch(`${base}/ask/warm`));
    const post = (route: string): Promise<Response> => fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"n":1}' });
    for (let i = 0; i < 3; i++) await ok(await post('/six'));

    // The idle core's own commands, per second.
    const idleBefore = await read(redis, pid);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const idleAfter = await read(redis, pid);
    const idleSeconds = (idleAfter.at - idleBefore.at) / 1000;
    const idle = delta(idleBefore, idleAfter);
    const idleRate = new Map([...idle].map(([name, n]) => [name, n / idleSeconds]));
    const idleBytesIn = (idleAfter.bytesIn - idleBefore.bytesIn) / idleSeconds;
    const idleBytesOut = (idleAfter.bytesOut - idleBefore.bytesOut) / idleSeconds;
    const idleCpu = (idleAfter.cpuSeconds - idleBefore.cpuSeconds) / idleSeconds;
    const idleCoreCpu = (idleAfter.coreCpuMs - idleBefore.coreCpuMs) / idleSeconds;
    const idleUsec = usecDelta(idleBefore, idleAfter) / idleSeconds;

    const measure = async (kind: string, turns: number, run: () => Promise<void>, less: Record<string, number> = {}): Promise<RedisCost> => {
      const before = await read(redis, pid);
      await run();
      const after = await read(redis, pid);
      const seconds = (after.at - before.at) / 1000;
      const byCommand: Record<string, number> = {};
      let total = 0;
      for (const [name, n] of delta(before, after)) {
        const net = n - (idleRate.get(name) ?? 0) * seconds - (less[name] ?? 0) * turns;
        if (net / turns >= 0.005) {
          byCommand[name] = round(net / turns);
          total += net;
        }
      }
      return {
        kind,
        turns,
        commandsPerTurn: round(total / turns),
        byCommand,
        bytesInPerTurn: Math.round((after.bytesIn - before.bytesIn - idleBytesIn * seconds) / turns),
        bytesOutPerTurn: Math.round((after.bytesOut - before.bytesOut - idleBytesOut * seconds) / turns),
        redisCpuUsPerTurn: round(((after.cpuSeconds - before.cpuSeconds - idleCpu * seconds) / turns) * 1e6, 1),
        commandUsPerTurn: round((usecDelta(before, after) - idleUsec * seconds) / turns, 1),
        coreCpuMsPerTurn: round((after.coreCpuMs - before.coreCpuMs - idleCoreCpu * seconds) / turns, 3),
      };
    };

    const { turns, concurrency } = options;
    const kinds: RedisCost[] = [];
    kinds.push(await measure('http', turns, () => drive(turns, concurrency, async () => void (await ok(await fetch(`${base}/hello/x`))))));
    const first = await ok(await fetch(`${base}/hello/s`, { headers: { 'x-uhlp-session': 'new' } }));
    const session = first.headers.get('x-uhlp-session-id');
    if (!session) throw new Error('X-UHLP-Session: new answered no X-UHLP-Session-ID');
    kinds.push(
      await measure('session turn', turns, () => drive(turns, concurrency, async () => void (await ok(await fetch(`${base}/hello/s`, { headers: { 'x-uhlp-session-id': session } }))))),
    );
    const run = Date.now().toString(36);
    kinds.push(
      await measure('once-only', turns, () =>
        drive(turns, concurrency, async (i) => void (await ok(await fetch(`${base}/once`, { method: 'POST', body: 'x', headers: { 'Idempotency-Key': `${run}-${i}` } })))),
      ),
    );
    // Queue messages published here (one XADD each, subtracted), then delivered by the core.
    const stream = new RuntimeKeys(prefix).deliveryStream('queue', 'bench', 'jobs');
    const delivered = await deliveries(core);
    kinds.push(
      await measure(
        'queue delivery',
        turns,
        async () => {
          const pipeline = redis.pipeline();
          for (let i = 0; i < turns; i++) pipeline.xadd(stream, '*', 'payload', JSON.stringify({ i }));
          await pipeline.exec();
          const deadline = Date.now() + 120_000;
          while ((await deliveries(core)) < delivered + turns) {
            if (Date.now() > deadline) throw new Error('the queue messages were not all delivered within 120 s');
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        },
        { xadd: 1 },
      ),
    );
    kinds.push(await measure('llm (cache miss, budget)', turns, () => drive(turns, concurrency, async (i) => void (await ok(await fetch(`${base}/ask/${run}-${i}`))))));
    kinds.push(await measure('llm (cache hit)', turns, () => drive(turns, concurrency, async () => void (await ok(await fetch(`${base}/ask/same`))))));

    // Workflow runs are slower than turns: a quarter as many runs.
    const runs = Math.max(10, Math.round(turns / 4));
    const oneStep = await measure('workflow run (1 step)', runs, () => drive(runs, concurrency, async () => void (await ok(await post('/one')))));
    const sixSteps = await measure(`workflow run (${WORKFLOW_STEPS} steps)`, runs, () => drive(runs, concurrency, async () => void (await ok(await post('/six')))));
    kinds.push(oneStep, sixSteps, stepOf(oneStep, sixSteps, WORKFLOW_STEPS - 1));

    // Shown as soon as measured: the scaling below starts two more cores, which a loaded machine may refuse.
    const idleCommandsPerSecond = round([...idleRate.values()].reduce((a, b) => a + b, 0), 1);
    process.stderr.write(`redis capacity, per kind:\n${redisCapacityTable({ idleCommandsPerSecond, kinds, scaling: [] })}`);
    // One, two, three cores on the one Redis, then on a three-master Cluster: plain HTTP turns through all of them at once.
    for (const core of cores.splice(0)) await core.stop();
    const start = startCore(definitions, env, START_MS);
    const scaling = await scaleCores({ name: 'one Redis', url: server.url, nodes: [redis] }, start, options.durationMs, '/bench/hello/{{id}}');
    process.stderr.write(coreScalingTable(scaling));
    const cluster = await RedisClusterTopology.start();
    const nodes = cluster.ports.map((port) => cluster.client(port));
    try {
      // As a production master does (the topology's nodes fsync every write, for the failover tests).
      await Promise.all(nodes.map((node) => node.config('SET', 'appendfsync', 'everysec')));
      scaling.push(...(await scaleCores({ name: 'Cluster (3 masters)', url: cluster.url, nodes }, start, options.durationMs, '/bench/hello/{{id}}')));
    } finally {
      for (const node of nodes) node.disconnect();
      await cluster.stop();
    }
    return { idleCommandsPerSecond, kinds, scaling };
  } finally {
    for (const core of cores) await core.stop();
    redis.disconnect();
    await server.destroy();
  }
}

/** What one more step of a run costs: the difference between a run of `more + 1` steps and a run of one, over `more`. */
function stepOf(one: RedisCost, longer: RedisCost, more: number): RedisCost {
  const byCommand: Record<string, number> = {};
  for (const name of new Set([...Object.keys(one.byCommand), ...Object.keys(longer.byCommand)])) {
    const n = round(((longer.byCommand[name] ?? 0) - (one.byCommand[name] ?? 0)) / more);
    if (n >= 0.01) byCommand[name] = n;
  }
  return {
    kind: 'workflow step',
    turns: longer.turns * more,
    commandsPerTurn: round((longer.commandsPerTurn - one.commandsPerTurn) / more),
    byCommand,
    bytesInPerTurn: Math.round((longer.bytesInPerTurn - one.bytesInPerTurn) / more),
    bytesOutPerTurn: Math.round((longer.bytesOutPerTurn - one.bytesOutPerTurn) / more),
    redisCpuUsPerTurn: round((longer.redisCpuUsPerTurn - one.redisCpuUsPerTurn) / more, 1),
    commandUsPerTurn: round((longer.commandUsPerTurn - one.commandUsPerTurn) / more, 1),
    coreCpuMsPerTurn: round((longer.coreCpuMsPerTurn - one.coreCpuMsPerTurn) / more, 3),
  };
}

export function redisCapacityTable(report: RedisCapacityReport): string {
  const lines = [
    `idle core: ${report.idleCommandsPerSecond} Redis commands/s`,
    'kind                       turns  cmds/turn  bytes in/out per turn  Redis CPU µs/turn  command µs/turn  core CPU ms/turn  commands',
  ];
  for (const k of report.kinds) {
    const top = Object.entries(k.byCommand)
      .sort((a, b) => b[1] - a[1])
      .map(([name, n]) => `${name} ${n}`)
      .join(', ');
    lines.push(
      `${k.kind.padEnd(26)} ${String(k.turns).padStart(5)}  ${String(k.commandsPerTurn).padStart(9)}  ${`${k.bytesInPerTurn}/${k.bytesOutPerTurn}`.padStart(21)}  ${String(k.redisCpuUsPerTurn).padStart(17)}  ${String(k.commandUsPerTurn).padStart(15)}  ${String(k.coreCpuMsPerTurn).padStart(16)}  ${top}`,
    );
  }
  if (report.scaling.length > 0) lines.push('', coreScalingTable(report.scaling).trimEnd());
  return `${lines.join('\n')}\n`;
}
