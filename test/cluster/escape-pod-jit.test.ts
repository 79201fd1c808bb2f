/**
 * The escape suite's "nothing left for the next session" on a jit-runner pod on the
 * real node. A pod's `/work` is an emptyDir the core cannot walk, so the core asks
 * the runner for its walk (`reportWrites`); a turn that wrote outside its
 * directories must be refused as on the process and Docker drivers
 * (UHLP_WRITE_SURFACE_MISMATCH, every place reported), the runner must have emptied
 * the tree, and the pod must be deleted, not claimed again. (`uhlp dev` runs no
 * pods: the core's component executor runs the turn here, through a fake MCP server
 * as the pod driver suite does.)
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import { ComponentExecutor } from '../../src/execution/component-executor.js';
import { newTurnEvidence } from '../../src/ledger/turn-evidence.js';
import { silentLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { PodDriver } from '../../src/sandbox/pod-driver.js';
import type { Lease, PooledSandbox, PoolStrategy } from '../../src/sandbox/pool-strategy.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { UhlpError } from '../../src/shared/errors.js';
import { testImages, uniqueInstanceId } from '../docker/docker-env.js';
import { FAKE_MCP_TOKEN, startFakeMcpServer, type FakeMcpServer } from '../helpers/fake-mcp-server.js';
import { createNamespace } from '../k8s/kube-env.js';
import { makeSuiteDefinitions, SUITE_REVISION, suitePool } from '../sandbox/driver-suite.js';
import { importImages, NODE_GATEWAY, requireNode } from './node-env.js';

const HOSTILE = 'scripts/hostile.mjs';
const HOSTILE_SOURCE = readFileSync(new URL('../fixtures/escape/apps/bare/scripts/hostile.mjs', import.meta.url), 'utf8');
const LEFT = 'uhlp-left-behind';

describe('escape attempts in a jit-runner pod: a file left for the next session', () => {
  const instanceId = uniqueInstanceId('escape-pod-jit');
  let namespace: { name: string; remove: () => Promise<void> };
  let driver: PodDriver;
  let mcp: FakeMcpServer;

  beforeAll(async () => {
    const kubeConfig = await requireNode();
    namespace = await createNamespace(kubeConfig, 'uhlp-escape-pod-jit');
    const { jitRunner } = await testImages();
    await importImages([jitRunner.reference]);
    mcp = await startFakeMcpServer({ revision: SUITE_REVISION, files: { [HOSTILE]: HOSTILE_SOURCE }, tcpHost: NODE_GATEWAY });
    driver = new PodDriver({ logger: silentLogger(), instanceId, kubeConfig, namespace: namespace.name, images: { jit: jitRunner.reference } });
  }, 180_000);

  afterAll(async () => {
    await driver?.close();
    await mcp?.close();
    await namespace?.remove();
  }, 60_000);

  function turnRequest(sessionId: string, fn: string): ExecuteRequest {
    return {
      requestId: sessionId,
      requestData: { source: 'http', httpDetails: { method: 'POST', path: `/${fn}`, queryParameters: {}, headers: {}, body: '{}', bodyEncoding: 'utf8' } },
      context: {
        appId: 'escape',
        componentId: fn,
        mcp_endpoint: mcp.url,
        mcp_token: FAKE_MCP_TOKEN,
        stateConfig: { type: 'mcp_tool' },
        configuration: {},
        applicationInfo: { deploymentMode: 'development' },
        taskDetails: { handler: 'JIT', revision: SUITE_REVISION, script: HOSTILE, function: fn },
        sessionId,
        workspace: { tmpDir: `tmp/${sessionId}`, outputDir: `output/${sessionId}` },
      },
    };
  }

  it('leaves nothing anywhere it can write for the next session on its sandbox: /work walked by the runner, the turn refused, the pod deleted', async () => {
    const pod = await driver.create({
      appId: 'escape',
      pool: suitePool({ runner: 'jit', limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 10_000 } }),
      definitionsRoot: makeSuiteDefinitions(),
      labels: { 'uhlp.dev/app': 'escape', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    });
    const client = new SandboxClient(pod.endpoint);
    try {
      // The core's own path for a turn on a pod: the component executor, which asks the runner for its walk.
      const sandbox = { handle: pod, client, uses: 0, active: 0 } as unknown as PooledSandbox;
      const released: string[] = [];
      const pool: PoolStrategy = {
        tryAcquire: () => ({ sandbox, hit: true }) as Lease,
        acquire: async () => ({ sandbox, hit: true }) as Lease,
        prepareRequest: (_lease, body) => body,
        release: (_lease, outcome) => void released.push(outcome),
      };
      const executor = new ComponentExecutor({ pool: () => pool }, createMetrics({ defaultMetrics: false }), silentLogger());
      const turn = { sessionId: 'scatter-j', declared: [], outputsRoot: undefined, evidence: newTurnEvidence() };
      const failure = (await executor
        .execute({ appId: 'escape', poolName: 'suite', timeoutMs: 10_000 }, 'scatter-j', JSON.stringify(turnRequest('scatter-j', 'scatter')), undefined, turn)
        .catch((error: unknown) => error)) as UhlpError;
      const undeclared = (failure.details as { undeclared: string[] } | undefined)?.undeclared ?? [];
      process.stdout.write(`\n[escape, pod driver, jit-runner: scatter through the core]\n  ${failure.code}: ${undeclared.join(' ')}\n`);
      expect(failure.code).toBe('UHLP_WRITE_SURFACE_MISMATCH');
      for (const place of [LEFT, `tmp/${LEFT}`, `output/${LEFT}`]) expect(undeclared, place).toContain(place);
      // The runner's definitions cache, where the script it kept lies: a file planted there is a write like any other.
      expect(undeclared.some((place) => place.startsWith('.definitions/') && place.endsWith(`/${LEFT}`))).toBe(true);
      expect(released).toEqual(['recycled']);

      // The runner emptied its tree before it answered: another session on this very pod (which the core never sends) finds nothing.
      const id = 'gather-j';
      const response = await client.execute(JSON.stringify(turnRequest(id, 'gather')), id, 10_000);
      const gather = JSON.parse(response.body.toString()) as { data: { found: string[]; same_runner: boolean } };
      expect(gather.data.same_runner).toBe(true);
      expect(gather.data.found).toEqual([]);
      // What the pool does with a 'recycled' release: the pod is deleted, never claimed again.
      await driver.destroy(pod, 'recycled');
    } finally {
      client.close();
    }
  }, 120_000);
});
