/**
 * The Docker driver's benchmarks, each side by side with a bare baseline made by
 * this script (bench/lib/bare-docker.ts: dockerode create + start + first answer,
 * same image, hardening and mounts as the driver):
 *
 * 1. Pool miss through the core: `uhlp dev --driver docker` serving a pool with
 *    minWarm 0, maxSize 1, maxUses 1, so every request recycles its sandbox and
 *    the next one finds the pool empty and waits for a start (a miss, every
 *    time, without waiting for an idle TTL). Timed from the HTTP request to its
 *    answer, against a bare start whose first answer is POST /execute of the
 *    same script. Each round waits until the previous containers are removed.
 * 2. Warm dispatch through the core against POST /execute sent directly to the
 *    same number of DockerDriver containers, with the same concurrency each, in
 *    each of DISPATCH_SHAPES; and through a bare forwarder to them, built on the
 *    core's own HTTP server and sandbox client (the floor of the core's design).
 * 3. Refill: a WarmPool (minWarm = maxSize = startConcurrency = 10) going from 0
 *    to 10 ready sandboxes, against 10 bare starts at once (first answer:
 *    GET /healthz, what the driver waits for).
 *
 * Rounds alternate between the two sides of each comparison, so drift on a noisy
 * machine hits both. Every container is labelled with a per-run instance id and
 * removed at the end.
 *
 *   BENCH_DRIVER=docker npm run bench   (or npm run bench:docker)
 *
 * BENCH_CORE_ARGS adds flags to every `uhlp dev` (e.g. "--ledger off", to see
 * what the turn ledger costs).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { Client } from 'undici';
import type { PoolSpec } from '../src/apps/schema/app-definition-schema.js';
import { buildImages } from '../src/images/build-images.js';
import { silentLogger } from '../src/logger.js';
import { createMetrics } from '../src/metrics.js';
import { DockerDriver } from '../src/sandbox/docker-driver.js';
import { removeInstanceContainers } from '../src/sandbox/remove-instance-containers.js';
import { LABEL_INSTANCE } from '../src/sandbox/sandbox-labels.js';
import type { SandboxSpec } from '../src/sandbox/sandbox-driver.js';
import { WarmPool } from '../src/sandbox/warm-pool.js';
import { startUhlpDev, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { executeBody, makeSuiteDefinitions, suitePool } from '../test/sandbox/driver-suite.js';
import { bareStart, hardeningDiff, removeBare, sampleStats, type BareDockerOptions, type SampleStats } from './lib/bare-docker.js';
import { round2 } from './lib/numbers.js';
import { writeHelloApp } from './lib/bench-app.js';
import { loadDirect, loadForwarded, loadThroughCore } from './lib/dispatch-load.js';
import { DISPATCH_SHAPES, dispatchRatios, dispatchTable, measureDispatch, shapeLabel, table, type DispatchRow, type DispatchShape, type LoadResult } from './lib/load.js';

/** Limits of every sandbox on both sides (the CPU quota only binds once a driver sandbox answers). */
const LIMITS = { memoryMb: 128, cpus: 1, timeoutMs: 5000 };
const REFILL_SIZE = 10;

export interface DockerBenchOptions {
  /** Sequential pool misses (and as many bare starts). @defaultValue 10 */
  readonly missRounds?: number;
  /** Duration of each warm-dispatch measurement, ms. @defaultValue 5000 */
  readonly dispatchMs?: number;
  /** Warm-dispatch rounds per path and shape; each row keeps the median one. @defaultValue 3 */
  readonly dispatchRounds?: number;
  /** Refill rounds (and as many rounds of 10 bare starts). @defaultValue 3 */
  readonly refillRounds?: number;
}

export interface DockerBenchReport {
  image: string;
  /** Bare vs driver container configuration differences (empty: same hardening). */
  hardeningDiff: string[];
  poolMiss: { how: string; core: SampleStats; bare: SampleStats; bareToHealthz: SampleStats; ratioP50: number };
  warmDispatch: DispatchRow[];
  dispatchRatios: ReturnType<typeof dispatchRatios>;
  refill: {
    size: number;
    poolMs: SampleStats;
    bareMs: SampleStats;
    poolStartsPerSecond: number;
    bareStartsPerSecond: number;
    ratio: number;
  };
}

