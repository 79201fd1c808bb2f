/**
 * The core serving apps that exist only as AppDefinition resources
 * (`--registry kubernetes`), against the real API server, with the operator
 * judging them and the app's files fetched from the Git source the spec names.
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { commitAll, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { FAST_LEASE, collectingLogger } from './fixtures.js';
import { createNamespace, installCrds, kubeconfigPath, loadKubeConfig, removeApps, waitFor } from './kube-env.js';

describe('core with --registry kubernetes', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  let core: UhlpProcess;
  let sourceUrl: string;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-core');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger: collectingLogger() });
    const repo = initRepo(mkdtempSync(path.join(os.tmpdir(), 'uhlp-src-')));
    writeFiles(repo, { 'apps/hello/scripts/hello.js': "export default (event, ctx) => ({ hello: ctx.configuration.who, app: ctx.appId });\n" });
    commitAll(repo, 'hello app files');
    sourceUrl = `file://${repo}`;
    core = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace.name], 60_000, undefined, { KUBECONFIG: kubeconfigPath() });
  });
  afterAll(async () => {
    await core?.stop();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
  });

  const app = (): Record<string, unknown> => ({
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name: 'hello', namespace: namespace.name },
    spec: {
      ingress: { pathPrefix: '/k8s-hello' },
      source: { git: { url: sourceUrl } },
      pools: [{ name: 'main', minWarm: 1 }],
      components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'scripts/hello.js' } }],
      routes: [{ http: { method: 'GET', path: '/hi' }, component: 'hello' }],
      configuration: { who: 'cluster' },
    },
  });

  it('routes to an app within a second of it becoming Ready, and stops when it is deleted', async () => {
    expect((await fetch(`${core.url}/k8s-hello/hi`)).status).toBe(404);
    await client.create(APP_DEFINITION, app() as unknown as AppDefinitionResource);
    await waitFor('hello Ready', async () => {
      const resource = await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, 'hello');
      return resource?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
    });
    const readyAt = Date.now();
    const response = await waitFor('hello routable', async () => {
      const r = await fetch(`${core.url}/k8s-hello/hi`);
      return r.status === 200 ? r : undefined;
    });
    expect(Date.now() - readyAt).toBeLessThan(1000);
    expect(await response.json()).toEqual({ hello: 'cluster', app: 'hello' });

    await client.delete(APP_DEFINITION, namespace.name, 'hello');
    const deletedAt = Date.now();
    await waitFor('hello unroutable', async () => (await fetch(`${core.url}/k8s-hello/hi`)).status === 404);
    expect(Date.now() - deletedAt).toBeLessThan(5000);
  });
});
