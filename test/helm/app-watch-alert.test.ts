/**
 * A control-plane outage as a core serving AppDefinitions (`--registry kubernetes`) lives
 * it, on a real Prometheus with the chart's alert rules: the core reaches the real API
 * server through a relay that is then cut (open connections reset, new ones refused).
 * The core keeps serving the app it last listed and stays ready, while
 * uhlp_app_watch_up drops to 0 and UhlpAppWatchDown goes pending; once the relay is
 * back, the watch follows again and the alert clears.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { startPrometheus, type PrometheusServer } from '../helpers/prometheus-server.js';
import { REPO_ROOT, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { startApiRelay, type ApiRelay } from '../k8s/api-relay.js';
import { FAST_LEASE, collectingLogger } from '../k8s/fixtures.js';
import { createNamespace, installCrds, loadKubeConfig, removeApps, waitFor } from '../k8s/kube-env.js';

const RULES_FILE = path.join(REPO_ROOT, 'charts', 'uhlp', 'files', 'alert-rules.yaml');

describe('the API server away: the core serves on and stays ready, UhlpAppWatchDown tells', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let operator: RunningOperator;
  let relay: ApiRelay;
  let gitServer: HttpsGitServer;
  let core: UhlpProcess;
  let prometheus: PrometheusServer;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-app-watch-'));

  const readyz = async (): Promise<{ status: number; body: { status: string; appWatch?: { live: boolean; synced: boolean; reason?: string } } }> => {
    const response = await fetch(`${core.url}/readyz`);
    return { status: response.status, body: (await response.json()) as never };
  };
  const hello = async (): Promise<number> => (await fetch(`${core.url}/watched/hi`)).status;
  const watchUp = async (): Promise<string | undefined> => (await prometheus.query('uhlp_app_watch_up'))[0]?.value[1];
  const watchAlert = async (): Promise<string | undefined> => (await prometheus.alerts()).find((alert) => alert.labels.alertname === 'UhlpAppWatchDown')?.state;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-app-watch');
    operator = await runOperator({ kubeConfig, namespaces: [namespace.name], ...FAST_LEASE, logger: collectingLogger() });

    // The app's files, from an https Git server on loopback.
    const repo = path.join(dir, 'work');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, { 'apps/watched/scripts/hello.js': "export default () => ({ hello: 'watched' });\n" });
    commitAll(repo, 'app files');
    git(dir, 'clone', '-q', '--bare', repo, path.join(dir, 'apps.git'));
    gitServer = await startHttpsGitServer({ root: dir });

    // The core reaches the API server only through the relay.
    relay = await startApiRelay(new URL(kubeConfig.getCurrentCluster()!.server));
    const viaRelay = path.join(dir, 'kubeconfig');
    writeFileSync(viaRelay, relay.kubeConfig(kubeConfig).exportConfig());
    core = await startUhlpDev('', ['--registry', 'kubernetes', '--namespace', namespace.name], 60_000, undefined, {
      KUBECONFIG: viaRelay,
      UHLP_GIT_ALLOW_PRIVATE: `127.0.0.1:${gitServer.port}`,
      UHLP_GIT_CA_FILE: gitServer.caFile,
    });
    await new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' }).create(APP_DEFINITION, {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'AppDefinition',
      metadata: { name: 'watched', namespace: namespace.name },
      spec: {
        ingress: { pathPrefix: '/watched' },
        source: { git: { url: `${gitServer.origin}/apps.git` } },
        pools: [{ name: 'main', minWarm: 1 }],
        components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'scripts/hello.js' } }],
        routes: [{ http: { method: 'GET', path: '/hi' }, component: 'hello' }],
      },
    } as unknown as AppDefinitionResource);
    await waitFor('the app served', async () => (await hello()) === 200, 60_000);

    prometheus = await startPrometheus({ ruleFiles: [RULES_FILE], targets: [{ job: 'uhlp-core', address: new URL(core.url).host, labels: { namespace: namespace.name } }] });
  }, 180_000);

  afterAll(async () => {
    relay?.restore();
    await prometheus?.stop();
    await core?.stop();
    await relay?.close();
    await gitServer?.close();
    if (namespace) await removeApps(kubeConfig, namespace.name);
    await operator?.stop();
    await namespace?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reports a live watch while the API server is there', async () => {
    await waitFor('uhlp_app_watch_up 1 in Prometheus', async () => (await watchUp()) === '1', 30_000);
    expect(await readyz()).toMatchObject({ status: 200, body: { status: 'ready', appWatch: { live: true, synced: true } } });
    expect(await watchAlert()).toBeUndefined();
  });

  it('serves and stays ready without the API server, while the metric and the alert tell', async () => {
    relay.cut();
    const answers: number[] = [];
    const readiness: number[] = [];
    // Until the alert goes pending: the watch is reported down past its restart grace (10 s), then scraped.
    await waitFor(
      'UhlpAppWatchDown pending',
      async () => {
        answers.push(await hello());
        readiness.push((await readyz()).status);
        return (await watchAlert()) !== undefined;
      },
      90_000,
    );
    expect(await watchUp()).toBe('0');
    const { status, body } = await readyz();
    expect(status).toBe(200);
    expect(body.appWatch).toMatchObject({ live: false, synced: true, reason: expect.stringMatching(/watch failed/) });
    expect(answers.length).toBeGreaterThan(5);
    expect(answers.every((answer) => answer === 200)).toBe(true);
    expect(readiness.every((answer) => answer === 200)).toBe(true);
  }, 120_000);

  it('follows the API server again once it is back, and the alert clears', async () => {
    relay.restore();
    await waitFor('uhlp_app_watch_up 1 again', async () => (await watchUp()) === '1', 90_000);
    await waitFor('UhlpAppWatchDown gone', async () => (await watchAlert()) === undefined, 30_000);
    expect((await readyz()).body.appWatch).toMatchObject({ live: true, synced: true });
    expect(await hello()).toBe(200);
  }, 150_000);
});
