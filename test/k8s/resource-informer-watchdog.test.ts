/**
 * A watch whose connection goes quiet without ending (a relay or NAT in between
 * dropped it) must heal: the informer starts quiet watches again. A TCP relay on
 * loopback stands between the informer and the real API server; freezing it stops
 * every byte on the connections open at that moment, while new ones pass.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { ResourceInformer } from '../../src/k8s/resource-informer.js';
import { startApiRelay, type ApiRelay } from './api-relay.js';
import { appDefinition } from './fixtures.js';
import { createNamespace, installCrds, loadKubeConfig, waitFor } from './kube-env.js';

describe('ResourceInformer against a real API server behind a relay that goes quiet', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let relay: ApiRelay;
  let informer: ResourceInformer<AppDefinitionResource> | undefined;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-quiet-watch');
    relay = await startApiRelay(new URL(kubeConfig.getCurrentCluster()!.server));
  });
  afterAll(async () => {
    await informer?.stop();
    await relay?.close();
    await namespace?.remove();
  });

  /** The kube config, with the API server reached through the relay. */
  function viaRelay(): KubeConfig {
    return relay.kubeConfig(loadKubeConfig());
  }

  it('sees a change made after its watch connection went quiet, by watching again', async () => {
    informer = new ResourceInformer<AppDefinitionResource>(viaRelay(), APP_DEFINITION, { namespaces: [namespace.name], rewatchAfterMs: 2_000, resyncPeriodMs: 0 });
    const seen = new Set<string>();
    informer.on((_event, object) => seen.add(object.metadata.name));
    await informer.start();

    const client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'before') as unknown as AppDefinitionResource);
    await waitFor('the first app through the live watch', () => seen.has('before'));

    relay.freeze();
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'after') as unknown as AppDefinitionResource);
    // The frozen watch never delivers it; only a new watch does, once the old one was quiet for 2 s.
    await waitFor('the second app after the quiet watch was started again', () => seen.has('after'), 20_000);
    expect(informer.get(namespace.name, 'after')?.metadata.name).toBe('after');
  });

  it('reports itself not live while a restarted watch cannot get back, and live again once it is', async () => {
    await informer?.stop();
    const watched = new ResourceInformer<AppDefinitionResource>(viaRelay(), APP_DEFINITION, {
      namespaces: [namespace.name],
      rewatchAfterMs: 1_000,
      restartGraceMs: 1_000,
      resyncPeriodMs: 0,
    });
    informer = watched;
    expect(watched.liveness().live).toBe(false);
    await watched.start();
    expect(watched.liveness()).toEqual({ live: true, synced: true });

    // Every connection, open or new, hangs: the quiet watch is restarted and its restart never answers.
    relay.freeze();
    relay.block();
    const down = await waitFor('liveness false', () => {
      const liveness = watched.liveness();
      return liveness.live ? undefined : liveness;
    }, 20_000);
    expect(down.reason).toMatch(/restarted|failed/);

    relay.unblock();
    // The next watchdog round (or the failed list's retry) gets through.
    await waitFor('liveness true again', () => watched.liveness().live, 60_000);
  }, 90_000);
});
