/**
 * The core serving apps that exist only as AppDefinition resources
 * (`--registry kubernetes`), against the real API server, with the operator
 * judging them and the app's files fetched from the Git source the spec names:
 * a real https Git server on loopback, which the core reaches only because its
 * configuration allows that address (UHLP_GIT_ALLOW_PRIVATE) and trusts the
 * server's certificate (UHLP_GIT_CA_FILE). Sources that are not plain data are
 * refused with the field named on the AppDefinition's status.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { startRawMcpServer, type RawMcpServer } from '../helpers/raw-mcp-server.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { FAST_LEASE, collectingLogger } from './fixtures.js';
import { createNamespace, installCrds, kubeconfigPath, loadKubeConfig, removeApps, waitFor } from './kube-env.js';

describe('core with --registry kubernetes', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  let core: UhlpProcess;
  let gitServer: HttpsGitServer;
  let sourceUrl: string;
  /** A namespace the core does not serve, holding a Secret an app of the served one names. */
  let other: { name: string; remove: () => Promise<void> };
  let remote: RawMcpServer;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-core');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger: collectingLogger() });
    const served = mkdtempSync(path.join(os.tmpdir(), 'uhlp-git-served-'));
    const repo = path.join(served, 'work');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, {
      'apps/hello/scripts/hello.js': "export default (event, ctx) => ({ hello: ctx.configuration.who, app: ctx.appId });\n",
      'apps/secret-own/scripts/call.js': "export default async (event, ctx) => ctx.tools.call('app.remote.whoami', {});\n",
    });
    commitAll(repo, 'hello app files');
    git(served, 'clone', '-q', '--bare', repo, path.join(served, 'apps.git'));
    gitServer = await startHttpsGitServer({ root: served });
    sourceUrl = `${gitServer.origin}/apps.git`;
    remote = await startRawMcpServer({ tools: [{ name: 'whoami', inputSchema: { type: 'object' } }] });
    other = await createNamespace(kubeConfig, 'uhlp-other');
    const secrets = kubeConfig.makeApiClient(CoreV1Api);
    await secrets.createNamespacedSecret({ namespace: namespace.name, body: { metadata: { name: 'search' }, stringData: { token: 'own-token' } } });
    await secrets.createNamespacedSecret({ namespace: other.name, body: { metadata: { name: 'elsewhere' }, stringData: { token: 'other-namespace-token' } } });
    core = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace.name], 60_000, undefined, {
      KUBECONFIG: kubeconfigPath(),
      UHLP_MCP_ALLOW_PRIVATE: remote.hostPort,
      UHLP_GIT_ALLOW_PRIVATE: `127.0.0.1:${gitServer.port}`,
      UHLP_GIT_CA_FILE: gitServer.caFile,
    });
  });
  afterAll(async () => {
    await core?.stop();
    await gitServer?.close();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
    await other?.remove();
    await remote?.close();
  });

  const app = (name = 'hello', git: Record<string, unknown> = { url: sourceUrl }): Record<string, unknown> => ({
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name, namespace: namespace.name },
    spec: {
      ingress: { pathPrefix: `/k8s-${name}` },
      source: { git },
      pools: [{ name: 'main', minWarm: 1 }],
      components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'scripts/hello.js' } }],
      routes: [{ http: { method: 'GET', path: '/hi' }, component: 'hello' }],
      configuration: { who: 'cluster' },
    },
  });

  it('routes to an app as soon as it becomes Ready (watched, not resynced), and stops when it is deleted', async () => {
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
    // The watch delivers it: far below the informer's 30 s resync, however loaded the machine is.
    expect(Date.now() - readyAt).toBeLessThan(10_000);
    expect(await response.json()).toEqual({ hello: 'cluster', app: 'hello' });

    await client.delete(APP_DEFINITION, namespace.name, 'hello');
    const deletedAt = Date.now();
    await waitFor('hello unroutable', async () => (await fetch(`${core.url}/k8s-hello/hi`)).status === 404);
    expect(Date.now() - deletedAt).toBeLessThan(10_000);
  });

  const ready = async (name: string): Promise<{ status?: string; reason?: string; message?: string } | undefined> =>
    (await client.get<AppDefinitionResource>(APP_DEFINITION, namespace.name, name))?.status?.conditions?.find((c) => c.type === 'Ready');

  it.each<[string, Record<string, unknown>, string]>([
    ['file-url', { url: 'file:///etc' }, 'spec.source.git.url'],
    ['local-path', { url: '/srv/apps.git' }, 'spec.source.git.url'],
    ['relative-path', { url: './apps.git' }, 'spec.source.git.url'],
    ['ext-helper', { url: 'ext::sh -c touch% /tmp/uhlp-pwned' }, 'spec.source.git.url'],
    ['option-url', { url: '-uoption' }, 'spec.source.git.url'],
    ['upload-pack-url', { url: '--upload-pack=touch /tmp/uhlp-pwned' }, 'spec.source.git.url'],
    ['plain-http', { url: 'http://git.example.com/apps.git' }, 'spec.source.git.url'],
    ['upload-pack-ref', { url: 'https://git.example.com/apps.git', ref: '--upload-pack=touch /tmp/uhlp-pwned' }, 'spec.source.git.ref'],
  ])('shows a source that is not plain data (%s) on the status: Ready=False naming the field and the code', async (name, source, field) => {
    await client.create(APP_DEFINITION, app(name, source) as unknown as AppDefinitionResource);
    const condition = await waitFor(`${name} Ready=False`, async () => {
      const found = await ready(name);
      return found?.status === 'False' ? found : undefined;
    });
    expect(condition.reason).toBe('InvalidSpec');
    expect(condition.message).toMatch(new RegExp(`^${field.replace(/\./g, '\\.')}: UHLP_GIT_SOURCE_INVALID: `));
    expect((await fetch(`${core.url}/k8s-${name}/hi`)).status).toBe(404);
    await client.delete(APP_DEFINITION, namespace.name, name);
  });

  /** An app whose remote MCP server gets a header from the Secret `secret` (key `token`). */
  const secretApp = (name: string, secret: string): Record<string, unknown> => {
    // Both apps run the same files (one source path), so that only the Secret differs.
    const base = app(name, { url: sourceUrl, path: 'apps/secret-own' }) as { spec: Record<string, unknown> };
    return {
      ...base,
      spec: {
        ...base.spec,
        components: [{ id: 'call', handler: 'JIT', pool: 'main', jit: { script: 'scripts/call.js' } }],
        routes: [{ http: { method: 'GET', path: '/call' }, component: 'call' }],
        mcpServers: [{ name: 'remote', http: { url: remote.url, headers: [{ name: 'Authorization', prefix: 'Bearer ', secretRef: { name: secret, key: 'token' } }] } }],
        capabilities: { mcp: { allow: ['app.remote.*'] } },
      },
    };
  };

  it("sends a Secret of the app's own namespace to its remote server, and refuses a Secret of another namespace at load", async () => {
    await client.create(APP_DEFINITION, secretApp('secret-own', 'search') as unknown as AppDefinitionResource);
    const answer = await waitFor('secret-own routable', async () => {
      const r = await fetch(`${core.url}/k8s-secret-own/call`);
      return r.status === 200 ? r : undefined;
    });
    expect(JSON.stringify(await answer.json())).toContain('called whoami');
    expect(remote.authorizations).toContain('Bearer own-token');

    // The Secret exists, in a namespace the app is not in: the field is a definition problem, and nothing is sent.
    await client.create(APP_DEFINITION, secretApp('secret-other', 'elsewhere') as unknown as AppDefinitionResource);
    const problem = await waitFor('secret-other refused', async () => {
      const readyz = (await (await fetch(`${core.url}/readyz`)).json()) as { definitionProblems: Array<{ file: string; path: string; reason: string }> };
      return readyz.definitionProblems.find((p) => p.file === `${namespace.name}/secret-other`);
    });
    expect(problem).toMatchObject({ path: '/spec/mcpServers/0/http/headers/0/secretRef/name' });
    expect((await fetch(`${core.url}/k8s-secret-other/call`)).status).toBe(404);
    expect(remote.authorizations).not.toContain('Bearer other-namespace-token');
    await client.delete(APP_DEFINITION, namespace.name, 'secret-own');
    await client.delete(APP_DEFINITION, namespace.name, 'secret-other');
  });

  it('does not fetch a well-formed source whose host is loopback unless the core allows that host and port', async () => {
    // A listener of its own on loopback, on a port the core does not allow: localhost resolves to
    // 127.0.0.1, which is allowed only on the Git server's port, so not one connection may reach it.
    let connections = 0;
    const listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    const port = (listener.address() as AddressInfo).port;
    try {
      await client.create(APP_DEFINITION, app('loopback', { url: `https://localhost:${port}/apps.git` }) as unknown as AppDefinitionResource);
      await waitFor('loopback Ready (the form is fine)', async () => (await ready('loopback'))?.status === 'True');
      await waitFor('the core refusing the address', () => core.stderr().includes('UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED') || core.stdout().includes('UHLP_GIT_SOURCE_ADDRESS_NOT_ALLOWED'));
      expect((await fetch(`${core.url}/k8s-loopback/hi`)).status).toBe(404);
      expect(connections).toBe(0);
      await client.delete(APP_DEFINITION, namespace.name, 'loopback');
    } finally {
      listener.close();
    }
  });
});
