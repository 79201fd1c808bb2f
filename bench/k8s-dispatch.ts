/**
 * The pod driver's benchmarks on the real single-node cluster (scripts/k8s-node.sh),
 * each side by side with a bare baseline made by this script with the same pod
 * manifest (src/sandbox/sandbox-pod.ts) and the same observer:
 *
 * 1. Warm claim through the core: `uhlp dev --registry kubernetes --driver pod`
 *    serving a SandboxPool the operator (`uhlp operator --sandbox-pods`, a process of its own) keeps at
 *    replicas warm pods; with maxUses 1 every request claims a warm pod (a label
 *    patch carrying its resourceVersion), runs there and gets it deleted, so each
 *    sample is a claim. Each request waits until the pool is full again. Against
 *    POST /execute sent straight to a ready pod of the same manifest (its script
 *    already loaded), and against the floor of a claim: the first request to a fresh
 *    Ready pod of the same manifest, the script sent along. A claimed pod runs the script for the first time (the core
 *    sends it along, src/sandbox/script-push.ts): that is part of a claim here and
 *    is in the figure. Where the time went comes from the core's debug log
 *    (`execution timing`): the claim (the wait for a sandbox), the round trip to the
 *    pod and of it the runner's own time, and the rest (the core's HTTP and turn
 *    work, and the client).
 * 2. Pool miss: the same pool at replicas 0, so the driver creates a pod on demand
 *    (claimed from birth); timed from the HTTP request to its answer. Against a bare
 *    pod create (the same manifest) to its first /execute answer.
 * 3. Refill: `replicas` 0 → 10 on the SandboxPool (the operator creates the pods),
 *    timed until 10 pods are Ready; against 10 bare pod creates at once, timed the
 *    same way (a poll of the pod list every 50 ms for both).
 *
 *   npm run bench:k8s   (BENCH_CLAIMS=20, BENCH_DIRECT=50, BENCH_MISS_ROUNDS=5, BENCH_REFILL_ROUNDS=2)
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import Docker from 'dockerode';
import { buildImages } from '../src/images/build-images.js';
import { APP_DEFINITION, CustomResourceClient, SANDBOX_POOL, type AppDefinitionResource } from '../src/k8s/custom-resources.js';
import { POD_RUNNER_PORT, sandboxPod } from '../src/sandbox/sandbox-pod.js';
import { commitAll, git, initRepo, writeFiles } from '../test/helpers/git-repo.js';
import { FAKE_MCP_TOKEN, startFakeMcpServer } from '../test/helpers/fake-mcp-server.js';
import { startHttpsGitServer } from '../test/helpers/https-git-server.js';
import { startUhlpDev, UHLP_BIN, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { poolSpec } from '../test/helpers/pool-spec.js';
import { executeBody } from '../test/sandbox/driver-suite.js';
import { sampleStats, type SampleStats } from './lib/bare-docker.js';
import { round2 } from './lib/numbers.js';
import { table } from './lib/load.js';

const run = promisify(execFile);
const NODE_SCRIPT = new URL('../scripts/k8s-node.sh', import.meta.url).pathname;
const GATEWAY = `${(process.env.UHLP_K8S_NODE_SUBNET ?? '10.244.0.0/24').replace(/\.\d+\/\d+$/, '')}.1`;
const LIMITS = { memoryMb: 128, cpus: 1, timeoutMs: 5000 };
const WARM = 4;
const REFILL_SIZE = 10;
const SCRIPT = "export const hello = () => ({ hello: 'bench' });\nexport default hello;\n";

export interface K8sBenchOptions {
  readonly claims?: number;
  readonly direct?: number;
  readonly missRounds?: number;
  readonly refillRounds?: number;
  /** Fresh pods whose first request is timed (the warm claim's floor). */
  readonly fresh?: number;
}

/** p50/p99 over a sample, beside sampleStats' figures. */
interface LatencyStats extends SampleStats {
  p99Ms: number;
}

/** Where a warm claim's time went, per the core's `execution timing` debug lines. */
export interface ClaimBreakdown {
  claim: LatencyStats;
  roundTrip: LatencyStats;
  runner: LatencyStats;
  /** Of the runner's time: its first load of the script (kept, then imported). */
  scriptLoad: LatencyStats;
  /** The client's time less the claim and the round trip: the core's HTTP and turn work, and the client's. */
  rest: LatencyStats;
}

