/**
 * `uhlp operator --uninstall` (the chart's pre-delete hook) against a real API server,
 * with a real operator leading: it takes the operators' Lease so they stop acting,
 * deletes every SandboxPool and sandbox pod of the served namespaces, drops the
 * finalizer earlier operators held, and leaves the AppDefinitions to their owners.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, SANDBOX_POOL, type AppDefinitionResource, type SandboxPoolResource } from '../../src/k8s/custom-resources.js';
import { LEGACY_APP_FINALIZER } from '../../src/operator/app-definition-reconciler.js';
import { uninstallRelease } from '../../src/operator/release-uninstall.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { FAST_LEASE, appDefinition, collectingLogger } from './fixtures.js';
import { createNamespace, installCrds, loadKubeConfig, removeApps, waitFor } from './kube-env.js';

describe('uninstalling a release: the operators stop, their pools and sandbox pods go, the apps stay', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  const logger = collectingLogger();

  const poolNames = async (): Promise<string[]> =>
    (await client.list<SandboxPoolResource>(SANDBOX_POOL, namespace.name)).items.map((pool) => pool.metadata.name).sort();

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-uninstall');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], leaseNamespace: namespace.name, ...FAST_LEASE, logger });
    await waitFor('the operator to lead', () => operator.isLeader());
  });
  afterAll(async () => {
    await operator?.stop();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await namespace?.remove();
  });

  it('stops the leading operator, deletes the pools and sandbox pods, keeps the apps', async () => {
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'shop') as unknown as AppDefinitionResource);
    await waitFor('both pools of shop', async () => (await poolNames()).join() === 'shop-llm,shop-main');
    // A sandbox pod as the operator's --sandbox-pods keeps them (no node here: it stays Pending).
    const core = kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedPod({
      namespace: namespace.name,
      body: { metadata: { name: 'shop-main-warm', labels: { 'uhlp.dev/role': 'sandbox', 'uhlp.dev/app': 'shop' } }, spec: { containers: [{ name: 'runner', image: 'uhlp/jit-runner:0' }] } },
    });

    const log: string[] = [];
    const report = await uninstallRelease({
      kubeConfig,
      namespaces: [namespace.name],
      leaseNamespace: namespace.name,
      sandboxPods: true,
      holdSeconds: 60,
      log: (message) => log.push(message),
    });
    expect(report).toEqual({ stoppedLeader: operator.identity, deletedPools: 2, deletedPods: 1, releasedApps: 0, remaining: [] });
    expect(operator.isLeader()).toBe(false);
    expect(await poolNames()).toEqual([]);
    expect((await core.listNamespacedPod({ namespace: namespace.name, labelSelector: 'uhlp.dev/role=sandbox' })).items).toEqual([]);
    const app = await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, 'shop');
    expect(app?.metadata.finalizers ?? []).toEqual([]);

    // The operator, still running (helm deletes it next), does not lead again and re-creates nothing:
    // watched over many of its retry periods and a resync.
    const until = Date.now() + 6000;
    while (Date.now() < until) {
      expect(operator.isLeader()).toBe(false);
      expect(await poolNames()).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }, 60_000);

  it('runs again (a retried hook), and releases the finalizer an earlier operator left on an app', async () => {
    // As an operator before this one left it (put back by hand: the running one would remove it).
    await client.patch(APP_DEFINITION, namespace.name, 'shop', { metadata: { finalizers: [LEGACY_APP_FINALIZER] } });
    const report = await uninstallRelease({ kubeConfig, namespaces: [namespace.name], leaseNamespace: namespace.name, holdSeconds: 60, log: () => undefined });
    // The Lease is its own already: no leader to wait for.
    expect(report).toEqual({ stoppedLeader: '', deletedPools: 0, deletedPods: 0, releasedApps: 1, remaining: [] });
    expect((await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, 'shop'))?.metadata.finalizers ?? []).toEqual([]);
  }, 60_000);
});
