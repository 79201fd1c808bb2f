/**
 * The pod driver's claim-ahead reserve on the real single-node cluster, with the
 * real operator keeping the pool's warm pods: what a core claims ahead is claimed
 * as any pod (one core, labelled and recorded with its core pod), a request takes
 * it with no claim on its path, `kubectl scale sandboxpool` bounds it, close hands
 * it back, and the pods a dead core held in reserve are deleted by the operator as
 * any pod it claimed.
 */
import os from 'node:os';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolSpec } from '../../src/apps/schema/app-definition-schema.js';
import { APP_DEFINITION, CustomResourceClient, SANDBOX_POOL, type AppDefinitionResource, type SandboxPoolResource } from '../../src/k8s/custom-resources.js';
import { silentLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { ClaimReserve, type WarmClaimSource } from '../../src/sandbox/claim-reserve.js';
import { OperatorWarmedPool } from '../../src/sandbox/operator-warmed-pool.js';
import { PodDriver } from '../../src/sandbox/pod-driver.js';
import type { SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { testImages, uniqueInstanceId } from '../docker/docker-env.js';
import { FAST_LEASE, appDefinition, collectingLogger } from '../k8s/fixtures.js';
import { createNamespace, installCrds, removeApps, waitFor } from '../k8s/kube-env.js';
import { importImages, requireNode } from './node-env.js';

const STATE = 'uhlp.dev/sandbox-state';
const CLAIMED_BY = 'uhlp.dev/claimed-by';
const CLAIMER_POD = 'uhlp.dev/claimer-pod';

describe('claiming warm pods ahead (pod driver, real operator)', () => {
  let kubeConfig: KubeConfig;
  let api: CoreV1Api;
  let client: CustomResourceClient;
  let namespace: { name: string; remove: () => Promise<void> };
  let operator: RunningOperator;
  let jitImage: string;
  const logger = collectingLogger();

  const pods = async (): Promise<V1Pod[]> =>
    (await api.listNamespacedPod({ namespace: namespace.name, labelSelector: 'uhlp.dev/role=sandbox,uhlp.dev/app=shop,uhlp.dev/pool=main' })).items.filter(
      (pod) => !pod.metadata?.deletionTimestamp,
    );
  const heldBy = async (instance: string): Promise<V1Pod[]> => (await pods()).filter((pod) => pod.metadata?.labels?.[CLAIMED_BY] === instance);
  const warmReady = async (): Promise<number> =>
    (await pods()).filter((pod) => pod.metadata?.labels?.[STATE] === 'warm' && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')).length;
  const scale = (replicas: number): Promise<unknown> => client.patch(SANDBOX_POOL, namespace.name, 'shop-main', { spec: { replicas } });
  /** A pod standing for a core's own pod: the operator asks only whether it exists. */
  const corePod = async (name: string): Promise<string> => {
    await api.createNamespacedPod({
      namespace: namespace.name,
      body: { metadata: { name, labels: { 'uhlp.dev/test': 'core' } }, spec: { containers: [{ name: 'core', image: jitImage, imagePullPolicy: 'Never' }] } },
    });
    return `${namespace.name}/${name}`;
  };

  /** The pool as the core and the operator both read it (the same config hash). */
  let pool: PoolSpec;
  const sandboxSpec = (): SandboxSpec => ({ appId: 'shop', pool, definitionsRoot: os.tmpdir(), labels: {} });
  const makeDriver = (instanceId: string, claimer: string): PodDriver =>
    new PodDriver({ logger: silentLogger(), instanceId, kubeConfig, namespace: namespace.name, corePod: claimer, images: { jit: jitImage } });

  beforeAll(async () => {
    kubeConfig = await requireNode();
    api = kubeConfig.makeApiClient(CoreV1Api);
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    await installCrds(kubeConfig);
    const { jitRunner } = await testImages();
    jitImage = jitRunner.reference;
    await importImages([jitImage]);
    namespace = await createNamespace(kubeConfig, 'uhlp-claim-ahead');
    operator = await runOperator({
      kubeConfig,
      namespaces: [namespace.name],
      ...FAST_LEASE,
      logger,
      metrics: createMetrics({ defaultMetrics: false }),
      sandboxPods: { images: { jit: jitImage } },
    });
    await waitFor('the operator to lead', () => operator.isLeader());
    await client.create(
      APP_DEFINITION,
      appDefinition(namespace.name, 'shop', {
        pools: [{ name: 'main', minWarm: 3, maxSize: 8 }],
        components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/hello' }, component: 'hello' }],
      }) as unknown as AppDefinitionResource,
    );
    const sandboxPool = await waitFor('the SandboxPool', () => client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main'));
    const { appName: _app, poolName, replicas: _replicas, ...settings } = sandboxPool.spec;
    pool = { name: poolName, ...settings } as PoolSpec;
    await waitFor('3 warm pods Ready', async () => (await warmReady()) >= 3, 180_000);
  }, 300_000);

  afterAll(async () => {
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
  });

  it('claims two ahead as any claim (its instance, its core pod), takes one for a request with no claim in its way, and claims again behind it', async () => {
    const instance = uniqueInstanceId('ahead');
    const claimer = await corePod(`${instance}-core`);
    const driver = makeDriver(instance, claimer);
    const owp = new OperatorWarmedPool(
      { appId: 'shop', pool, driver, sandboxSpec: sandboxSpec(), metrics: createMetrics({ defaultMetrics: false }), logger: silentLogger(), definitionsRoot: os.tmpdir() },
      { claimAhead: 2, reserveIntervalMs: 200 },
    );
    try {
      await owp.start();
      await waitFor('two pods claimed ahead', () => owp.stats().reserved === 2, 30_000);
      const reserved = await heldBy(instance);
      expect(reserved).toHaveLength(2);
      for (const pod of reserved) {
        expect(pod.metadata?.labels?.[STATE]).toBe('claimed');
        expect(pod.metadata?.labels?.['uhlp.dev/instance']).toBe(instance);
        expect(pod.metadata?.annotations?.[CLAIMER_POD]).toBe(claimer);
      }
      // The operator counts them as claimed and keeps its replicas warm beside them.
      await waitFor('3 warm pods beside the reserve', async () => (await warmReady()) >= 3, 120_000);
      const sandboxPool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
      expect(sandboxPool?.status?.busyReplicas).toBeGreaterThanOrEqual(2);

      const started = performance.now();
      const lease = await owp.acquire();
      const acquireMs = performance.now() - started;
      expect(reserved.map((pod) => pod.metadata?.name)).toContain(lease.sandbox.handle.id);
      // No API-server write on the way: a claim here takes a round trip to the API server.
      expect(acquireMs).toBeLessThan(5);
      expect(await lease.sandbox.client.probe(2000)).toBe(true);
      // A long request: the reserve's tick claims again behind it while it runs.
      await waitFor('the reserve full again', () => owp.stats().reserved === 2, 30_000);
      expect((await heldBy(instance)).length).toBe(3);
      owp.release(lease, 'ok');
      // The pod it used stays, idle, and counts toward the reserve's fill: nothing more is claimed.
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(owp.stats()).toMatchObject({ idle: 1, reserved: 2 });
      expect((await heldBy(instance)).length).toBe(3);
    } finally {
      await owp.close();
      await driver.close();
    }
    // Closed: every pod it held, in reserve or used, is warm again.
    await waitFor('nothing held', async () => (await heldBy(instance)).length === 0, 30_000);
  });

  it('holds no more in reserve than `kubectl scale sandboxpool` leaves the pool, and hands the rest back', async () => {
    const instance = uniqueInstanceId('scale');
    const claimer = await corePod(`${instance}-core`);
    const driver = makeDriver(instance, claimer);
    const reserve = new ClaimReserve({ source: driver, spec: sandboxSpec(), size: 2, room: () => 8, logger: silentLogger(), maintenanceIntervalMs: 200 });
    try {
      reserve.start();
      await waitFor('two claimed ahead', async () => reserve.size === 2 && (await heldBy(instance)).length === 2, 30_000);
      await scale(1);
      await waitFor('one claimed ahead after a scale to 1', async () => reserve.size === 1 && (await heldBy(instance)).length === 1, 30_000);
      await scale(0);
      await waitFor('none claimed ahead after a scale to 0', async () => reserve.size === 0 && (await heldBy(instance)).length === 0, 30_000);
      // And the pool has what it says: no warm pods, none held.
      await waitFor('the pool empty', async () => (await pods()).length === 0, 60_000);
    } finally {
      await reserve.close();
      await driver.close();
      await scale(3);
    }
    await waitFor('3 warm pods Ready again', async () => (await warmReady()) >= 3, 180_000);
  });

  it('leaves what a dead core held in reserve to the operator, which deletes it once the core pod is gone', async () => {
    const instance = uniqueInstanceId('dead');
    const claimer = await corePod(`${instance}-core`);
    const driver = makeDriver(instance, claimer);
    // A core that dies does nothing more: once dead, this source claims, reads and gives back nothing.
    let dead = false;
    const mortal: WarmClaimSource = {
      claimWarm: (spec) => (dead ? Promise.resolve(undefined) : driver.claimWarm(spec)),
      warmReplicas: (spec) => (dead ? 2 : driver.warmReplicas(spec)),
      destroy: (handle, cause) => (dead ? Promise.resolve() : driver.destroy(handle, cause)),
    };
    const reserve = new ClaimReserve({ source: mortal, spec: sandboxSpec(), size: 2, room: () => 8, logger: silentLogger(), maintenanceIntervalMs: 200 });
    try {
      reserve.start();
      await waitFor('two claimed ahead', async () => (await heldBy(instance)).length === 2, 30_000);
      dead = true;
      await api.deleteNamespacedPod({ name: claimer.split('/')[1]!, namespace: namespace.name, gracePeriodSeconds: 0 });
      // The operator looks at claimed pods every 5 s and deletes those whose core pod is a 404.
      await waitFor('the dead core\'s reserve deleted', async () => (await heldBy(instance)).length === 0, 60_000);
      await waitFor('3 warm pods Ready again', async () => (await warmReady()) >= 3, 180_000);
    } finally {
      await reserve.close();
      await driver.close();
    }
  });
});
