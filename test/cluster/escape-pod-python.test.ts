/**
 * The escape suite's process creations in a python pod on the real node: a pod's
 * runtime loads only its default seccomp profile, which lets a process fork and
 * exec, so the python runner loads the sandboxes' own policy on itself
 * (`--seccomp-self`, src/runners/python/seccomp_self.py). Each attempt of
 * hostile.py must be refused with the code the process and Docker drivers give
 * (PYTHON_SPAWN_REFUSALS), and the runner must go on serving. (`uhlp dev` runs no
 * pods, so the pod driver runs the script here itself, through a fake MCP server
 * as the pod driver suite does.) So must its writes to the IPC namespace's places
 * (/dev/shm, /dev/mqueue, System V and POSIX IPC objects), its results UTF-8 cannot
 * say, its shared memory past its cap; and a pod that fills its memory must end as
 * a heap limit even when its connection dropped first. Its `/work` (an emptyDir the
 * core cannot walk) is walked by the runner when the core asks (`reportWrites`), and
 * a turn that wrote outside its directories is refused as on the other drivers, the
 * pod deleted.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import { ComponentExecutor } from '../../src/execution/component-executor.js';
import { newTurnEvidence } from '../../src/ledger/turn-evidence.js';
import { silentLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import type { Lease, PooledSandbox, PoolStrategy } from '../../src/sandbox/pool-strategy.js';
import type { UhlpError } from '../../src/shared/errors.js';
import { PodDriver } from '../../src/sandbox/pod-driver.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxHandle } from '../../src/sandbox/sandbox-driver.js';
import { pythonImages, testImages, uniqueInstanceId } from '../docker/docker-env.js';
import { PYTHON_SPAWN_REFUSALS } from '../helpers/escape-suite.js';
import { FAKE_MCP_TOKEN, startFakeMcpServer, type FakeMcpServer } from '../helpers/fake-mcp-server.js';
import { createNamespace } from '../k8s/kube-env.js';
import { makeSuiteDefinitions, SUITE_REVISION, suitePool } from '../sandbox/driver-suite.js';
import { importImages, NODE_GATEWAY, requireNode } from './node-env.js';

const HOSTILE = 'scripts/hostile.py';
const HOSTILE_SOURCE = readFileSync(new URL('../fixtures/escape-python/apps/bare/scripts/hostile.py', import.meta.url), 'utf8');
/** What a script may still do under the policy: threads, asyncio, files in its turn's directories. */
const WORK = 'scripts/work.py';
const WORK_SOURCE = [
  'import asyncio, os, tempfile, threading',
  '',
  'async def work(event, ctx):',
  '    seen = []',
  '    thread = threading.Thread(target=lambda: seen.append("thread"))',
  '    thread.start()',
  '    thread.join()',
  '    await asyncio.sleep(0.01)',
  '    for directory in (ctx.workspace["tmpDir"], ctx.workspace["outputDir"]):',
  '        os.makedirs(directory, exist_ok=True)',
  '    with tempfile.NamedTemporaryFile(delete=False) as scratch:',
  '        scratch.write(b"scratch")',
  '    with open(os.path.join(ctx.workspace["outputDir"], "report.json"), "w") as report:',
  '        report.write("{}")',
  '    return {"seen": seen, "scratch": os.path.dirname(scratch.name), "outputs": os.listdir(ctx.workspace["outputDir"])}',
  '',
].join('\n');

