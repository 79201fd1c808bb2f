/**
 * App secrets from Kubernetes (`--registry kubernetes`), against the real API
 * server: an AppDefinition names a Secret of its own namespace in spec.secrets,
 * and a web credential built from it reaches a loopback API that needs it while
 * the script never sees it; an app naming a Secret of another namespace is not
 * served, its problem naming the field; the Secret rotated is in use within the
 * stated bound, by the same warm sandbox; an app refused for a missing Secret
 * loads once the Secret is created.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SECRET_REFRESH_MS } from '../../src/apps/kubernetes/kubernetes-app-source.js';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { FAST_LEASE, collectingLogger } from './fixtures.js';
import { createNamespace, installCrds, kubeconfigPath, loadKubeConfig, removeApps, waitFor } from './kube-env.js';

/** The refresh interval and one read of the Secrets on a loaded machine. */
const ROTATION_BOUND_MS = SECRET_REFRESH_MS + 3_000;

describe('app secrets from Secrets of the app namespace', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let other: { name: string; remove: () => Promise<void> };
  let client: CustomResourceClient;
  let operator: RunningOperator;
  let core: UhlpProcess;
  let gitServer: HttpsGitServer;
  let api: http.Server;
  let apiUrl = '';
  let sourceUrl = '';
  const canaries = [`canary-${randomUUID()}`];
  let accepted = canaries[0]!;
  const secrets = (): CoreV1Api => kubeConfig.makeApiClient(CoreV1Api);

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-secrets');
    other = await createNamespace(kubeConfig, 'uhlp-secrets-other');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger: collectingLogger() });
    api = http.createServer((req, res) => {
      const ok = req.headers.authorization === `Bearer ${accepted}`;
      res.writeHead(ok ? 200 : 401, { 'content-type': 'application/json' }).end(JSON.stringify(ok ? { forecast: 'sunny' } : { error: 'unauthorized' }));
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
    const served = mkdtempSync(path.join(os.tmpdir(), 'uhlp-git-secrets-'));
    const repo = path.join(served, 'work');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, {
      'apps/weather/scripts/call.js': `let served = 0;
const MARK = 'canary-';
export default async (event, ctx) => {
  served += 1;
  const answer = await ctx.tools.call('tool.web.fetch', { url: '${apiUrl}/v1/forecast' });
  const seen = [JSON.stringify(event), JSON.stringify(ctx), JSON.stringify(process.env), JSON.stringify(answer)].some((text) => text.includes(MARK));
  return { status: answer.status, body: answer.body, seen, served, pid: process.pid };
};
`,
    });
    commitAll(repo, 'weather app files');
    git(served, 'clone', '-q', '--bare', repo, path.join(served, 'apps.git'));
    gitServer = await startHttpsGitServer({ root: served });
    sourceUrl = `${gitServer.origin}/apps.git`;
    await secrets().createNamespacedSecret({ namespace: namespace.name, body: { metadata: { name: 'weather-key' }, stringData: { token: canaries[0]! } } });
    await secrets().createNamespacedSecret({ namespace: other.name, body: { metadata: { name: 'elsewhere' }, stringData: { token: `canary-${randomUUID()}` } } });
    core = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace.name], 60_000, undefined, {
      KUBECONFIG: kubeconfigPath(),
      UHLP_GIT_ALLOW_PRIVATE: `127.0.0.1:${gitServer.port}`,
      UHLP_GIT_CA_FILE: gitServer.caFile,
    });
  }, 120_000);

  afterAll(async () => {
    await core?.stop();
    await gitServer?.close();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
    await other?.remove();
    await new Promise((resolve) => api?.close(resolve));
  });

  const app = (name: string, secret: string): AppDefinitionResource =>
    ({
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name, namespace: namespace.name },
      spec: {
        ingress: { pathPrefix: `/k8s-${name}` },
        source: { git: { url: sourceUrl, path: 'apps/weather' } },
        // One sandbox serves every call: rotation must reach it warm.
        pools: [{ name: 'main', minWarm: 1, maxSize: 1 }],
        components: [{ id: 'call', handler: 'JIT', pool: 'main', jit: { script: 'scripts/call.js' } }],
        routes: [{ http: { method: 'GET', path: '/call' }, component: 'call' }],
        secrets: [{ name: secret }],
        capabilities: {
          web: {
            allowHosts: ['127.0.0.1'],
            allowPrivate: [apiUrl.slice('http://'.length)],
            inject: [{ url: `${apiUrl}/v1/`, header: 'Authorization', scheme: 'bearer', secretRef: { name: secret, key: 'token' } }],
          },
        },
      },
    }) as unknown as AppDefinitionResource;

  const call = async (name: string): Promise<{ status: number; json: Record<string, unknown>; text: string }> => {
    const response = await fetch(`${core.url}/k8s-${name}/call`);
    const text = await response.text();
    return { status: response.status, json: response.status === 200 ? (JSON.parse(text) as Record<string, unknown>) : {}, text };
  };

  it("adds the app's own Secret at egress, and the script never sees it", async () => {
    await client.create(APP_DEFINITION, app('weather', 'weather-key'));
    const answer = await waitFor('weather routable', async () => {
      const r = await call('weather');
      return r.status === 200 ? r : undefined;
    }, 60_000);
    expect(answer.json).toMatchObject({ status: 200, body: JSON.stringify({ forecast: 'sunny' }), seen: false });
  });

  it('does not serve an app naming a Secret of another namespace, naming the field', async () => {
    await client.create(APP_DEFINITION, app('thief', 'elsewhere'));
    const problem = await waitFor('thief refused', async () => {
      const readyz = (await (await fetch(`${core.url}/readyz`)).json()) as { definitionProblems: Array<{ file: string; path: string; reason: string }> };
      return readyz.definitionProblems.find((p) => p.file === `${namespace.name}/thief`);
    }, 60_000);
    expect(problem).toMatchObject({ path: '/spec/secrets/0/name' });
    expect((await call('thief')).status).toBe(404);
  });

  it(`uses the rotated Secret within ${ROTATION_BOUND_MS / 1000} s, in the same warm sandbox`, async () => {
    const before = await call('weather');
    expect(before.json).toMatchObject({ status: 200 });
    const next = `canary-${randomUUID()}`;
    canaries.push(next);
    accepted = next;
    const rotated = Date.now();
    await secrets().replaceNamespacedSecret({ name: 'weather-key', namespace: namespace.name, body: { metadata: { name: 'weather-key' }, stringData: { token: next } } });
    let after = await call('weather');
    while ((after.json as { status?: number }).status !== 200) {
      if (Date.now() - rotated > ROTATION_BOUND_MS) throw new Error(`the rotated Secret was not in use within ${ROTATION_BOUND_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      after = await call('weather');
    }
    const tookMs = Date.now() - rotated;
    console.log(`rotated Secret in use after ${tookMs} ms (Secrets read every ${SECRET_REFRESH_MS} ms)`);
    expect(after.json).toMatchObject({ seen: false });
    expect((after.json as { served: number }).served).toBeGreaterThan((before.json as { served: number }).served);
    expect((after.json as { pid: number }).pid).toBe((before.json as { pid: number }).pid);
  });

  // The Secret is seen at the next read (every SECRET_REFRESH_MS); then every app is judged again and the new one's pool starts.
  it(`loads an app refused for a missing Secret within ${(ROTATION_BOUND_MS + 20_000) / 1000} s of the Secret's creation`, async () => {
    await client.create(APP_DEFINITION, app('late', 'late-key'));
    const problem = await waitFor('late refused', async () => {
      const readyz = (await (await fetch(`${core.url}/readyz`)).json()) as { definitionProblems: Array<{ file: string; path: string }> };
      return readyz.definitionProblems.find((p) => p.file === `${namespace.name}/late`);
    }, 60_000);
    expect(problem).toMatchObject({ path: '/spec/secrets/0/name' });
    console.log('the app is refused for its missing Secret');
    const created = Date.now();
    await secrets().createNamespacedSecret({ namespace: namespace.name, body: { metadata: { name: 'late-key' }, stringData: { token: accepted } } });
    let answer = await call('late');
    while (answer.status !== 200) {
      if (Date.now() - created > ROTATION_BOUND_MS + 20_000) throw new Error(`the refused app did not load after its Secret was created:\n${core.stderr().slice(-3000)}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      answer = await call('late');
    }
    console.log(`the refused app loaded ${Date.now() - created} ms after its Secret was created (Secrets read every ${SECRET_REFRESH_MS} ms)`);
    expect(answer.json).toMatchObject({ status: 200, body: JSON.stringify({ forecast: 'sunny' }), seen: false });
  }, 150_000);

  it('leaves no value in the log, the answers or the data directory', async () => {
    const texts = [core.stderr(), core.stdout(), (await call('weather')).text, await (await fetch(`${core.url}/readyz`)).text()];
    for (const canary of canaries) expect(texts.filter((text) => text.includes(canary))).toEqual([]);
  });
});