interface Env {
  docker: Docker;
  image: string;
  instanceId: string;
  definitionsRoot: string;
  socketRoot: string;
  bare: BareDockerOptions;
  cleanups: Array<() => Promise<void> | void>;
}

export async function benchDocker(options: DockerBenchOptions = {}): Promise<DockerBenchReport> {
  const docker = new Docker();
  const { jitRunner } = await buildImages({ docker });
  const instanceId = `bench-${randomBytes(4).toString('hex')}`;
  const definitionsRoot = makeSuiteDefinitions();
  const socketRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bb-'));
  const env: Env = {
    docker,
    image: jitRunner.reference,
    instanceId,
    definitionsRoot,
    socketRoot,
    bare: { docker, image: jitRunner.reference, instanceId, definitionsRoot, socketRoot, memoryMb: LIMITS.memoryMb },
    cleanups: [],
  };
  try {
    const diff = await checkHardening(env);
    const poolMiss = await benchPoolMiss(env, options.missRounds ?? 10);
    const dispatchMs = options.dispatchMs ?? 5000;
    const warmDispatch = await measureDispatch(
      {
        direct: (shape) => direct(env, shape, dispatchMs),
        forwarder: (shape) => forwarded(env, shape, dispatchMs),
        core: (shape) => throughCore(env, shape, dispatchMs),
      },
      options.dispatchRounds ?? 3,
    );
    const refill = await benchRefill(env, options.refillRounds ?? 3);
    return {
      image: env.image,
      hardeningDiff: diff,
      poolMiss,
      warmDispatch,
      dispatchRatios: dispatchRatios(warmDispatch),
      refill,
    };
  } finally {
    for (const cleanup of env.cleanups.reverse()) await cleanup();
    await removeInstanceContainers(instanceId, { docker });
    rmSync(socketRoot, { recursive: true, force: true });
    rmSync(definitionsRoot, { recursive: true, force: true });
  }
}

/** One bare and one driver container, compared on what isolates them; also the untimed first starts. */
async function checkHardening(env: Env): Promise<string[]> {
  const driver = new DockerDriver({ logger: silentLogger(), instanceId: env.instanceId, docker: env.docker, images: { jit: env.image } });
  try {
    const bare = await bareStart(env.bare);
    const handle = await driver.create(suiteSpec(env, 1));
    try {
      return await hardeningDiff(env.docker, bare.container.id, handle.id);
    } finally {
      await removeBare(bare);
      await driver.destroy(handle, 'shutdown');
    }
  } finally {
    await driver.close();
  }
}

function suiteSpec(env: Env, size: number, overrides: Partial<PoolSpec> = {}): SandboxSpec {
  return {
    appId: 'suite',
    pool: suitePool({ minWarm: 0, maxSize: size, maxUses: 100_000_000, limits: LIMITS, ...overrides }),
    definitionsRoot: env.definitionsRoot,
    labels: {},
  };
}

/** The hello app with `pool`'s fields and the benchmark's limits. */
function benchApp(pool: string): string {
  return writeHelloApp(`${pool}, limits: { memoryMb: ${LIMITS.memoryMb}, cpus: ${LIMITS.cpus}, timeoutMs: ${LIMITS.timeoutMs} }`);
}

/** `uhlp dev --driver docker` on its own instance id; stopped (and its containers removed) by the cleanups. */
async function startCore(env: Env, pool: string): Promise<{ core: UhlpProcess; instanceId: string; stop(): Promise<void> }> {
  const instanceId = `${env.instanceId}-${randomBytes(2).toString('hex')}`;
  const defs = benchApp(pool);
  const extra = process.env.BENCH_CORE_ARGS?.split(' ').filter(Boolean) ?? [];
  const core = await startUhlpDev(defs, ['--driver', 'docker', '--log-level', 'error', ...extra], 60_000, undefined, { UHLP_INSTANCE_ID: instanceId });
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await core.stop();
    await removeInstanceContainers(instanceId, { docker: env.docker });
    rmSync(defs, { recursive: true, force: true });
    rmSync(core.dataDir, { recursive: true, force: true });
  };
  env.cleanups.push(stop);
  return { core, instanceId, stop };
}

