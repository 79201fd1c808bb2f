import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { AppDefinitionWatcher, type ReadyAppDefinition } from '../../src/apps/kubernetes/app-definition-watcher.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { FAST_LEASE, appDefinition, collectingLogger } from './fixtures.js';
import { createNamespace, removeApps, installCrds, loadKubeConfig, waitFor } from './kube-env.js';

describe('AppDefinitionWatcher against a real API server', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let other: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  let watcher: AppDefinitionWatcher;
  const emitted: ReadyAppDefinition[][] = [];
  const names = (apps: ReadyAppDefinition[]): string[] => apps.map((app) => `${app.namespace}/${app.name}`);

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-watch');
    other = await createNamespace(kubeConfig, 'uhlp-watch-other');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name, other.name], ...FAST_LEASE, logger: collectingLogger() });
    watcher = new AppDefinitionWatcher(kubeConfig, { namespaces: [namespace.name] });
    watcher.onChange((apps) => emitted.push(apps));
    await watcher.start();
  });
  afterAll(async () => {
    if (namespace) await removeApps(kubeConfig, namespace.name);
    if (other) await removeApps(kubeConfig, other.name);
    await watcher?.stop();
    await operator?.stop();
    await Promise.all([namespace?.remove(), other?.remove()]);
  });

  it('starts with the current (empty) set', () => {
    expect(emitted).toEqual([[]]);
  });

  it('emits an app once the operator marks it Ready, with its spec and resourceVersion; never an invalid one or one outside its namespaces', async () => {
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'broken', { routes: [{ component: 'nope' }] }) as unknown as AppDefinitionResource);
    await client.create(APP_DEFINITION, appDefinition(other.name, 'elsewhere') as unknown as AppDefinitionResource);
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'shop') as unknown as AppDefinitionResource);
    const apps = await waitFor('shop in the set', () => (names(watcher.current()).includes(`${namespace.name}/shop`) ? watcher.current() : undefined));
    expect(names(apps)).toEqual([`${namespace.name}/shop`]);
    const shop = apps[0]!;
    expect(shop.spec.routes.map((route) => route.component)).toEqual(['hello', 'chat']);
    const live = await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, 'shop');
    expect(shop.generation).toBe(live!.metadata.generation);
    expect(shop.resourceVersion).not.toBe('');
    // broken is Ready=False by now or soon; it must never have been emitted.
    await waitFor('broken Ready=False', async () => (await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, 'broken'))?.status?.conditions?.[0]?.status === 'False');
    expect(emitted.flatMap(names)).not.toContain(`${namespace.name}/broken`);
    expect(emitted.flatMap(names)).not.toContain(`${other.name}/elsewhere`);
  });

  it('emits the new spec after a change is Ready, and drops the app when it is deleted', async () => {
    await client.patch(APP_DEFINITION, namespace.name, 'shop', { spec: { routes: [{ http: { method: 'GET', path: '/hi' }, component: 'hello' }] } });
    await waitFor('the changed routes', () => watcher.current().find((app) => app.name === 'shop')?.spec.routes.length === 1);
    await client.delete(APP_DEFINITION, namespace.name, 'shop');
    await waitFor('shop to leave the set', () => watcher.current().length === 0);
    expect(emitted.at(-1)).toEqual([]);
  });

  it('keeps the last Ready spec of an edited app until its new generation is judged', async () => {
    // A namespace no operator watches: this test writes the status verdicts itself.
    const manual = await createNamespace(kubeConfig, 'uhlp-watch-manual');
    const own = new AppDefinitionWatcher(kubeConfig, { namespaces: [manual.name] });
    await own.start();
    try {
      const app = await client.create(APP_DEFINITION, appDefinition(manual.name, 'edited') as unknown as AppDefinitionResource);
      const verdict = (generation: number, status: 'True' | 'False') =>
        client.patchStatus(APP_DEFINITION, manual.name, 'edited', {
          observedGeneration: generation,
          conditions: [{ type: 'Ready', status, reason: 'Test', message: '', lastTransitionTime: '2026-01-01T00:00:00Z', observedGeneration: generation }],
        });
      await verdict(app.metadata.generation!, 'True');
      await waitFor('edited in the set', () => own.current().length === 1);

      await client.patch(APP_DEFINITION, manual.name, 'edited', { spec: { routes: [] } });
      // Watch events arrive in order: once a sentinel created after the edit is in the set,
      // the watcher has seen the edit too.
      const sentinel = await client.create(APP_DEFINITION, appDefinition(manual.name, 'sentinel') as unknown as AppDefinitionResource);
      await client.patchStatus(APP_DEFINITION, manual.name, 'sentinel', {
        observedGeneration: sentinel.metadata.generation,
        conditions: [{ type: 'Ready', status: 'True', reason: 'Test', message: '', lastTransitionTime: '2026-01-01T00:00:00Z' }],
      });
      await waitFor('the sentinel in the set', () => own.current().some((entry) => entry.name === 'sentinel'));
      const during = own.current().find((entry) => entry.name === 'edited');
      expect(during?.generation).toBe(1);
      expect(during?.spec.routes).toHaveLength(2);

      await verdict(2, 'False');
      await waitFor('edited to leave the set once judged not Ready', () => own.current().every((entry) => entry.name !== 'edited'));
    } finally {
      await own.stop();
      await client.delete(APP_DEFINITION, manual.name, 'edited');
      await client.delete(APP_DEFINITION, manual.name, 'sentinel');
      await manual.remove();
    }
  });
});
