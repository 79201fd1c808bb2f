import { AutoscalingV2Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APP_DEFINITION,
  CustomResourceClient,
  SANDBOX_POOL,
  type AppDefinitionResource,
  type SandboxPoolResource,
} from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { createMetrics } from '../../src/metrics.js';
import { LEGACY_APP_FINALIZER } from '../../src/operator/app-definition-reconciler.js';
import { FAST_LEASE, appDefinition, collectingLogger } from './fixtures.js';
import { createNamespace, removeApps, installCrds, kubectl, loadKubeConfig, waitFor } from './kube-env.js';

describe('the operator against a real API server', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  const logger = collectingLogger();
  const metrics = createMetrics({ defaultMetrics: false });

  const ready = (name: string, status: 'True' | 'False') =>
    waitFor(`AppDefinition ${name} Ready=${status}`, async () => {
      const app = await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, name);
      const condition = app?.status?.conditions?.find((c) => c.type === 'Ready');
      return condition?.status === status && app!.status!.observedGeneration === app!.metadata.generation ? app : undefined;
    });
  const pools = async (app: string): Promise<SandboxPoolResource[]> =>
    (await client.list<SandboxPoolResource>(SANDBOX_POOL, namespace.name, `uhlp.dev/app=${app}`)).items;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-operator');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger, metrics });
    await waitFor('the only operator to lead', () => operator.isLeader());
  });
  afterAll(async () => {
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
  });

  it('brings a valid AppDefinition to Ready and creates one owned SandboxPool per pool', async () => {
    const created = await client.create(APP_DEFINITION, appDefinition(namespace.name, 'shop') as unknown as AppDefinitionResource);
    const app = await ready('shop', 'True');
    // No finalizer: the pools are owned by the app, and go with it even when no operator runs.
    expect(app.metadata.finalizers ?? []).toEqual([]);
    expect(app.status?.pools).toEqual(['shop-llm', 'shop-main']);
    expect(app.status?.conditions?.[0]).toMatchObject({ reason: 'Reconciled', observedGeneration: app.metadata.generation });

    const main = await waitFor('shop-main to report its replicas', async () => {
      const pool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
      return pool?.status?.replicas !== undefined ? pool : undefined;
    });
    expect(main.metadata.ownerReferences).toEqual([
      { apiVersion: 'uhlp.dev/v1alpha1', kind: 'AppDefinition', name: 'shop', uid: created.metadata.uid, controller: true, blockOwnerDeletion: true },
    ]);
    expect(main.spec).toMatchObject({ appName: 'shop', poolName: 'main', runner: 'jit', replicas: 1, minWarm: 1, maxSize: 4 });
    expect(main.status).toMatchObject({ replicas: 1, selector: 'uhlp.dev/app=shop,uhlp.dev/pool=main', observedGeneration: main.metadata.generation });
    expect((await pools('shop')).map((pool) => pool.metadata.name).sort()).toEqual(['shop-llm', 'shop-main']);

    // What the operator wrote of the app: its status, never the spec.
    const managed = (app.metadata as { managedFields?: Array<{ manager: string; subresource?: string; fieldsV1?: Record<string, unknown> }> }).managedFields ?? [];
    const byOperator = managed.filter((entry) => entry.manager === operator.identity);
    expect(byOperator.map((entry) => entry.subresource ?? 'main').sort()).toEqual(['status']);

    expect((await metrics.operatorLeader.get()).values[0]?.value).toBe(1);
    const reconciles = (await metrics.operatorReconciles.get()).values;
    expect(reconciles.find((v) => v.labels.kind === 'appdefinition' && v.labels.outcome === 'ok')?.value).toBeGreaterThan(0);
  });

  it('reports dangling references as Ready=False naming them, and Ready once they are fixed', async () => {
    await client.create(
      APP_DEFINITION,
      appDefinition(namespace.name, 'dangling', {
        components: [{ id: 'hello', handler: 'JIT', pool: 'gpu', jit: { script: 'hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/' }, component: 'nope' }],
      }) as unknown as AppDefinitionResource,
    );
    const app = await ready('dangling', 'False');
    const condition = app.status!.conditions!.find((c) => c.type === 'Ready')!;
    expect(condition.reason).toBe('InvalidSpec');
    expect(condition.message).toContain('spec.components[0].pool: pool "gpu" is not declared in spec.pools');
    expect(condition.message).toContain('spec.routes[0].component: component "nope" is not declared in spec.components');
    expect(await pools('dangling')).toEqual([]);

    await client.patch(APP_DEFINITION, namespace.name, 'dangling', { spec: { routes: [{ http: { method: 'GET', path: '/' }, component: 'hello' }], components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'hello.js' } }] } });
    await ready('dangling', 'True');
  });

  it('`kubectl scale sandboxpool` changes the pool, and an app change keeps the scaled count', async () => {
    await waitFor('shop-main', () => client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main'));
    await kubectl(['-n', namespace.name, 'scale', 'sandboxpool', 'shop-main', '--replicas=3']);
    const scaled = await waitFor('shop-main held at 3', async () => {
      const pool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
      return pool?.status?.replicas === 3 ? pool : undefined;
    });
    expect(scaled.spec.replicas).toBe(3);
    expect(await kubectl(['-n', namespace.name, 'get', 'sandboxpool', 'shop-main', '--subresource=scale', '-o', 'jsonpath={.status.replicas} {.status.selector}'])).toBe(
      '3 uhlp.dev/app=shop,uhlp.dev/pool=main',
    );

    // A change of maxSize is mirrored; the scaled replicas stay (only a minWarm change resets them).
    await client.patch(APP_DEFINITION, namespace.name, 'shop', { spec: { pools: [{ name: 'main', minWarm: 1, maxSize: 2 }, { name: 'llm', runner: 'llm', minWarm: 0, maxSize: 2 }] } });
    const capped = await waitFor('shop-main capped at maxSize 2', async () => {
      const pool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
      return pool?.spec.maxSize === 2 && pool.status?.replicas === 2 ? pool : undefined;
    });
    expect(capped.spec.replicas).toBe(3);
    expect(capped.status?.conditions?.[0]).toMatchObject({ reason: 'CappedAtMaxSize' });
  });

  it('a HorizontalPodAutoscaler drives a pool through its scale subresource', async () => {
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'auto', { pools: [{ name: 'main', minWarm: 1, maxSize: 5 }, { name: 'llm', runner: 'llm', minWarm: 0, maxSize: 2 }] }) as unknown as AppDefinitionResource);
    await waitFor('auto-main at 1', async () => (await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'auto-main'))?.status?.replicas === 1);
    // No metrics server here: the autoscaler's replica bounds apply without metrics, which is what this checks.
    const autoscaling = kubeConfig.makeApiClient(AutoscalingV2Api);
    await autoscaling.createNamespacedHorizontalPodAutoscaler({
      namespace: namespace.name,
      body: {
        metadata: { name: 'auto-main' },
        spec: {
          scaleTargetRef: { apiVersion: 'uhlp.dev/v1alpha1', kind: 'SandboxPool', name: 'auto-main' },
          minReplicas: 3,
          maxReplicas: 4,
          metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } } }],
        },
      },
    });
    try {
      const scaled = await waitFor(
        'the autoscaler to raise auto-main to its minimum of 3',
        async () => {
          const pool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'auto-main');
          return pool?.spec.replicas === 3 && pool.status?.replicas === 3 ? pool : undefined;
        },
        60_000,
      );
      expect(scaled.status?.selector).toBe('uhlp.dev/app=auto,uhlp.dev/pool=main');
    } finally {
      await autoscaling.deleteNamespacedHorizontalPodAutoscaler({ namespace: namespace.name, name: 'auto-main' });
    }
  });

  it('deletes the SandboxPools of pools the app no longer declares, and recreates one deleted by hand', async () => {
    await client.patch(APP_DEFINITION, namespace.name, 'shop', { spec: { pools: [{ name: 'main', minWarm: 1, maxSize: 2 }], components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'hello.js' } }], routes: [] } });
    await waitFor('shop-llm to be deleted', async () => (await pools('shop')).map((p) => p.metadata.name).join() === 'shop-main');
    expect((await ready('shop', 'True')).status?.pools).toEqual(['shop-main']);

    const before = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
    await client.delete(SANDBOX_POOL, namespace.name, 'shop-main');
    await waitFor('shop-main to be recreated', async () => {
      const pool = await client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'shop-main');
      return pool !== undefined && pool.metadata.uid !== before!.metadata.uid;
    });
  });

  it('removes the finalizer an earlier operator put on an app, keeping the others', async () => {
    await client.create(APP_DEFINITION, {
      ...(appDefinition(namespace.name, 'legacy') as unknown as AppDefinitionResource),
      metadata: { name: 'legacy', namespace: namespace.name, finalizers: [LEGACY_APP_FINALIZER, 'example.com/keep'] },
    });
    const app = await ready('legacy', 'True');
    expect(app.metadata.finalizers).toEqual(['example.com/keep']);
    await client.patch(APP_DEFINITION, namespace.name, 'legacy', { metadata: { finalizers: null } });
    await client.delete(APP_DEFINITION, namespace.name, 'legacy');
  });

  it('deleting the app removes its pools, then the app', async () => {
    await client.delete(APP_DEFINITION, namespace.name, 'shop');
    await waitFor('shop and its pools to be gone', async () =>
      (await client.get(APP_DEFINITION, namespace.name, 'shop')) === undefined && (await pools('shop')).length === 0,
    );
  });
});
