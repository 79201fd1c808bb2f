/**
 * The Grafana dashboard and the alert rules against a real Prometheus (Debian's, started
 * here on loopback and stopped by pid): it scrapes a real core (`uhlp dev` on Redis) and a
 * real operator (against the API server of scripts/k8s-env.sh) while a short load runs,
 * then every PromQL expression of every panel, and every variable query, is evaluated
 * through Prometheus's HTTP API and must return data. The alert rules load with
 * `promtool check rules` and are evaluated by the same Prometheus without error, and
 * what the core and the operator export passes `promtool check metrics`.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { VARIABLES, dashboardQueries } from '../../src/chart/uhlp-dashboard.js';
import { ALERT_RULES } from '../../src/chart/alert-rules.js';
import { freePort } from '../helpers/free-port.js';
import { startPrometheus, type PrometheusResult, type PrometheusServer } from '../helpers/prometheus-server.js';
import { copyFixture, REPO_ROOT, startUhlpDev, UHLP_BIN, type UhlpProcess } from '../helpers/uhlp-process.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { waitFor } from '../helpers/wait-for.js';
import { appDefinition } from '../k8s/fixtures.js';
import { createNamespace, installCrds, kubeconfigPath, loadKubeConfig, removeApps } from '../k8s/kube-env.js';

const run = promisify(execFile);
const RULES_FILE = path.join(REPO_ROOT, 'charts', 'uhlp', 'files', 'alert-rules.yaml');
/** What the dashboard's variables are with "All" selected, and a window that covers the whole load. */
const SUBSTITUTIONS: Record<string, string> = { $namespace: '.*', $app: '.*', $component: '.*', $pool: '.*', $__rate_interval: '1m' };

function substitute(expr: string): string {
  return expr.replace(/\$[_a-z]+/g, (name) => SUBSTITUTIONS[name] ?? name);
}

type PromResult = PrometheusResult;

