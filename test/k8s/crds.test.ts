import type { KubeConfig, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, SANDBOX_POOL, apiStatus, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { newSandboxPool } from '../../src/operator/sandbox-pool-template.js';
import { appDefinition } from './fixtures.js';
import { createNamespace, installCrds, loadKubeConfig, waitFor } from './kube-env.js';

describe('uhlp CRDs on a real API server', () => {
  let kubeConfig: KubeConfig;
  let crds: V1CustomResourceDefinition[];
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    crds = await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-crds');
    client = new CustomResourceClient(kubeConfig);
  });
  afterAll(async () => {
    await namespace?.remove();
  });

  it('become Established, namespaced, with a status subresource on both and a scale subresource on SandboxPool', () => {
    const byName = new Map(crds.map((crd) => [crd.metadata!.name!, crd]));
    const app = byName.get('appdefinitions.uhlp.dev')!;
    const pool = byName.get('sandboxpools.uhlp.dev')!;
    for (const crd of [app, pool]) {
      expect(crd.spec.scope).toBe('Namespaced');
      expect(crd.status?.acceptedNames?.kind).toBe(crd.spec.names.kind);
      expect(crd.spec.versions[0]!.subresources?.status).toEqual({});
    }
    expect(app.spec.versions[0]!.subresources?.scale).toBeUndefined();
    expect(pool.spec.versions[0]!.subresources?.scale).toEqual({
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    });
  });

  it('rejects an invalid AppDefinition by its own validation, naming each field at fault', async () => {
    const invalid = appDefinition(namespace.name, 'invalid', {
      pools: [{ name: 'main', minWarm: -1 }],
      components: [{ id: 'hello', handler: 'PYTHON', pool: 'main' }],
    });
    let error: unknown;
    try {
      await client.create(APP_DEFINITION, invalid);
    } catch (caught) {
      error = caught;
    }
    expect(apiStatus(error)).toBe(422);
    const status = JSON.parse(String((error as { body?: unknown }).body)) as { message: string; details: { causes: Array<{ field: string; message: string }> } };
    expect(status.message).toContain('spec.pools[0].minWarm');
    expect(status.message).toContain('spec.components[0].handler');
    expect([...status.details.causes].sort((a, b) => a.field.localeCompare(b.field))).toEqual([
      { reason: 'FieldValueNotSupported', field: 'spec.components[0].handler', message: expect.stringContaining('Unsupported value: "PYTHON"') },
      { reason: 'FieldValueInvalid', field: 'spec.pools[0].minWarm', message: expect.stringContaining('greater than or equal to 0') },
    ]);
    expect(await client.get(APP_DEFINITION, namespace.name, 'invalid')).toBeUndefined();
  });

  it('fills schema defaults and prunes unknown fields on a valid AppDefinition', async () => {
    const valid = appDefinition(namespace.name, 'valid');
    (valid.spec as Record<string, unknown>).notAField = true;
    const created = await client.create(APP_DEFINITION, valid as unknown as AppDefinitionResource);
    expect(created.spec.deploymentMode).toBe('development');
    expect(created.spec.pools[0]).toMatchObject({ runner: 'jit', maxSize: 4, limits: { memoryMb: 128, timeoutMs: 3000 } });
    expect(created.spec).not.toHaveProperty('notAField');
  });

  it("garbage-collects a SandboxPool whose owner AppDefinition is deleted (kube-controller-manager runs)", async () => {
    // No operator here, so no finalizer: the owner reference alone must take the pool away.
    const owner = await client.create(APP_DEFINITION, appDefinition(namespace.name, 'owner') as unknown as AppDefinitionResource);
    await client.create(SANDBOX_POOL, newSandboxPool(owner, owner.spec.pools[0]!));
    await client.delete(APP_DEFINITION, namespace.name, 'owner');
    await waitFor('the owned pool to be collected', async () => (await client.get(SANDBOX_POOL, namespace.name, 'owner-main')) === undefined, 30_000);
  });
});