export interface K8sBenchReport {
  image: string;
  warmClaim: {
    how: string;
    core: LatencyStats;
    direct: LatencyStats;
    /** The first request to a fresh Ready pod, the script sent along: the floor of a warm claim. */
    freshDirect: LatencyStats;
    claimPatch: LatencyStats;
    breakdown?: ClaimBreakdown;
  };
  poolMiss: { core: SampleStats; bare: SampleStats; ratioP50: number };
  refill: { size: number; poolMs: SampleStats; bareMs: SampleStats; ratio: number };
}

function latency(values: number[]): LatencyStats {
  const sorted = [...values].sort((a, b) => a - b);
  return { ...sampleStats(values), p99Ms: round2(sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)] ?? NaN) };
}

async function freePort(host: string): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000, intervalMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const value = await check().catch((error: unknown) => {
      last = error;
      return undefined;
    });
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last instanceof Error ? `; last error: ${last.message}` : ''}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

const isReady = (pod: V1Pod): boolean =>
  !pod.metadata?.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

export async function benchK8s(options: K8sBenchOptions = {}): Promise<K8sBenchReport> {
  const { stdout } = await run(NODE_SCRIPT, ['env']).catch(() => {
    throw new Error('no Ready node: run `scripts/k8s-node.sh up` as root first');
  });
  process.env.KUBECONFIG = stdout.trim().split('\n').pop()!.replace(/^KUBECONFIG=/, '');
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const client = new CustomResourceClient(kubeConfig);
  const { jitRunner } = await buildImages({ docker: new Docker() });
  await run(NODE_SCRIPT, ['import', jitRunner.reference], { maxBuffer: 1 << 20 });

  const namespace = `uhlp-bench-${randomBytes(4).toString('hex')}`;
  await api.createNamespace({ body: { metadata: { name: namespace } } });
  const work = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-k8s-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  try {
    // The app's Git source (the core runs on this machine, so loopback).
    const repo = path.join(work, 'repo');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, { 'apps/bench/scripts/hello.js': SCRIPT });
    commitAll(repo, 'bench');
    git(work, 'clone', '-q', '--bare', repo, path.join(work, 'served', 'apps.git'));
    const gitServer = await startHttpsGitServer({ root: path.join(work, 'served') });
    cleanups.push(() => gitServer.close());

    const corePort = await freePort(GATEWAY);
    // The operator in a process of its own, as deployed: in this one, its work on each claim's
    // pod events would delay this client's reading of the answer, and count in the figure.
    const operator = spawn(process.execPath, [UHLP_BIN, 'operator', '--namespace', namespace, '--sandbox-pods', '--jit-image', jitRunner.reference], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, UHLP_LOG_LEVEL: 'error' },
    });
    operator.stderr!.on('data', (chunk: Buffer) => process.stderr.write(`operator: ${chunk.toString()}`));
    const operatorExited = new Promise<void>((resolve) => operator.once('exit', () => resolve()));
    cleanups.push(async () => {
      operator.kill('SIGTERM');
      await operatorExited;
    });
    const core: UhlpProcess = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace, '--driver', 'pod', '--port', String(corePort), '--log-level', 'debug'], 60_000, undefined, {
      UHLP_HOST: GATEWAY,
      UHLP_MCP_URL: `http://${GATEWAY}:${corePort}/mcp`,
      UHLP_POD_NAMESPACE: namespace,
      UHLP_IMAGE_JIT: jitRunner.reference,
      UHLP_GIT_ALLOW_PRIVATE: `127.0.0.1:${gitServer.port}`,
      UHLP_GIT_CA_FILE: gitServer.caFile,
    });
    cleanups.push(() => core.stop());

    const app = {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'bench', namespace },
      spec: {
        ingress: { pathPrefix: '/bench' },
        source: { git: { url: `${gitServer.origin}/apps.git` } },
        pools: [{ name: 'main', minWarm: WARM, maxSize: 20, maxUses: 1, limits: LIMITS }],
        components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'scripts/hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/hello' }, component: 'hello' }],
      },
    };
    await client.create(APP_DEFINITION, app as unknown as AppDefinitionResource);
    cleanups.push(() => client.delete(APP_DEFINITION, namespace, 'bench').catch(() => undefined));

    const poolSelector = 'uhlp.dev/role=sandbox,uhlp.dev/app=bench,uhlp.dev/pool=main';
    const poolPods = async (): Promise<V1Pod[]> => (await api.listNamespacedPod({ namespace, labelSelector: poolSelector })).items;
    const warmReady = async (): Promise<number> => (await poolPods()).filter((pod) => isReady(pod) && pod.metadata?.labels?.['uhlp.dev/sandbox-state'] === 'warm').length;
    const scale = (replicas: number): Promise<unknown> => client.patch(SANDBOX_POOL, namespace, 'bench-main', { spec: { replicas } });
    const hello = async (): Promise<number> => {
      const started = performance.now();
      const response = await fetch(`${core.url}/bench/hello`);
      const text = await response.text();
      if (response.status !== 200) throw new Error(`the core answered ${response.status}: ${text.slice(0, 300)}`);
      return performance.now() - started;
    };

    // --- 1. warm claim through the core vs straight to a ready pod -------------------
    await until('the app served', async () => (await warmReady()) >= WARM && (await hello().then(() => true, () => false)), 300_000, 200);
    const claims: number[] = [];
    const timingLines = (): number => timings(core.stderr()).length;
    const breakdown: Array<{ claim: number; roundTrip: number; runner: number; scriptLoad: number; rest: number }> = [];
    for (let i = 0; i < (options.claims ?? 20); i++) {
      await until('the pool full again', async () => (await warmReady()) >= WARM, 120_000);
      const before = timingLines();
      const total = await hello();
      claims.push(total);
      // The core logs the line once its answer is on its way: it reaches this process a moment after the answer.
      await until('the core\'s timing line', async () => timingLines() > before, 2_000, 5).catch(() => undefined);
      const timing = timings(core.stderr())[before];
      if (timing) {
        breakdown.push({ claim: timing.acquireMs, roundTrip: timing.roundTripMs, runner: timing.runnerMs, scriptLoad: timing.scriptLoadMs ?? 0, rest: total - timing.acquireMs - timing.roundTripMs });
      }
    }

    const input = { namespace, appId: 'bare', pool: poolSpec({ name: 'main', minWarm: 0, maxSize: 20, maxUses: 1, limits: LIMITS }), images: { jit: jitRunner.reference } };
    const mcp = await startFakeMcpServer({ revision: 'a'.repeat(40), files: { 'scripts/hello.js': SCRIPT }, tcpHost: GATEWAY });
    cleanups.push(() => mcp.close());
    // `pushed`: the script along with the request, as the core sends it to a pod's first request (script-push.ts).
    const body = (id: string, pushed = false): string => {
      const request = JSON.parse(executeBody(id, 'hello', id)) as { context: Record<string, unknown>; definitionFiles?: unknown };
      request.context.mcp_endpoint = mcp.url;
      request.context.mcp_token = FAKE_MCP_TOKEN;
      request.context.taskDetails = { handler: 'JIT', script: 'scripts/hello.js', function: 'hello', revision: 'a'.repeat(40) };
      if (pushed) request.definitionFiles = [{ path: 'scripts/hello.js', content: SCRIPT }];
      return JSON.stringify(request);
    };
    const bareSelector = 'uhlp.dev/role=sandbox,uhlp.dev/app=bare';
    const barePods = async (): Promise<V1Pod[]> => (await api.listNamespacedPod({ namespace, labelSelector: bareSelector })).items;
    const createBare = async (): Promise<string> =>
      (await api.createNamespacedPod({ namespace, body: sandboxPod(input, { state: 'warm' }) as V1Pod })).metadata!.name!;
    const execute = async (ip: string, id: string, pushed = false): Promise<void> => {
      const response = await fetch(`http://${ip}:${POD_RUNNER_PORT}/execute`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: body(id, pushed) });
      const text = await response.text();
      if (response.status !== 200 || !text.includes('"hello"')) throw new Error(`the pod answered ${response.status}: ${text.slice(0, 300)}`);
    };
    const ipOf = async (name: string): Promise<string> =>
      until(`pod ${name} running`, async () => {
        const pod = await api.readNamespacedPod({ name, namespace });
        return pod.status?.phase === 'Running' ? pod.status.podIP : undefined;
      }, 120_000, 20);
    const firstAnswer = async (ip: string, id: string): Promise<void> => {
      await until(`pod ${ip} answering`, () => execute(ip, id).then(() => true), 60_000, 10);
    };
    const removeBare = async (): Promise<void> => {
      for (const pod of await barePods()) await api.deleteNamespacedPod({ name: pod.metadata!.name!, namespace, gracePeriodSeconds: 0 }).catch(() => undefined);
      await until('bare pods gone', async () => (await barePods()).length === 0, 120_000, 100);
    };

    const directPod = await createBare();
    const directIp = await ipOf(directPod);
    await firstAnswer(directIp, 'warmup');
    const direct: number[] = [];
    for (let i = 0; i < (options.direct ?? 50); i++) {
      const started = performance.now();
      await execute(directIp, `d${i}`);
      direct.push(performance.now() - started);
    }
    // The claim alone: the label patch carrying the resourceVersion, as the driver sends it.
    const claimPatch: number[] = [];
    for (let i = 0; i < (options.claims ?? 20); i++) {
      const seen = await api.readNamespacedPod({ name: directPod, namespace });
      const started = performance.now();
      try {
        await api.patchNamespacedPod(
          { name: directPod, namespace, body: { metadata: { resourceVersion: seen.metadata?.resourceVersion, labels: { 'uhlp.dev/sandbox-state': i % 2 === 0 ? 'claimed' : 'warm' } } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      } catch (error) {
        // The kubelet wrote the pod's status between the read and the patch: a refused claim, as a core sees one; not a sample.
        if ((error as { code?: number }).code !== 409) throw error;
        i -= 1;
        continue;
      }
      claimPatch.push(performance.now() - started);
    }
    await removeBare();

    // The floor of a warm claim: the first request to a fresh Ready pod of the same manifest, its script sent
    // along as the core sends it, over a new connection: what a claimed pod's first request costs with no core.
    const fresh: number[] = [];
    const freshPods = await Promise.all(Array.from({ length: options.fresh ?? 10 }, () => createBare()));
    await until('the fresh pods Ready', async () => (await barePods()).filter(isReady).length >= freshPods.length, 300_000, 100);
    for (const [i, name] of freshPods.entries()) {
      const ip = await ipOf(name);
      const started = performance.now();
      await execute(ip, `f${i}`, true);
      fresh.push(performance.now() - started);
    }
    await removeBare();

    // --- 2. pool miss vs a bare pod create to first answer ------------------------------
    await scale(0);
    await until('the pool empty', async () => (await poolPods()).length === 0, 120_000, 100);
    const missCore: number[] = [];
    const missBare: number[] = [];
    for (let round = 0; round < (options.missRounds ?? 5); round++) {
      let started = performance.now();
      const name = await createBare();
      await firstAnswer(await ipOf(name), `b${round}`);
      missBare.push(performance.now() - started);
      await removeBare();

      started = performance.now();
      missCore.push(await hello());
      await until('the missed pod gone', async () => (await poolPods()).length === 0, 120_000, 100);
    }

    // --- 3. refill of 10 vs 10 bare concurrent creates ------------------------------------
    const poolRefill: number[] = [];
    const bareRefill: number[] = [];
    for (let round = 0; round < (options.refillRounds ?? 2); round++) {
      let started = performance.now();
      await Promise.all(Array.from({ length: REFILL_SIZE }, () => createBare()));
      await until('10 bare pods Ready', async () => (await barePods()).filter(isReady).length >= REFILL_SIZE, 300_000);
      bareRefill.push(performance.now() - started);
      await removeBare();

      started = performance.now();
      await scale(REFILL_SIZE);
      await until('10 warm pods Ready', async () => (await warmReady()) >= REFILL_SIZE, 300_000);
      poolRefill.push(performance.now() - started);
      await scale(0);
      await until('the pool empty', async () => (await poolPods()).length === 0, 120_000, 100);
    }

    const missCoreStats = sampleStats(missCore);
    const missBareStats = sampleStats(missBare);
    const poolStats = sampleStats(poolRefill);
    const bareStats = sampleStats(bareRefill);
    return {
      image: jitRunner.reference,
      warmClaim: {
        how: `pool of ${WARM} warm pods, maxUses 1: each request claims one (and runs its script there for the first time, sent by the core); direct: /execute to a ready pod`,
        core: latency(claims),
        direct: latency(direct),
        freshDirect: latency(fresh),
        claimPatch: latency(claimPatch),
        ...(breakdown.length > 0
          ? {
              breakdown: {
                claim: latency(breakdown.map((b) => b.claim)),
                roundTrip: latency(breakdown.map((b) => b.roundTrip)),
                runner: latency(breakdown.map((b) => b.runner)),
                scriptLoad: latency(breakdown.map((b) => b.scriptLoad)),
                rest: latency(breakdown.map((b) => b.rest)),
              },
            }
          : {}),
      },
      poolMiss: { core: missCoreStats, bare: missBareStats, ratioP50: round2(missCoreStats.p50Ms / missBareStats.p50Ms) },
      refill: { size: REFILL_SIZE, poolMs: poolStats, bareMs: bareStats, ratio: round2(bareStats.p50Ms / poolStats.p50Ms) },
    };
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
    await api.deleteNamespace({ name: namespace }).catch(() => undefined);
    rmSync(work, { recursive: true, force: true });
  }
}

/** The core's `execution timing` debug lines (component-executor.ts), in order. */
function timings(stderr: string): Array<{ acquireMs: number; roundTripMs: number; runnerMs: number; scriptLoadMs?: number }> {
  return stderr
    .split('\n')
    .filter((line) => line.includes('"execution timing"'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as { acquireMs: number; roundTripMs: number; runnerMs: number; scriptLoadMs?: number }];
      } catch {
        return [];
      }
    });
}