describe('escape attempts in a python pod: process creation', () => {
  const instanceId = uniqueInstanceId('escape-pods');
  let namespace: { name: string; remove: () => Promise<void> };
  let driver: PodDriver;
  let mcp: FakeMcpServer;
  let handle: SandboxHandle;
  let client: SandboxClient;

  beforeAll(async () => {
    const kubeConfig = await requireNode();
    namespace = await createNamespace(kubeConfig, 'uhlp-escape-pod');
    const { pythonRunner } = pythonImages(await testImages());
    await importImages([pythonRunner.reference]);
    mcp = await startFakeMcpServer({ revision: SUITE_REVISION, files: { [HOSTILE]: HOSTILE_SOURCE, [WORK]: WORK_SOURCE }, tcpHost: NODE_GATEWAY });
    driver = new PodDriver({ logger: silentLogger(), instanceId, kubeConfig, namespace: namespace.name, images: { python: pythonRunner.reference } });
    handle = await driver.create({
      appId: 'escape',
      pool: suitePool({ runner: 'python', limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 10_000 } }),
      definitionsRoot: makeSuiteDefinitions(),
      labels: { 'uhlp.dev/app': 'escape', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    });
    client = new SandboxClient(handle.endpoint);
  }, 180_000);

  afterAll(async () => {
    client?.close();
    if (handle) await driver.destroy(handle, 'shutdown');
    await driver?.close();
    await mcp?.close();
    await namespace?.remove();
  }, 60_000);

  /** hostile.py's `fn` as an HTTP turn whose body is `body`, of the session `requestId`. */
  function turnRequest(requestId: string, fn: string, body: unknown, script = HOSTILE): ExecuteRequest {
    return {
      requestId,
      requestData: {
        source: 'http',
        httpDetails: { method: 'POST', path: `/${fn}`, queryParameters: {}, headers: {}, body: JSON.stringify(body), bodyEncoding: 'utf8' },
      },
      context: {
        appId: 'escape',
        componentId: fn,
        mcp_endpoint: mcp.url,
        mcp_token: FAKE_MCP_TOKEN,
        stateConfig: { type: 'mcp_tool' },
        configuration: {},
        applicationInfo: { deploymentMode: 'development' },
        taskDetails: { handler: 'JIT', revision: SUITE_REVISION, script, function: fn },
        sessionId: requestId,
        workspace: { tmpDir: `tmp/${requestId}`, outputDir: `output/${requestId}` },
      },
    };
  }

  /** hostile.py's `fn` run in the pod as an HTTP turn whose body is `body`. */
  async function run(requestId: string, fn: string, body: unknown, script = HOSTILE, on = client): Promise<{ resultType: string; data: any }> {
    const request = turnRequest(requestId, fn, body, script);
    const response = await on.execute(JSON.stringify(request), requestId, 10_000);
    expect(response.status).toBe(200);
    return JSON.parse(response.body.toString()) as { resultType: string; data: any };
  }

  it('starts no process: fork, subprocess, posix_spawn, multiprocessing and ctypes fork/clone each refused as on the other drivers', async () => {
    const answer = await run('spawn-1', 'attempt', { kind: 'spawn', host: {} });
    expect(answer.resultType, JSON.stringify(answer.data)).toBe('generic');
    process.stdout.write(`\n[escape, pod driver, python runner: spawn]\n${Object.entries(answer.data.results as Record<string, string>).map(([target, outcome]) => `  ${target} -> ${outcome}`).join('\n')}\n`);
    expect(answer.data.results).toEqual(PYTHON_SPAWN_REFUSALS);
  });

  it('still lets a script and the runner work: threads, asyncio, files in its turn\'s directories, the next request', async () => {
    // The pod driver suite runs the rest (scripts kept under /work, memory, drain, concurrency) under the same policy.
    expect(await run('work-1', 'work', {}, WORK)).toEqual({
      requestId: 'work-1',
      resultType: 'generic',
      data: { seen: ['thread'], scratch: '/work/tmp/work-1', outputs: ['report.json'] },
      metrics: expect.any(Object),
    });
    const again = await run('spawn-2', 'attempt', { kind: 'spawn', host: {} });
    expect(again.data.results).toEqual(PYTHON_SPAWN_REFUSALS);
  });

  it('leaves nothing in /dev/shm, /dev/mqueue or the IPC namespace for the next session on the pod', async () => {
    const scatter = await run('scatter-1', 'scatter', {});
    const gather = await run('gather-1', 'gather', {});
    process.stdout.write(`\n[escape, pod driver, python runner: scatter]\n  written: ${scatter.data.written.join(' ')}\n  found by the next session: ${gather.data.found.join(' ')}\n`);
    expect(gather.data.same_runner).toBe(true);
    for (const place of ['/dev/shm', '/dev/mqueue', 'sysv shm', 'posix mq']) expect(scatter.data.written, place).not.toContain(place);
    // A pod's /work (an emptyDir) is not on the core's host and is not walked (docs/security.md): only places outside it are checked here.
    expect(gather.data.found.filter((found: string) => !found.startsWith('/work/'))).toEqual([]);
  });

  it('leaves nothing anywhere it can write for the next session on its sandbox: /work walked by the runner, the turn refused, the pod deleted', async () => {
    const own = await driver.create({
      appId: 'escape',
      pool: suitePool({ runner: 'python', limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 10_000 } }),
      definitionsRoot: makeSuiteDefinitions(),
      labels: { 'uhlp.dev/app': 'escape', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    });
    const ownClient = new SandboxClient(own.endpoint);
    try {
      // The core's own path for a turn on a pod: the component executor, which asks the runner for its walk.
      const sandbox = { handle: own, client: ownClient, uses: 0, active: 0 } as unknown as PooledSandbox;
      const released: string[] = [];
      const pool: PoolStrategy = {
        tryAcquire: () => ({ sandbox, hit: true }) as Lease,
        acquire: async () => ({ sandbox, hit: true }) as Lease,
        prepareRequest: (_lease, body) => body,
        release: (_lease, outcome) => void released.push(outcome),
      };
      const executor = new ComponentExecutor({ pool: () => pool }, createMetrics({ defaultMetrics: false }), silentLogger());
      const evidence = newTurnEvidence();
      const failure = (await executor
        .execute({ appId: 'escape', poolName: 'suite', timeoutMs: 10_000 }, 'scatter-w', JSON.stringify(turnRequest('scatter-w', 'scatter', {})), undefined, {
          sessionId: 'scatter-w',
          declared: [],
          outputsRoot: undefined,
          evidence,
        })
        .catch((error: unknown) => error)) as UhlpError;
      const undeclared = (failure.details as { undeclared: string[] } | undefined)?.undeclared ?? [];
      process.stdout.write(`\n[escape, pod driver, python runner: scatter through the core]\n  ${failure.code}: ${undeclared.join(' ')}\n`);
      expect(failure.code).toBe('UHLP_WRITE_SURFACE_MISMATCH');
      // Every place of /work scatter wrote to: beside tmp/ and output/, in them, in the turn's own directories, in the runner's definitions cache.
      const left = 'uhlp-left-behind';
      for (const place of [left, `tmp/${left}`, `output/${left}`]) expect(undeclared, place).toContain(place);
      expect(undeclared.some((place) => place.startsWith('.definitions/') && place.endsWith(`/${left}`))).toBe(true);
      expect(released).toEqual(['recycled']);
      // The runner emptied its tree before it answered: another session on this very pod (which the core never sends) finds nothing.
      const gather = await run('gather-w', 'gather', {}, HOSTILE, ownClient);
      expect(gather.data.found).toEqual([]);
      // What the pool does with a 'recycled' release: the pod is deleted, never claimed again.
      await driver.destroy(own, 'recycled');
    } finally {
      ownClient.close();
    }
  }, 60_000);

  it('answers a result UTF-8 cannot say with UHLP_SCRIPT_BAD_RESULT, and serves the next request', async () => {
    const answer = await run('surrogate-1', 'surrogate', {});
    expect(answer).toMatchObject({ resultType: 'error', data: { code: 'UHLP_SCRIPT_BAD_RESULT' } });
    expect((await run('spawn-3', 'attempt', { kind: 'spawn', host: {} })).data.results).toEqual(PYTHON_SPAWN_REFUSALS);
  });

  it('refuses 512 MiB of shared memory in a 128 MiB pod', async () => {
    expect((await run('shared-1', 'shared_hog', {})).data).toEqual({ refused: 'ENOMEM' });
  });

  it('ends as a heap limit when it fills its memory, though its connection dropped first', async () => {
    const own = await driver.create({
      appId: 'escape',
      pool: suitePool({ runner: 'python', limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 10_000 } }),
      definitionsRoot: makeSuiteDefinitions(),
      labels: { 'uhlp.dev/app': 'escape', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    });
    const ownClient = new SandboxClient(own.endpoint);
    try {
      await expect(run('hog-1', 'hog', {}, HOSTILE, ownClient)).rejects.toMatchObject({ name: 'SandboxTransportError' });
      // What the pool does on a dropped connection: destroy it as a crash; the pod's end says otherwise.
      await driver.destroy(own, 'crash');
      expect(await own.exited).toBe('heap-limit');
    } finally {
      ownClient.close();
    }
  }, 60_000);
});
