/**
 * Queue delivery: messages XADDed to a queue's stream on Redis and run by a JIT
 * component, through the core (`uhlp dev --state redis://`: consumer group ->
 * turn pipeline with once-only runs, ledger, metrics -> sandbox) and through a
 * bare consumer-group loop (XREADGROUP -> POST /execute on the same kind of
 * sandbox -> XACK + XDEL, nothing else), side by side; and the bare loop again
 * with the once-only record's Redis work as the core does it (`bare+once`): the
 * claims of one read's messages in one script before they run, and each
 * completion in the group commit that acknowledges its message (one
 * queue-settle script for the successes of one turn of the event loop,
 * src/sources/ack-batch.ts): the floor of the same work a delivery through the
 * core does.
 *
 * Both sides run one sandbox with the same concurrency and the same script, and
 * read with the same number of messages in flight. Two phases each:
 *
 * - throughput: BENCH_QUEUE_MESSAGES (20000) messages XADDed at once, timed from the
 *   first XADD until the stream is empty (every message settled): about two
 *   seconds a side here, long enough that one scheduling hiccup of this shared
 *   machine does not decide a round (5000 took half a second, and the bare
 *   side's rounds spread by a third);
 * - latency: BENCH_QUEUE_RATE (100) messages a second for BENCH_SECONDS, each
 *   carrying the time it was XADDed; the script takes its arrival time, so the
 *   figures are XADD-to-script (p50/p99), read back from the script afterwards.
 *
 * BENCH_QUEUE_ROUNDS (3) rounds of both sides, interleaved; each row is the round
 * with the median throughput, and lists all rounds.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import type { ExecuteRequest } from '../src/contract/execute-contract.js';
import { SandboxClient } from '../src/sandbox/sandbox-client.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../test/helpers/redis-url.js';
import { makeProcessDriver } from '../test/helpers/process-driver.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { SUITE_REVISION, suitePool } from '../test/sandbox/driver-suite.js';
import { loadLuaScripts } from '../src/state/lua-scripts.js';
import { RuntimeKeys } from '../src/state/runtime-keys.js';
import { AckBatch } from '../src/sources/ack-batch.js';
import { writeBenchApp } from './lib/bench-app.js';
import { processTreeCpu } from './lib/process-cpu.js';
import { round3 } from './lib/numbers.js';

export interface QueueBenchOptions {
  /** Messages of the throughput phase. */
  readonly messages: number;
  /** Messages a second of the latency phase. */
  readonly rate: number;
  /** Length of the latency phase. */
  readonly latencyMs: number;
  /** Messages in flight at once: the route's concurrency, and the sandbox's. */
  readonly concurrency: number;
  readonly rounds: number;
  /**
   * A built tree (`npm ci && npm run build` there) whose core runs as one more
   * side, `core-before`, in the same interleaved rounds: its CPU per message
   * beside this tree's, which bench/compare.ts cannot give (each of its sides
   * runs its own tree's bench). @defaultValue none
   */
  readonly beforeTree?: string;
}

export interface QueueResult {
  readonly messages: number;
  readonly seconds: number;
  /** Messages settled a second in the throughput phase. */
  readonly throughput: number;
  /** XADD-to-script latency in the latency phase, ms. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  /** Messages the script saw in the latency phase (all of them, or the side lost some). */
  readonly latencySamples: number;
  /**
   * CPU per message in the throughput phase, ms: the core process (on the bare
   * side, the bench process: its loop and the producer, which the core side's
   * `bench` figure is alone), the sandboxes, the bench process, and the Redis
   * server (every side's stream and records live there: its one thread is
   * shared by the producer and the consumer).
   */
  readonly cpuMsPerMessage: { readonly core: number; readonly sandboxes: number; readonly bench: number; readonly redis: number };
}

export interface QueueRow {
  readonly path: QueuePath;
  readonly concurrency: number;
  readonly result: QueueResult;
  readonly rounds: QueueResult[];
}

/** Records each message's XADD-to-arrival time; `stats` hands them over and starts afresh. */
const SCRIPT = `const seen = [];
export const work = (event) => {
  const arrived = performance.timeOrigin + performance.now();
  seen.push(arrived - event.queueDetails.payload.sentAt);
  return { ok: true };
};
export const stats = () => ({ latencies: seen.splice(0) });
`;