/** Waits until no container of `instanceId` is left (so a removal does not overlap the next start). */
async function waitNoContainers(docker: Docker, instanceId: string): Promise<void> {
  const filters = JSON.stringify({ label: [`${LABEL_INSTANCE}=${instanceId}`] });
  const deadline = Date.now() + 15_000;
  while ((await docker.listContainers({ all: true, filters })).length > 0) {
    if (Date.now() > deadline) throw new Error(`containers of ${instanceId} still there after 15 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const settle = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 250));

async function benchPoolMiss(env: Env, rounds: number): Promise<DockerBenchReport['poolMiss']> {
  const { core, instanceId, stop } = await startCore(env, 'minWarm: 0, maxSize: 1, maxUses: 1');
  const client = new Client(core.url, { pipelining: 1 });
  const miss = async (sequence: number): Promise<number> => {
    await waitNoContainers(env.docker, instanceId);
    await settle();
    const started = performance.now();
    const response = await client.request({ method: 'GET', path: `/bench/hello/m${sequence}` });
    const text = await response.body.text();
    const ms = performance.now() - started;
    if (response.statusCode !== 200) throw new Error(`pool miss answered ${response.statusCode}: ${text.slice(0, 300)}`);
    return ms;
  };
  const bare = async (sequence: number): Promise<{ readyMs: number; answerMs: number }> => {
    await waitNoContainers(env.docker, env.instanceId);
    await settle();
    const made = await bareStart(env.bare, { body: executeBody(`b${sequence}`, 'hello', `b${sequence}`), requestId: `b${sequence}` });
    await removeBare(made);
    return { readyMs: made.readyMs, answerMs: made.answerMs! };
  };
  try {
    // Untimed: the core's first start, and its first import of the script.
    await miss(-1);
    const coreMs: number[] = [];
    const bareMs: number[] = [];
    const bareReadyMs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const b = await bare(round);
      bareMs.push(b.answerMs);
      bareReadyMs.push(b.readyMs);
      coreMs.push(await miss(round));
    }
    const coreStats = sampleStats(coreMs);
    const bareStats = sampleStats(bareMs);
    return {
      how: 'pool minWarm 0, maxSize 1, maxUses 1: every request recycles its sandbox, the next one misses',
      core: coreStats,
      bare: bareStats,
      bareToHealthz: sampleStats(bareReadyMs),
      ratioP50: round2(coreStats.p50Ms / bareStats.p50Ms),
    };
  } finally {
    await client.close();
    await stop();
  }
}

async function throughCore(env: Env, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const { core, stop } = await startCore(env, `minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000`);
  try {
    return await loadThroughCore(core.url, '/bench/hello/{{id}}', shape.connections, durationMs);
  } finally {
    await stop();
  }
}

async function direct(env: Env, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return onContainers(env, (driver) => loadDirect(driver, suiteSpec(env, shape.sandboxes), shape, durationMs));
}

async function forwarded(env: Env, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return onContainers(env, (driver) => loadForwarded(driver, suiteSpec(env, shape.sandboxes), shape, durationMs));
}

async function onContainers(env: Env, use: (driver: DockerDriver) => Promise<LoadResult>): Promise<LoadResult> {
  const driver = new DockerDriver({ logger: silentLogger(), instanceId: env.instanceId, docker: env.docker, images: { jit: env.image } });
  env.cleanups.push(() => driver.close());
  try {
    return await use(driver);
  } finally {
    await driver.close();
  }
}

async function benchRefill(env: Env, rounds: number): Promise<DockerBenchReport['refill']> {
  const driver = new DockerDriver({ logger: silentLogger(), instanceId: env.instanceId, docker: env.docker, images: { jit: env.image } });
  env.cleanups.push(() => driver.close());
  const spec = suiteSpec(env, REFILL_SIZE, { minWarm: REFILL_SIZE });
  const metrics = createMetrics({ defaultMetrics: false });
  const poolMs: number[] = [];
  const bareMs: number[] = [];
  try {
    for (let round = 0; round < rounds; round++) {
      await waitNoContainers(env.docker, env.instanceId);
      await settle();
      let started = performance.now();
      const bares = await Promise.all(Array.from({ length: REFILL_SIZE }, () => bareStart(env.bare)));
      bareMs.push(performance.now() - started);
      await Promise.all(bares.map(removeBare));

      await waitNoContainers(env.docker, env.instanceId);
      await settle();
      const pool = new WarmPool({
        appId: spec.appId,
        pool: spec.pool,
        driver,
        sandboxSpec: spec,
        metrics,
        logger: silentLogger(),
        startConcurrency: REFILL_SIZE,
      });
      started = performance.now();
      await pool.start();
      await pool.whenReady();
      poolMs.push(performance.now() - started);
      await pool.close();
    }
  } finally {
    await driver.close();
  }
  const pool = sampleStats(poolMs);
  const bare = sampleStats(bareMs);
  return {
    size: REFILL_SIZE,
    poolMs: pool,
    bareMs: bare,
    poolStartsPerSecond: round2((REFILL_SIZE * 1000) / pool.p50Ms),
    bareStartsPerSecond: round2((REFILL_SIZE * 1000) / bare.p50Ms),
    ratio: round2(bare.p50Ms / pool.p50Ms),
  };
}

/** The report as short tables, with each figure set against its target. */
export function dockerBenchTable(report: DockerBenchReport): string {
  const { poolMiss, refill } = report;
  // The throughput targets are read on the shape sized to the machine: two sandboxes of 8.
  const target = DISPATCH_SHAPES[DISPATCH_SHAPES.length - 1]!;
  const c16 = report.warmDispatch.find((r) => r.path === 'core' && shapeLabel(r) === shapeLabel(target))!.result;
  const mark = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
  const misses = table([
    { start: 'pool miss through the core', 'p50 ms': poolMiss.core.p50Ms, 'min ms': poolMiss.core.minMs, 'max ms': poolMiss.core.maxMs },
    { start: 'bare create+start+/execute', 'p50 ms': poolMiss.bare.p50Ms, 'min ms': poolMiss.bare.minMs, 'max ms': poolMiss.bare.maxMs },
    { start: '(bare, to /healthz)', 'p50 ms': poolMiss.bareToHealthz.p50Ms, 'min ms': poolMiss.bareToHealthz.minMs, 'max ms': poolMiss.bareToHealthz.maxMs },
  ]);
  const dispatch = dispatchTable(report.warmDispatch);
  const refills = table([
    { refill: `WarmPool 0 -> ${refill.size} ready`, 'p50 ms': refill.poolMs.p50Ms, 'min ms': refill.poolMs.minMs, 'max ms': refill.poolMs.maxMs, 'starts/s': refill.poolStartsPerSecond },
    { refill: `${refill.size} bare starts at once`, 'p50 ms': refill.bareMs.p50Ms, 'min ms': refill.bareMs.minMs, 'max ms': refill.bareMs.maxMs, 'starts/s': refill.bareStartsPerSecond },
  ]);
  const r = report.dispatchRatios;
  return [
    misses,
    `pool miss core/bare p50: x${poolMiss.ratioP50} (target <= 1.15: ${mark(poolMiss.ratioP50 <= 1.15)})`,
    '',
    dispatch,
    `core/direct: ${Object.entries(r)
      .map(([c, v]) => `${c} p50 x${v.p50} p99 x${v.p99} rps x${v.rps} (bare forwarder p50 x${v.forwarderP50})`)
      .join('; ')}`,
    `targets (${shapeLabel(target)}): p50 <= 2 x direct (${r[shapeLabel(target)]!.p50}: ${mark(r[shapeLabel(target)]!.p50 <= 2)}); p99 <= 5 ms (${c16.p99Ms} ms: ${mark(c16.p99Ms <= 5)}); >= 5000 req/s (${c16.rps}: ${mark(c16.rps >= 5000)})`,
    '',
    refills,
    `refill rate/bare rate: x${refill.ratio} (target >= 0.8: ${mark(refill.ratio >= 0.8)})`,
    report.hardeningDiff.length === 0 ? 'bare and driver containers: same image, hardening and mounts' : `bare vs driver differences: ${report.hardeningDiff.join('; ')}`,
    '',
  ].join('\n');
}