export function k8sBenchTable(report: K8sBenchReport): string {
  const mark = (ok: boolean): string => (ok ? 'ok' : 'MISSED');
  const { warmClaim, poolMiss, refill } = report;
  const part = (path: string, stats: LatencyStats): Record<string, string | number> => ({ path, 'p50 ms': stats.p50Ms, 'p99 ms': stats.p99Ms, 'max ms': stats.maxMs, samples: stats.samples });
  const breakdown = warmClaim.breakdown
    ? [
        part('  of it: the claim', warmClaim.breakdown.claim),
        part('  of it: round trip to the pod', warmClaim.breakdown.roundTrip),
        part('    of that: the runner', warmClaim.breakdown.runner),
        part('      of that: the script\'s first load', warmClaim.breakdown.scriptLoad),
        part('  of it: the rest (core HTTP, turn, client)', warmClaim.breakdown.rest),
      ]
    : [];
  return [
    table([
      { path: 'warm claim through the core', 'p50 ms': warmClaim.core.p50Ms, 'p99 ms': warmClaim.core.p99Ms, 'max ms': warmClaim.core.maxMs, samples: warmClaim.core.samples },
      ...breakdown,
      { path: 'straight to a fresh ready pod, its first request (floor)', 'p50 ms': warmClaim.freshDirect.p50Ms, 'p99 ms': warmClaim.freshDirect.p99Ms, 'max ms': warmClaim.freshDirect.maxMs, samples: warmClaim.freshDirect.samples },
      { path: 'straight to a ready pod', 'p50 ms': warmClaim.direct.p50Ms, 'p99 ms': warmClaim.direct.p99Ms, 'max ms': warmClaim.direct.maxMs, samples: warmClaim.direct.samples },
      { path: '(the claim patch alone)', 'p50 ms': warmClaim.claimPatch.p50Ms, 'p99 ms': warmClaim.claimPatch.p99Ms, 'max ms': warmClaim.claimPatch.maxMs, samples: warmClaim.claimPatch.samples },
    ]),
    `warm claim p50 ${warmClaim.core.p50Ms} ms (target <= 10 ms: ${mark(warmClaim.core.p50Ms <= 10)}), p99 ${warmClaim.core.p99Ms} ms (target <= 50 ms: ${mark(warmClaim.core.p99Ms <= 50)}); ` +
      `above the floor (a fresh pod's first request): p50 +${round2(warmClaim.core.p50Ms - warmClaim.freshDirect.p50Ms)} ms, p99 +${round2(warmClaim.core.p99Ms - warmClaim.freshDirect.p99Ms)} ms`,
    '',
    table([
      { start: 'pool miss through the core', 'p50 ms': poolMiss.core.p50Ms, 'min ms': poolMiss.core.minMs, 'max ms': poolMiss.core.maxMs },
      { start: 'bare pod create to first answer', 'p50 ms': poolMiss.bare.p50Ms, 'min ms': poolMiss.bare.minMs, 'max ms': poolMiss.bare.maxMs },
    ]),
    `pool miss core/bare p50: x${poolMiss.ratioP50} (target <= 1.15: ${mark(poolMiss.ratioP50 <= 1.15)})`,
    '',
    table([
      { refill: `SandboxPool replicas 0 -> ${refill.size} Ready`, 'p50 ms': refill.poolMs.p50Ms, 'min ms': refill.poolMs.minMs, 'max ms': refill.poolMs.maxMs },
      { refill: `${refill.size} bare pod creates at once`, 'p50 ms': refill.bareMs.p50Ms, 'min ms': refill.bareMs.minMs, 'max ms': refill.bareMs.maxMs },
    ]),
    `refill rate/bare rate: x${refill.ratio} (target >= 0.8: ${mark(refill.ratio >= 0.8)})`,
    '',
  ].join('\n');
}

export function writeK8sReport(report: unknown): void {
  mkdirSync('bench/results', { recursive: true });
  writeFileSync(`bench/results/bench-k8s-${Date.now()}.json`, JSON.stringify(report, null, 2));
}