/**
 * The sides: through the core; the bare loop; and the bare loop doing the
 * once-only record's Redis work that every delivery through the core does (its
 * claim with its read's, before the run; its answer completed with the
 * acknowledgement; both batched as the core batches them): the floor of the
 * same work with nothing of uhlp in between.
 */
export type QueuePath = 'core' | 'bare' | 'bare+once' | 'core-before';

/** One side under test: the stream it reads, and its script's latencies. */
interface Side {
  readonly stream: string;
  /** The CPU its consumer (the core, or the bench process for the bare loop) and its sandboxes used so far, ms. */
  cpu(): { consumerMs: number; sandboxesMs: number };
  /** The latencies the script recorded since the last call. */
  latencies(): Promise<number[]>;
  close(): Promise<void>;
}

export async function benchQueue(options: QueueBenchOptions): Promise<QueueRow[]> {
  const redis = new Redis(TEST_REDIS_URL);
  const results: Record<QueuePath, QueueResult[]> = { core: [], bare: [], 'bare+once': [], 'core-before': [] };
  const paths: QueuePath[] = ['bare', 'bare+once', 'core', ...(options.beforeTree ? (['core-before'] as const) : [])];
  try {
    for (let round = 0; round < options.rounds; round++) {
      for (const which of paths) {
        const prefix = uniqueKeyPrefix('bench-queue');
        const side =
          which === 'core' || which === 'core-before'
            ? await coreSide(prefix, options.concurrency, which === 'core-before' ? path.join(options.beforeTree!, 'bin', 'uhlp.js') : undefined)
            : await bareSide(redis, prefix, options.concurrency, which === 'bare+once');
        try {
          results[which].push(await measure(redis, side, options));
        } finally {
          await side.close();
          await dropPrefix(redis, prefix);
        }
      }
    }
  } finally {
    redis.disconnect();
  }
  return (['core', 'bare', 'bare+once', 'core-before'] as const).filter((which) => results[which].length > 0).map((which) => {
    const rounds = results[which];
    const sorted = [...rounds].sort((a, b) => a.throughput - b.throughput);
    return { path: which, concurrency: options.concurrency, result: sorted[Math.floor(sorted.length / 2)]!, rounds };
  });
}

async function measure(redis: Redis, side: Side, options: QueueBenchOptions): Promise<QueueResult> {
  // Warm up (the script loaded, connections open), then start from a clean slate.
  await produce(redis, side.stream, 200);
  await drained(redis, side.stream, 30_000);
  await side.latencies();

  const redisPid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const redisBefore = processTreeCpu(redisPid).selfMs;
  const cpuBefore = side.cpu();
  const benchBefore = process.cpuUsage();
  const started = performance.now();
  await produce(redis, side.stream, options.messages);
  await drained(redis, side.stream, 120_000);
  const seconds = (performance.now() - started) / 1000;
  const benchUsed = process.cpuUsage(benchBefore);
  const cpuAfter = side.cpu();
  const redisUsed = processTreeCpu(redisPid).selfMs - redisBefore;
  await side.latencies();
  const per = (ms: number): number => round3(ms / options.messages);

  const sent = await paced(redis, side.stream, options.rate, options.latencyMs);
  await drained(redis, side.stream, 30_000);
  const latencies = (await side.latencies()).sort((a, b) => a - b);
  const at = (q: number): number => round3(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN);
  if (latencies.length !== sent) throw new Error(`the script saw ${latencies.length} of ${sent} messages`);
  return {
    messages: options.messages,
    seconds: round3(seconds),
    throughput: Math.round(options.messages / seconds),
    p50Ms: at(0.5),
    p99Ms: at(0.99),
    maxMs: round3(latencies[latencies.length - 1] ?? NaN),
    latencySamples: latencies.length,
    cpuMsPerMessage: {
      core: per(cpuAfter.consumerMs - cpuBefore.consumerMs),
      sandboxes: per(cpuAfter.sandboxesMs - cpuBefore.sandboxesMs),
      bench: per((benchUsed.user + benchUsed.system) / 1000),
      redis: per(redisUsed),
    },
  };
}