describe('the dashboard on a real Prometheus scraping a real core and operator', () => {
  let core: UhlpProcess;
  let operator: ChildProcess;
  let prometheus: PrometheusServer;
  let promUrl: string;
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let operatorLog = '';
  let operatorPort: number;

  const query = (expr: string): Promise<PromResult[]> => prometheus.query(expr);

  beforeAll(async () => {
    // The operator, with something to reconcile.
    kubeConfig = loadKubeConfig();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-dashboard');
    operatorPort = await freePort();
    operator = spawn(process.execPath, [UHLP_BIN, 'operator', '--namespace', namespace.name, '--metrics-port', String(operatorPort)], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, KUBECONFIG: kubeconfigPath() },
    });
    operator.stderr!.on('data', (chunk: Buffer) => (operatorLog += chunk.toString()));
    const client = new CustomResourceClient(kubeConfig);
    await client.create(APP_DEFINITION, appDefinition(namespace.name, 'watched') as unknown as AppDefinitionResource);

    // The core, on Redis (so the state probe reports a real store), with the load's apps.
    core = await startUhlpDev(copyFixture('dashboard'), ['--state', TEST_REDIS_URL], 60_000, undefined, {
      UHLP_STATE_PREFIX: uniqueKeyPrefix('dashboard').replace(/:$/, ''),
      UHLP_LLM_SCRIPT_FILE: path.join(REPO_ROOT, 'test', 'fixtures', 'dashboard', 'llm-answers.yaml'),
    });

    // Prometheus on loopback, scraping both every second; `namespace` is what a ServiceMonitor adds.
    prometheus = await startPrometheus({
      ruleFiles: [RULES_FILE],
      targets: [
        { job: 'uhlp-core', address: new URL(core.url).host, labels: { namespace: 'uhlp-system' } },
        { job: 'uhlp-operator', address: `127.0.0.1:${operatorPort}`, labels: { namespace: 'uhlp-system' } },
      ],
    });
    promUrl = prometheus.url;
    await waitFor(async () => (await query('uhlp_operator_leader == 1')).length === 1, { timeoutMs: 30_000, intervalMs: 200, what: `the operator to lead; log:\n${operatorLog}` });

    await runLoad(core.url);
  }, 180_000);

  afterAll(async () => {
    const stopped = prometheus?.stop();
    if (namespace) await removeApps(kubeConfig, namespace.name).catch(() => undefined);
    operator?.kill('SIGTERM');
    await core?.stop();
    await namespace?.remove();
    await stopped;
  });

  /** `promtool check metrics` on what `url` exports: its exit code and what it said. */
  const checkMetrics = async (url: string): Promise<{ code: number; output: string }> => {
    const body = await (await fetch(url)).text();
    return new Promise((resolve) => {
      const promtool = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] });
      let output = '';
      promtool.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      promtool.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
      promtool.once('exit', (code) => resolve({ code: code ?? 1, output }));
      promtool.stdin.end(body);
    });
  };

  it('exports, on the core and on the operator, what `promtool check metrics` passes', async () => {
    expect(await checkMetrics(`${core.url}/metrics`)).toEqual({ code: 0, output: '' });
    expect(await checkMetrics(`http://127.0.0.1:${operatorPort}/metrics`)).toEqual({ code: 0, output: '' });
  });

  it('exports from a core no operator metric, and counts no probe or scrape as traffic', async () => {
    const before = await (await fetch(`${core.url}/metrics`)).text();
    // A core is not an operator: no `uhlp_operator_leader 0` to read as a missing leader.
    expect(before).not.toMatch(/^uhlp_operator_/m);
    const unrouted = (text: string): string[] => text.split('\n').filter((line) => line.startsWith('uhlp_http_requests_total{app=""'));
    for (let i = 0; i < 3; i++) for (const probe of ['/healthz', '/readyz', '/metrics']) await (await fetch(`${core.url}${probe}`)).arrayBuffer();
    expect(unrouted(await (await fetch(`${core.url}/metrics`)).text())).toEqual(unrouted(before));
    // The operator's own metrics are there, with its leadership.
    expect(await (await fetch(`http://127.0.0.1:${operatorPort}/metrics`)).text()).toMatch(/^uhlp_operator_leader 1$/m);
  });

  it('loads the alert rules with promtool', async () => {
    const { stdout } = await run('promtool', ['check', 'rules', RULES_FILE]);
    expect(stdout).toContain(`SUCCESS: ${ALERT_RULES.length} rules found`);
  });

  it.each(dashboardQueries().map((q) => [`${q.row} / ${q.panel}: ${q.expr}`, q.expr] as const))('returns data for %s', async (_name, expr) => {
    const promql = substitute(expr);
    let result: PromResult[] = [];
    // The last scrapes after the load may still be in flight: wait for them, with a deadline.
    await waitFor(async () => (result = await query(promql)).length > 0, { timeoutMs: 20_000, intervalMs: 250, what: `data for ${promql}` });
    expect(result.length).toBeGreaterThan(0);
  });

  it.each(VARIABLES.map((v) => [v.name, v] as const))('finds values for the variable %s', async (_name, variable) => {
    const promql = `count by (${variable.labelName}) (${substitute(variable.series)})`;
    let result: PromResult[] = [];
    await waitFor(async () => (result = await query(promql)).some((r) => (r.metric[variable.labelName] ?? '') !== ''), { timeoutMs: 20_000, intervalMs: 250, what: promql });
    expect(result.map((r) => r.metric[variable.labelName]).filter(Boolean).length).toBeGreaterThan(0);
  });

  it('evaluates every alert rule without error', async () => {
    type Rules = { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> } };
    let rules: Array<{ name: string; health: string; lastError?: string }> = [];
    await waitFor(
      async () => {
        rules = ((await (await fetch(`${promUrl}/api/v1/rules`)).json()) as Rules).data.groups.flatMap((group) => group.rules);
        return rules.length === ALERT_RULES.length && rules.every((rule) => rule.health !== 'unknown');
      },
      { timeoutMs: 20_000, intervalMs: 250, what: 'every rule evaluated' },
    );
    expect(rules.map((rule) => ({ name: rule.name, health: rule.health, lastError: rule.lastError ?? '' }))).toEqual(
      ALERT_RULES.map((rule) => ({ name: rule.alert, health: 'ok', lastError: '' })),
    );
  });
});

/** A short load that moves every metric the dashboard shows; requests go to loopback only and end by themselves. */
async function runLoad(baseUrl: string): Promise<void> {
  const get = (p: string, init?: RequestInit): Promise<number> => fetch(`${baseUrl}${p}`, init).then(async (r) => (await r.arrayBuffer(), r.status));
  const statuses: number[] = [];
  for (let i = 0; i < 12; i++) statuses.push(await get('/load/hello'));
  for (let i = 0; i < 3; i++) statuses.push(await get('/load/broken'), await get('/load/refused'));
  for (const n of [1, 2, 1, 2, 1]) statuses.push(await get(`/load/ask/${n}`));
  // One sandbox, a 100 ms wait and 400 ms naps: a burst of four is a miss, then refusals.
  statuses.push(...(await Promise.all([1, 2, 3, 4].map(() => get('/load/nap')))));
  for (const kind of ['ok', 'ok', 'bad', 'ok']) statuses.push(await get(`/load/enqueue/${kind}`));
  for (let i = 0; i < 4; i++) statuses.push(await get('/limited/once', { method: 'POST', body: 'x', headers: { 'idempotency-key': 'same-key' } }));
  for (let i = 0; i < 6; i++) statuses.push(await get('/limited/once', { method: 'POST', body: `${i}` }));
  expect(statuses).toContain(200);
  expect(statuses).toContain(422);
  expect(statuses).toContain(503);
  expect(statuses).toContain(429);
}
