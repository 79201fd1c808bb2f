import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { FAST_LEASE, appDefinition, collectingLogger } from './fixtures.js';
import { createNamespace, removeApps, installCrds, loadKubeConfig, waitFor } from './kube-env.js';

describe('two operators on one Lease', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  const operators: RunningOperator[] = [];

  /** The field manager that last wrote the status of an app: the operator that acted. */
  const statusWriter = (name: string) =>
    waitFor(`${name} Ready`, async () => {
      const app = await client.get<AppDefinitionResource & { metadata: { managedFields?: Array<{ manager: string; subresource?: string }> } }>(
        APP_DEFINITION,
        namespace.name,
        name,
      );
      if (app?.status?.conditions?.find((c) => c.type === 'Ready')?.status !== 'True') return undefined;
      return app.metadata.managedFields?.filter((field) => field.subresource === 'status').map((field) => field.manager);
    });
  const holder = async (): Promise<string | undefined> =>
    (await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'uhlp-operator', namespace: namespace.name })).spec?.holderIdentity;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-lease');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    for (const identity of ['operator-a', 'operator-b']) {
      operators.push(await runOperator({ kubeConfig, namespaces: [namespace.name], identity, ...FAST_LEASE, logger: collectingLogger() }));
    }
  });
  afterAll(async () => {
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await Promise.all(operators.map((operator) => operator.stop()));
    await namespace?.remove();
  });

  it('one leads and acts; the other takes over when it stops', async () => {
    const leader = await waitFor('a leader', () => operators.find((operator) => operator.isLeader()));
    const follower = operators.find((operator) => operator !== leader)!;
    expect(await holder()).toBe(leader.identity);

    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'first') as unknown as AppDefinitionResource);
    expect(await statusWriter('first')).toEqual([leader.identity]);
    // Over several renewals the follower never takes the lease from a live leader.
    const renewals = new Set<string>();
    await waitFor('three lease renewals', async () => {
      const lease = await kubeConfig.makeApiClient(CoordinationV1Api).readNamespacedLease({ name: 'uhlp-operator', namespace: namespace.name });
      expect(lease.spec?.holderIdentity).toBe(leader.identity);
      expect(follower.isLeader()).toBe(false);
      renewals.add(String(lease.spec?.renewTime));
      return renewals.size >= 3;
    });

    await leader.stop();
    await waitFor('the follower to lead', () => follower.isLeader(), 10_000);
    expect(await holder()).toBe(follower.identity);
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'second') as unknown as AppDefinitionResource);
    expect(await statusWriter('second')).toEqual([follower.identity]);
  });

  it('takes over a lease whose holder stopped renewing without releasing it, once leaseDuration has passed', async () => {
    const leases = kubeConfig.makeApiClient(CoordinationV1Api);
    const renewTime = new Date().toISOString().replace(/Z$/, '000Z') as unknown as Date; // MicroTime: six digits
    await leases.createNamespacedLease({
      namespace: namespace.name,
      body: { metadata: { name: 'crashed' }, spec: { holderIdentity: 'crashed-operator', leaseDurationSeconds: 2, renewTime, acquireTime: renewTime } },
    });
    const started = Date.now();
    const successor = await runOperator({ kubeConfig, namespaces: [namespace.name], leaseName: 'crashed', identity: 'successor', ...FAST_LEASE, logger: collectingLogger() });
    operators.push(successor);
    await waitFor('the successor to lead', () => successor.isLeader(), 10_000);
    // It waited out the stale holder's leaseDuration on its own clock before taking over.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    const lease = await leases.readNamespacedLease({ name: 'crashed', namespace: namespace.name });
    expect(lease.spec).toMatchObject({ holderIdentity: 'successor', leaseTransitions: 1 });
  });
});