/** `uhlp dev` on Redis with the bench app: a queue route `jobs` and `GET /stats`, on one sandbox. */
async function coreSide(prefix: string, concurrency: number, bin?: string): Promise<Side> {
  const definitions = writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, minWarm: 1, maxSize: 1, concurrency: ${concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 } }]
  components:
    - { id: work, handler: JIT, pool: p, jit: { script: scripts/behaviours.mjs, function: work } }
    - { id: stats, handler: JIT, pool: p, jit: { script: scripts/behaviours.mjs, function: stats } }
  routes:
    - queue: { name: jobs, concurrency: ${concurrency}, maxAttempts: 1 }
      component: work
    - { http: { method: GET, path: /stats }, component: stats }
`,
    { 'scripts/behaviours.mjs': SCRIPT },
  );
  const core = await startUhlpDev(definitions, ['--log-level', 'error', '--state', TEST_REDIS_URL], 60_000, undefined, { UHLP_STATE_PREFIX: prefix }, bin);
  const stream = `${prefix}queue:bench:jobs`;
  const probe = new Redis(TEST_REDIS_URL);
  try {
    // The consumer creates its group when it starts: produce only once it reads.
    await until(async () => ((await probe.exists(stream)) === 1 ? ((await probe.xinfo('GROUPS', stream)) as unknown[]).length > 0 : false), 30_000, 'the core to read its queue');
  } finally {
    probe.disconnect();
  }
  return {
    stream,
    cpu() {
      const { selfMs, descendantsMs } = processTreeCpu(core.child.pid!);
      return { consumerMs: selfMs, sandboxesMs: descendantsMs };
    },
    async latencies() {
      const response = await fetch(`${core.url}/bench/stats`);
      if (response.status !== 200) throw new Error(`GET /bench/stats answered ${response.status}`);
      return ((await response.json()) as { latencies: number[] }).latencies;
    },
    async close() {
      await core.stop();
    },
  };
}

/**
 * The floor: one sandbox of the process driver (as the core makes them) and a
 * loop that reads the stream through a consumer group, keeps `concurrency`
 * messages in flight, sends each to the sandbox as the core would, and settles
 * it. No once-only, ledger, session, token, metrics or retries.
 */
async function bareSide(redis: Redis, prefix: string, concurrency: number, once: boolean): Promise<Side> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-queue-'));
  mkdirSync(path.join(root, SUITE_REVISION, 'scripts'), { recursive: true });
  writeFileSync(path.join(root, SUITE_REVISION, 'scripts', 'behaviours.mjs'), SCRIPT);
  const driver = await makeProcessDriver();
  const spec = { appId: 'bench', pool: suitePool({ concurrency, limits: { memoryMb: 256, cpus: 1, timeoutMs: 5000 } }), definitionsRoot: root, labels: {} };
  const handle = await driver.create(spec);
  const client = new SandboxClient(handle.endpoint);
  const stream = `${prefix}bare:jobs`;
  const reader = new Redis(TEST_REDIS_URL);
  await redis.xgroup('CREATE', stream, 'bare', '0', 'MKSTREAM');

  let stopped = false;
  let inFlight = 0;
  let sequence = 0;
  let freed: (() => void) | undefined;
  const keys = new RuntimeKeys(prefix);
  const scripts = loadLuaScripts();
  for (const name of ['idempotencyBeginMany', 'queueSettle']) redis.defineCommand(name, { numberOfKeys: scripts.get(name)!.numberOfKeys, lua: scripts.get(name)!.lua });
  const script = (name: string, ...args: Array<string | number>): Promise<unknown> => (redis as unknown as Record<string, (...a: Array<string | number>) => Promise<unknown>>)[name]!(...args);
  // The core's group commit: each record completed with its message's XACK + XDEL, one script per batch.
  const settled = new AckBatch(
    async (ids, answers) => {
      const args: Array<string | number> = [];
      for (const answer of answers) args.push(JSON.stringify(answer.response), answer.ttlMs);
      await script('queueSettle', 1 + answers.length, stream, ...answers.map((a) => keys.idempotency(a.appId, a.key)), 'bare', ids.length, ...ids, ...args);
    },
    (error) => process.stderr.write(`bare loop: ${String(error)}\n`),
  );
  const settle = async (id: string, fields: string[]): Promise<void> => {
    const payload = JSON.parse(fields[fields.indexOf('payload') + 1]!) as unknown;
    const requestId = `b-${sequence++}`;
    // The once-only record as the core keeps it: claimed with its read (below), the answer completed with the acknowledgement.
    const key = `queue:jobs:${id}`;
    const raw = await client.execute(executeBody(requestId, 'work', { source: 'queue', queueDetails: { queueName: 'jobs', messageId: id, payload } }), requestId, 5000);
    if (raw.status !== 200) throw new Error(`the sandbox answered ${raw.status}`);
    if (once) settled.add(id, { appId: 'bench', key, response: { statusCode: 200, headers: {}, body: raw.body.toString('base64') }, ttlMs: 86_400_000 });
    else await redis.multi().xack(stream, 'bare', id).xdel(stream, id).exec();
  };
  const loop = (async () => {
    while (!stopped) {
      const free = concurrency - inFlight;
      if (free <= 0) {
        await new Promise<void>((resolve) => (freed = resolve));
        continue;
      }
      const reply = (await reader.xreadgroup('GROUP', 'bare', 'loop', 'COUNT', free, 'BLOCK', 200, 'STREAMS', stream, '>')) as Array<[string, Array<[string, string[]]>]> | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (once && entries.length > 0) {
        // The records of one read claimed in one script, as the core claims them.
        const ids = entries.map(([id]) => keys.idempotency('bench', `queue:jobs:${id}`));
        const begun = (await script('idempotencyBeginMany', ids.length, ...ids, ...ids.flatMap(() => ['queue:jobs', 60_000]))) as string[][];
        if (begun.some((reply) => reply[0] !== 'new')) throw new Error('a message ran before');
      }
      for (const [id, fields] of entries) {
        inFlight += 1;
        void settle(id, fields)
          .catch((error: unknown) => process.stderr.write(`bare loop: ${String(error)}\n`))
          .finally(() => {
            inFlight -= 1;
            const wake = freed;
            freed = undefined;
            wake?.();
          });
      }
    }
  })();
  return {
    stream,
    cpu() {
      // The bench process is the bare side's consumer; its descendants are the one sandbox.
      const { selfMs, descendantsMs } = processTreeCpu(process.pid);
      return { consumerMs: selfMs, sandboxesMs: descendantsMs };
    },
    async latencies() {
      const raw = await client.execute(executeBody('stats', 'stats', { source: 'queue', queueDetails: { queueName: 'jobs', messageId: '0-0', payload: {} } }), 'stats', 5000);
      return (JSON.parse(raw.body.toString()) as { data: { latencies: number[] } }).data.latencies;
    },
    async close() {
      stopped = true;
      await loop;
      await settled.settled();
      reader.disconnect();
      client.close();
      await driver.destroy(handle, 'shutdown');
      await driver.close();
    },
  };
}

/** The /execute request the core sends for a queue message (context as the driver suite's). */
function executeBody(requestId: string, fn: string, requestData: ExecuteRequest['requestData']): string {
  const request: ExecuteRequest = {
    requestId,
    requestData,
    context: {
      appId: 'bench',
      componentId: fn,
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision: SUITE_REVISION, script: 'scripts/behaviours.mjs', function: fn },
    },
  };
  return JSON.stringify(request);
}

/** XADDs `count` messages as fast as Redis takes them (pipelined batches), each stamped with its send time. */
async function produce(redis: Redis, stream: string, count: number): Promise<void> {
  for (let sent = 0; sent < count; ) {
    const pipeline = redis.pipeline();
    const batch = Math.min(500, count - sent);
    for (let i = 0; i < batch; i++) pipeline.xadd(stream, '*', 'payload', `{"sentAt":${performance.timeOrigin + performance.now()}}`);
    await pipeline.exec();
    sent += batch;
  }
}

/** XADDs `rate` messages a second for `durationMs`, one at a time at their due time; returns how many. */
async function paced(redis: Redis, stream: string, rate: number, durationMs: number): Promise<number> {
  const total = Math.max(1, Math.round((rate * durationMs) / 1000));
  const start = performance.now();
  const sends: Promise<unknown>[] = [];
  for (let i = 0; i < total; i++) {
    const due = start + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    sends.push(redis.xadd(stream, '*', 'payload', `{"sentAt":${performance.timeOrigin + performance.now()}}`));
  }
  await Promise.all(sends);
  return total;
}

/** Resolves once every message of the stream was settled (acknowledged and deleted). */
async function drained(redis: Redis, stream: string, timeoutMs: number): Promise<void> {
  await until(async () => (await redis.xlen(stream)) === 0, timeoutMs, `${stream} to drain`);
}

async function until(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

async function dropPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 500);
    if (keys.length > 0) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
}


/** The rows side by side, and core/bare ratios. */
export function queueTable(rows: readonly QueueRow[]): string {
  const lines = ['PATH        CONC  MSGS   MSG/S   XADD->SCRIPT p50   p99      max      CPU ms/msg consumer sandbox bench  redis  ROUNDS (msg/s)'];
  for (const row of rows) {
    const r = row.result;
    const cpu = r.cpuMsPerMessage;
    lines.push(
      `${row.path.padEnd(11)} ${String(row.concurrency).padEnd(5)} ${String(r.messages).padEnd(6)} ${String(r.throughput).padEnd(7)} ${`${r.p50Ms} ms`.padEnd(18)} ${`${r.p99Ms} ms`.padEnd(8)} ${`${r.maxMs} ms`.padEnd(8)} ${`${cpu.core}`.padEnd(19)} ${`${cpu.sandboxes}`.padEnd(7)} ${`${cpu.bench}`.padEnd(6)} ${`${cpu.redis}`.padEnd(6)} ${row.rounds.map((x) => x.throughput).join(', ')}`,
    );
  }
  const ratio = queueRatio(rows);
  if (ratio !== undefined) {
    lines.push(`\ncore/bare: throughput x${ratio.throughput} (target >= 0.7), p50 +${ratio.addedP50Ms} ms, p99 +${ratio.addedP99Ms} ms`);
    const before = rows.find((r) => r.path === 'core-before')?.result;
    if (before !== undefined) lines.push(`core CPU per message: ${ratio.coreCpuMs} ms vs ${before.cpuMsPerMessage.core} ms of BENCH_QUEUE_BEFORE's core (throughput ${rows.find((r) => r.path === 'core')?.result.throughput} vs ${before.throughput} msg/s)`);
    if (ratio.overOnceFloor !== undefined) lines.push(`core/bare+once (the floor of the same work: the once-only records claimed a read at a time, completed in the batched acknowledgement): throughput x${ratio.overOnceFloor}`);
    lines.push(
      `consumer CPU per message: core ${ratio.coreCpuMs} ms vs the bare loop's ${ratio.bareLoopCpuMs} ms, ${ratio.bareOnceLoopCpuMs ?? '-'} ms with the once-only record (the bare sides' bench process less the producer's share, the core side's bench figure)`,
    );
  }
  return lines.join('\n');
}

export function queueRatio(
  rows: readonly QueueRow[],
): { throughput: number; overOnceFloor?: number; addedP50Ms: number; addedP99Ms: number; coreCpuMs: number; bareLoopCpuMs: number; bareOnceLoopCpuMs?: number } | undefined {
  const core = rows.find((r) => r.path === 'core')?.result;
  const bare = rows.find((r) => r.path === 'bare')?.result;
  const floor = rows.find((r) => r.path === 'bare+once')?.result;
  if (core === undefined || bare === undefined) return undefined;
  return {
    throughput: Math.round((core.throughput / bare.throughput) * 100) / 100,
    ...(floor ? { overOnceFloor: Math.round((core.throughput / floor.throughput) * 100) / 100, bareOnceLoopCpuMs: round3(floor.cpuMsPerMessage.core - core.cpuMsPerMessage.bench) } : {}),
    addedP50Ms: round3(core.p50Ms - bare.p50Ms),
    addedP99Ms: round3(core.p99Ms - bare.p99Ms),
    coreCpuMs: core.cpuMsPerMessage.core,
    bareLoopCpuMs: round3(bare.cpuMsPerMessage.core - core.cpuMsPerMessage.bench),
  };
}
