/**
 * The end-to-end journey on the real single-node cluster (scripts/k8s-node.sh): the
 * chart installed with helm (core, operator, Redis) from images built here and
 * imported into the node, an AppDefinition applied with kubectl, its SandboxPool's
 * warm pods, HTTP through the core's Service and through `kubectl port-forward`, a
 * sandbox pod killed under load, `kubectl scale sandboxpool`, a new commit of the app's
 * Git source, the API server away for a minute under load, then day two: `helm
 * uninstall` with the AppDefinition still there, the namespace deleted within a
 * minute, and a second release in another namespace. It fails, never skips, without
 * the node.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClusterImages } from '../../src/images/cluster-images.js';
import { docker, testImages } from '../docker/docker-env.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { CHART, helm, helmOk } from '../helm/helm-env.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { createNamespace, kubeconfigPath, kubectl, waitFor } from '../k8s/kube-env.js';
import { apiServerOutage, importImages, NODE_GATEWAY, nodeCtr, requireNode } from './node-env.js';

const release = 'journey';
const fullname = `${release}-uhlp`;
const MINUTE = 60_000;

interface PodList {
  items: Array<{
    metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string>; deletionTimestamp?: string; finalizers?: string[] };
    status?: { phase?: string; podIP?: string; conditions?: Array<{ type: string; status: string }> };
  }>;
}

const isReady = (pod: PodList['items'][number]): boolean =>
  !pod.metadata.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** The last lines the core wrote, from the kubelet's log files (`kubectl logs` cannot reach this node by name). */
function coreLog(namespace: string): string {
  const root = '/var/log/pods';
  const dirs = existsSync(root) ? readdirSync(root).filter((dir) => dir.startsWith(`${namespace}_${fullname}-core-`)) : [];
  return dirs
    .flatMap((dir) => (existsSync(path.join(root, dir, 'core')) ? readdirSync(path.join(root, dir, 'core')).map((file) => path.join(root, dir, 'core', file)) : []))
    .map((file) => `${file}:\n${readFileSync(file, 'utf8').split('\n').slice(-40).join('\n')}`)
    .join('\n');
}

/** Runs `step`; when it fails, the core's log is added to the failure. */
async function withCoreLog<T>(namespace: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n--- core log ---\n${coreLog(namespace)}`);
  }
}

function splitReference(reference: string): { repository: string; tag: string } {
  const colon = reference.lastIndexOf(':');
  return { repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
}

/** `kubectl port-forward` of a Service to a free local port, as the chart's NOTES say; resolves with the local URL. */
async function portForward(namespace: string, service: string, port: number): Promise<{ url: string; process: ChildProcess; stop: () => void }> {
  const kubectlBinary = process.env.UHLP_KUBECTL ?? path.join(path.dirname(kubeconfigPath()), 'kubectl');
  const child = spawn(kubectlBinary, ['--kubeconfig', kubeconfigPath(), 'port-forward', '-n', namespace, `svc/${service}`, `0:${port}`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  try {
    const local = await waitFor(`kubectl port-forward to listen (${output.trim()})`, () => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(output)?.[1] ?? (child.exitCode !== null ? Promise.reject(new Error(output)) : undefined), 30_000);
    return { url: `http://127.0.0.1:${local}`, process: child, stop: () => child.kill('SIGTERM') };
  } catch (error) {
    child.kill('SIGTERM');
    throw new Error(`kubectl port-forward failed: ${output}${String(error)}`);
  }
}

/** Installs the chart as a user would, with the images built here (their hashed tags, so a rebuild rolls the pods). */
function installArgs(name: string, namespace: string, images: { core: string; redis: string; jit: string; llm: string }, gitPort: number): string[] {
  const core = splitReference(images.core);
  const redis = splitReference(images.redis);
  return [
    'install', name, CHART, '-n', namespace, '--wait', '--timeout', '5m',
    '--set', `image.repository=${core.repository},image.tag=${core.tag},image.pullPolicy=Never`,
    '--set', `redis.bundled.enabled=true,redis.bundled.image.repository=${redis.repository},redis.bundled.image.tag=${redis.tag},redis.bundled.image.pullPolicy=Never`,
    '--set', 'operator.replicaCount=1',
    '--set', `core.sandboxes.runnerImages.jit=${images.jit},core.sandboxes.runnerImages.llm=${images.llm}`,
    '--set', `core.git.allowPrivate={${NODE_GATEWAY}:${gitPort}},core.git.caBundle.configMap=git-ca`,
  ];
}

describe('helm install → kubectl apply → HTTP through the Service → kill, scale, new commit → uninstall', () => {
  let namespace: { name: string; remove: () => Promise<void> };
  let gitServer: HttpsGitServer;
  let work: string;
  let bare: string;
  let base: string;
  let installed = false;
  let images: { core: string; redis: string; jit: string; llm: string };
  const files: string[] = [];

  const get = async <T>(args: string[]): Promise<T> => JSON.parse(await kubectl([...args, '-n', namespace.name, '-o', 'json'])) as T;
  const poolPods = async (): Promise<PodList['items']> =>
    (await get<PodList>(['get', 'pods', '-l', 'uhlp.dev/role=sandbox,uhlp.dev/app=shop,uhlp.dev/pool=main'])).items;
  const pool = (): Promise<{ spec: { replicas?: number }; status?: { replicas?: number; readyReplicas?: number; busyReplicas?: number } }> =>
    get(['get', 'sandboxpool', 'shop-main']);
  const apply = async (name: string, manifest: unknown): Promise<void> => {
    const file = path.join(work, `${name}.json`);
    writeFileSync(file, JSON.stringify(manifest));
    await kubectl(['apply', '-n', namespace.name, '-f', file]);
  };
  const app = (ref: string): Record<string, unknown> => ({
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'AppDefinition',
    metadata: { name: 'shop' },
    spec: {
      ingress: { pathPrefix: '/shop' },
      source: { git: { url: `${gitServer.origin}/apps.git`, ref } },
      // maxUses high: under this test's load a pod recycled every 50 uses outruns the refill on a
      // 2-core machine (waits past acquireTimeoutMs), and a recycled pod's replacement is a
      // claim, which needs the API server (the outage below); churn is what bench:k8s measures.
      pools: [{ name: 'main', minWarm: 2, maxSize: 10, maxUses: 1_000_000 }],
      components: [{ id: 'hello', handler: 'JIT', pool: 'main', jit: { script: 'scripts/hello.js' } }],
      routes: [{ http: { method: 'GET', path: '/hello' }, component: 'hello' }],
    },
  });
  const hello = async (): Promise<{ status: number; body: string }> => {
    const response = await fetch(`${base}/shop/hello`, { signal: AbortSignal.timeout(30_000) });
    return { status: response.status, body: await response.text() };
  };

  beforeAll(async () => {
    const kubeConfig = await requireNode();
    namespace = await createNamespace(kubeConfig, 'uhlp-journey');
    work = mkdtempSync(path.join(os.tmpdir(), 'uhlp-journey-'));

    // The app's Git source, served over https on the node's bridge address (pods reach the host there).
    const repo = path.join(work, 'repo');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, { 'apps/shop/scripts/hello.js': "export default () => ({ hello: 'v1' });\n" });
    commitAll(repo, 'v1');
    bare = path.join(work, 'served', 'apps.git');
    git(work, 'clone', '-q', '--bare', repo, bare);
    gitServer = await startHttpsGitServer({ root: path.dirname(bare), host: NODE_GATEWAY });
    files.push(repo);
    await kubectl(['create', 'configmap', 'git-ca', '-n', namespace.name, `--from-file=ca.crt=${gitServer.caFile}`]);

    // The images, built here (or found by their input hash) and imported into the node.
    const cluster = await buildClusterImages({ docker });
    const { jitRunner, llmOrchestrator } = await testImages();
    images = { core: cluster.core.reference, redis: cluster.redis.reference, jit: jitRunner.reference, llm: llmOrchestrator.reference };
    await importImages(Object.values(images));

    // The chart's defaults (pod sandboxes, NetworkPolicies, the uninstall hook), with this build's images.
    // No --take-ownership: CRDs an earlier release kept are left to it.
    await helmOk(installArgs(release, namespace.name, images, gitServer.port));
    installed = true;
    const service = await get<{ spec: { clusterIP: string; ports: Array<{ port: number }> } }>(['get', 'service', `${fullname}-core`]);
    base = `http://${service.spec.clusterIP}:${service.spec.ports[0]!.port}`;
  }, 15 * MINUTE);

  afterAll(async () => {
    // A failed run: no outage left behind, then the release (its hook removes the sandboxes).
    await apiServerOutage('stop').catch(() => undefined);
    if (installed) await helm(['uninstall', release, '-n', namespace.name, '--wait', '--timeout', '2m']);
    await namespace?.remove();
    await gitServer?.close();
  }, 3 * MINUTE);

  it('runs the core, the operator and Redis Ready', async () => {
    const pods = (await get<PodList>(['get', 'pods', '-l', `app.kubernetes.io/instance=${release}`])).items;
    const components = pods.filter(isReady).map((pod) => pod.metadata.labels?.['app.kubernetes.io/component']).sort();
    expect(components).toEqual(['core', 'operator', 'redis']);
    // kube-proxy programs the Service a moment after its endpoints are Ready.
    await withCoreLog(namespace.name, () =>
      waitFor('the core Service answering', async () => (await fetch(`${base}/readyz`).catch(() => undefined))?.status === 200, 2 * MINUTE),
    );
    // As the chart's NOTES say: through the API server and the kubelet, by the node's name.
    const forward = await portForward(namespace.name, `${fullname}-core`, 80);
    try {
      const answer = await fetch(`${forward.url}/readyz`);
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ status: 'ready', driver: 'pod', state: { kind: 'redis', ok: true } });
    } finally {
      forward.stop();
    }
  }, 3 * MINUTE);

  it('serves an applied AppDefinition through the core Service, from warm sandbox pods', async () => {
    await apply('app-v1', app('main'));
    await waitFor('shop Ready', async () => {
      const resource = await get<{ status?: { conditions?: Array<{ type: string; status: string }> } }>(['get', 'appdefinition', 'shop']);
      return resource.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    }, 2 * MINUTE);
    await waitFor('2 warm pods Ready', async () => (await poolPods()).filter(isReady).length >= 2 && (await pool()).status?.readyReplicas === 2, 3 * MINUTE);

    // The pods are hardened, and the pool's NetworkPolicy lets them talk to the core's pods only.
    const warm = (await get<{ items: Array<{ spec: Record<string, any> }> }>(['get', 'pods', '-l', 'uhlp.dev/app=shop'])).items[0]!.spec;
    expect(warm.automountServiceAccountToken).toBe(false);
    expect(warm.securityContext).toMatchObject({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(warm.containers[0].securityContext).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    expect(warm.containers[0].resources.limits).toMatchObject({ memory: expect.any(String), cpu: expect.any(String) });
    expect(warm.containers[0].imagePullPolicy).toBe('Never');
    const policy = (await get<{ spec: Record<string, any> }>(['get', 'networkpolicy', 'shop-main-sandboxes'])).spec;
    const corePeer = [{ podSelector: { matchLabels: { 'app.kubernetes.io/name': 'uhlp', 'app.kubernetes.io/instance': release, 'app.kubernetes.io/component': 'core' } } }];
    expect(policy.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.ingress).toEqual([{ from: corePeer, ports: [{ protocol: 'TCP', port: 8080 }] }]);
    expect(policy.egress).toEqual([{ to: corePeer, ports: [{ protocol: 'TCP', port: 8080 }] }]);

    const first = await withCoreLog(namespace.name, () =>
      waitFor('shop answering', async () => {
        const answer = await hello().catch(() => undefined);
        return answer?.status === 200 ? answer : undefined;
      }, 2 * MINUTE),
    );
    expect(JSON.parse(first.body)).toEqual({ hello: 'v1' });
    const answers = await Promise.all(Array.from({ length: 20 }, () => hello()));
    expect(answers.map((answer) => answer.status)).toEqual(Array(20).fill(200));
  }, 8 * MINUTE);

  it('replaces a sandbox pod killed under load while every request succeeds', async () => {
    const failures: string[] = [];
    let served = 0;
    let stop = false;
    const load = Promise.all(
      Array.from({ length: 3 }, async () => {
        while (!stop) {
          const answer = await hello().catch((error: unknown) => ({ status: 0, body: String(error) }));
          if (answer.status === 200) served += 1;
          else failures.push(`${answer.status} ${answer.body}`);
        }
      }),
    );
    try {
      await waitFor('load running', () => served >= 10, MINUTE);
      // A pod the core holds (a warm one when none is held), deleted as kubectl does; one that
      // went meanwhile (recycled after maxUses) is passed over for another.
      const victim = await waitFor('a sandbox pod deleted', async () => {
        const pods = (await poolPods()).filter(isReady);
        const pick = pods.find((pod) => pod.metadata.labels?.['uhlp.dev/sandbox-state'] === 'claimed') ?? pods[0];
        if (!pick) return undefined;
        const deleted = await kubectl(['delete', 'pod', pick.metadata.name, '-n', namespace.name, '--wait=false', '--ignore-not-found']);
        return deleted.includes(pick.metadata.name) ? pick : undefined;
      }, MINUTE);
      await waitFor('the killed pod replaced', async () => {
        const pods = await poolPods();
        return !pods.some((pod) => pod.metadata.name === victim.metadata.name) && pods.filter(isReady).length >= 2;
      }, 3 * MINUTE);
      const after = served;
      await waitFor('requests after the replacement', () => served >= after + 10, MINUTE);
    } finally {
      stop = true;
      await load;
    }
    expect(failures).toEqual([]);
  }, 8 * MINUTE);

  it('adopts the pods it holds when the core restarts', async () => {
    const corePod = async (): Promise<{ metadata: { name: string }; status: { containerStatuses: Array<{ containerID: string; restartCount: number; ready: boolean }> } }> =>
      (await get<{ items: Array<never> }>(['get', 'pods', '-l', `app.kubernetes.io/instance=${release},app.kubernetes.io/component=core`])).items[0]!;
    const claimed = async (core: string): Promise<string[]> =>
      (await poolPods()).filter((pod) => pod.metadata.labels?.['uhlp.dev/claimed-by'] === core && !pod.metadata.deletionTimestamp).map((pod) => pod.metadata.name).sort();
    const before = await corePod();
    const held = await claimed(before.metadata.name);
    expect(held.length).toBeGreaterThan(0);
    // The kernel's kill of the core's process: the kubelet restarts the container in the same pod.
    await nodeCtr(['tasks', 'kill', '-s', 'SIGKILL', before.status.containerStatuses[0]!.containerID.replace(/^containerd:\/\//, '')]);
    await waitFor('the core restarted and Ready', async () => {
      const now = await corePod();
      return now.status.containerStatuses[0]!.restartCount > before.status.containerStatuses[0]!.restartCount && now.status.containerStatuses[0]!.ready;
    }, 3 * MINUTE);
    for (let i = 0; i < 5; i++) expect((await hello()).status).toBe(200);
    // Served by the pods it held before: nothing newly claimed, nothing left claimed by a dead core.
    expect(await claimed(before.metadata.name)).toEqual(held);
  }, 5 * MINUTE);

  it('deletes the pods a replaced core pod held (a new pod name adopts nothing)', async () => {
    const corePods = async (): Promise<Array<{ metadata: { name: string; deletionTimestamp?: string }; status: { containerStatuses?: Array<{ containerID: string; ready: boolean }> } }>> =>
      (await get<{ items: Array<never> }>(['get', 'pods', '-l', `app.kubernetes.io/instance=${release},app.kubernetes.io/component=core`])).items;
    const [before] = await corePods();
    // Pods held by the core: claimed under its name and recorded with its pod.
    for (let i = 0; i < 5; i++) expect((await hello()).status).toBe(200);
    const held = (await get<PodList>(['get', 'pods', '-l', `uhlp.dev/role=sandbox,uhlp.dev/claimed-by=${before!.metadata.name}`])).items.filter(
      (pod) => !pod.metadata.deletionTimestamp,
    );
    expect(held.length).toBeGreaterThan(0);
    for (const pod of held) expect(pod.metadata.annotations?.['uhlp.dev/claimer-pod']).toBe(`${namespace.name}/${before!.metadata.name}`);
    // A core that never shuts down cleanly (a lost node): frozen, so SIGTERM hands nothing back, and its pod removed at once.
    await nodeCtr(['tasks', 'kill', '-s', 'SIGSTOP', before!.status.containerStatuses![0]!.containerID.replace(/^containerd:\/\//, '')]);
    await kubectl(['delete', 'pod', before!.metadata.name, '-n', namespace.name, '--grace-period=0', '--force', '--wait=false']);
    await waitFor('a new core pod Ready', async () => (await corePods()).some((pod) => pod.metadata.name !== before!.metadata.name && !pod.metadata.deletionTimestamp && pod.status.containerStatuses?.[0]?.ready === true), 3 * MINUTE);
    const names = new Set(held.map((pod) => pod.metadata.name));
    await withCoreLog(namespace.name, () =>
      waitFor('the replaced core\'s pods deleted by the operator', async () => !(await poolPods()).some((pod) => names.has(pod.metadata.name) && !pod.metadata.deletionTimestamp), 2 * MINUTE),
    );
    await waitFor('shop answering through the new core', async () => (await hello().catch(() => undefined))?.status === 200, 2 * MINUTE);
    for (let i = 0; i < 5; i++) expect((await hello()).status).toBe(200);
  }, 8 * MINUTE);

  it('follows kubectl scale sandboxpool: more warm pods, then fewer', async () => {
    await kubectl(['scale', 'sandboxpool', 'shop-main', '--replicas=4', '-n', namespace.name]);
    await waitFor('4 warm pods', async () => (await pool()).status?.readyReplicas === 4 && (await poolPods()).filter(isReady).length >= 4, 3 * MINUTE);
    await kubectl(['scale', 'sandboxpool', 'shop-main', '--replicas=1', '-n', namespace.name]);
    await waitFor('1 warm pod', async () => (await pool()).status?.readyReplicas === 1, 2 * MINUTE);
    // The scale subresource is what kubectl scale and an HPA read and write.
    const scale = JSON.parse(await kubectl(['get', '--raw', `/apis/uhlp.dev/v1alpha1/namespaces/${namespace.name}/sandboxpools/shop-main/scale`])) as {
      spec: { replicas: number };
      status: { replicas: number; selector: string };
    };
    expect(scale.spec.replicas).toBe(1);
    expect((await hello()).status).toBe(200);
  }, 8 * MINUTE);

  it('serves a new commit of the Git source once the AppDefinition names it', async () => {
    const repo = files[0]!;
    writeFiles(repo, { 'apps/shop/scripts/hello.js': "export default () => ({ hello: 'v2' });\n" });
    const commit = commitAll(repo, 'v2');
    git(repo, 'push', '-q', bare, 'HEAD:main');
    await apply('app-v2', app(commit));
    await waitFor('v2 served', async () => {
      const answer = await hello().catch(() => undefined);
      return answer?.status === 200 && JSON.parse(answer.body).hello === 'v2';
    }, 2 * MINUTE);
  }, 4 * MINUTE);

  it('serves through a minute without the API server, under load, with no failed request and the core ready', async () => {
    const failures: string[] = [];
    const notReady: string[] = [];
    const watchDown: string[] = [];
    let served = 0;
    let stop = false;
    const load = Promise.all(
      Array.from({ length: 3 }, async () => {
        while (!stop) {
          const answer = await hello().catch((error: unknown) => ({ status: 0, body: String(error) }));
          if (answer.status === 200) served += 1;
          else failures.push(`${answer.status} ${answer.body}`);
        }
      }),
    );
    // The Service keeps the core: its readiness follows the data plane, while it reports the
    // AppDefinition watch that lost the API server.
    const readiness = (async () => {
      while (!stop) {
        const answer = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) }).catch((error: unknown) => ({ status: 0, text: async () => String(error) }));
        const text = await answer.text();
        if (answer.status !== 200) notReady.push(`${answer.status} ${text}`);
        else if ((JSON.parse(text) as { appWatch?: { live: boolean; reason?: string } }).appWatch?.live === false) watchDown.push(text);
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    })();
    let during = 0;
    try {
      await waitFor('load running', () => served >= 10, MINUTE);
      await apiServerOutage('start');
      const outageStarted = Date.now();
      const before = served;
      // A minute away, as a managed cluster's control-plane upgrade takes it.
      await waitFor('a minute of outage', () => Date.now() - outageStarted >= MINUTE, 2 * MINUTE);
      during = served - before;
    } finally {
      await apiServerOutage('stop');
    }
    try {
      // The core's watch follows the API server again (it reports so in /readyz), and traffic goes on.
      await withCoreLog(namespace.name, () =>
        waitFor('the AppDefinition watch live again', async () => ((await (await fetch(`${base}/readyz`)).json()) as { appWatch?: { live: boolean } }).appWatch?.live === true, 3 * MINUTE),
      );
      const after = served;
      await waitFor('requests after the outage', () => served >= after + 10, MINUTE);
    } finally {
      stop = true;
      await Promise.all([load, readiness]);
    }
    process.stderr.write(`helm journey: ${during} requests answered during the minute without the API server, ${failures.length} failed, ${watchDown.length} readiness probes ready with the watch down\n`);
    expect(during).toBeGreaterThan(100);
    expect(failures).toEqual([]);
    expect(notReady).toEqual([]);
    // The outage was real, and seen: the core said its watch was down, and stayed ready.
    expect(watchDown.length).toBeGreaterThan(10);
  }, 8 * MINUTE);

  it('uninstalls with the AppDefinition still there: nothing left running, and the namespace deleted within a minute', async () => {
    expect((await get<{ metadata: { name: string } }>(['get', 'appdefinition', 'shop'])).metadata.name).toBe('shop');
    // The pre-delete hook stops the operator and deletes the pools and their pods; then helm deletes the release.
    const uninstallStarted = Date.now();
    await helmOk(['uninstall', release, '-n', namespace.name, '--wait', '--timeout', '3m']).catch(async (error: unknown) => {
      // A failed hook is deleted only on success: its pods' logs say why it failed.
      const logs = await kubectl(['logs', '-n', namespace.name, '-l', `job-name=${release}-uhlp-uninstall`, '--prefix', '--tail', '40']).catch(String);
      throw new Error(`${String(error)}\nthe uninstall hook's pods:\n${logs}`);
    });
    process.stderr.write(`helm journey: helm uninstall (its hook included) took ${Date.now() - uninstallStarted} ms\n`);
    installed = false;
    expect((await get<{ items: unknown[] }>(['get', 'sandboxpools'])).items).toEqual([]);
    // The release's pods end as the garbage collector takes their ReplicaSets; nothing starts again.
    await waitFor('no pod running in the namespace', async () => {
      const pods = (await get<PodList>(['get', 'pods'])).items;
      return pods.every((pod) => pod.metadata.deletionTimestamp || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed');
    }, MINUTE);
    // The app is the user's: it stays, holding no finalizer.
    const app = await get<{ metadata: { finalizers?: string[] } }>(['get', 'appdefinition', 'shop']);
    expect(app.metadata.finalizers ?? []).toEqual([]);

    const started = Date.now();
    await kubectl(['delete', 'namespace', namespace.name, '--wait=true', '--timeout=60s']);
    process.stderr.write(`helm journey: the namespace deleted in ${Date.now() - started} ms after helm uninstall\n`);
    expect(Date.now() - started).toBeLessThan(MINUTE);
    expect((await kubectl(['get', 'namespace', namespace.name, '--ignore-not-found', '-o', 'name'])).trim()).toBe('');
    // Nothing of the namespace anywhere: no pod, no pool, no app (so no finalizer held), no policy.
    const ours = JSON.parse(await kubectl(['get', 'pods,sandboxpools,appdefinitions,networkpolicies', '-A', '-o', 'json'])) as {
      items: Array<{ metadata: { namespace?: string; name: string; finalizers?: string[] } }>;
    };
    expect(ours.items.filter((item) => item.metadata.namespace === namespace.name)).toEqual([]);
  }, 6 * MINUTE);

  it('installs a second release, under another name in another namespace, that serves an app', async () => {
    const kubeConfig = await requireNode();
    const second = await createNamespace(kubeConfig, 'uhlp-journey-second');
    const name = 'again';
    try {
      await kubectl(['create', 'configmap', 'git-ca', '-n', second.name, `--from-file=ca.crt=${gitServer.caFile}`]);
      await helmOk(installArgs(name, second.name, images, gitServer.port));
      const file = path.join(work, 'second-app.json');
      writeFileSync(file, JSON.stringify({ ...app('main'), metadata: { name: 'shop', namespace: second.name } }));
      await kubectl(['apply', '-f', file]);
      const service = JSON.parse(await kubectl(['get', 'service', `${name}-uhlp-core`, '-n', second.name, '-o', 'json'])) as { spec: { clusterIP: string } };
      const answer = await waitFor('the second release serving shop', async () => {
        const response = await fetch(`http://${service.spec.clusterIP}/shop/hello`, { signal: AbortSignal.timeout(10_000) }).catch(() => undefined);
        return response?.status === 200 ? response.json() : undefined;
      }, 4 * MINUTE);
      expect(answer).toEqual({ hello: 'v2' });
      await helmOk(['uninstall', name, '-n', second.name, '--wait', '--timeout', '3m']);
    } finally {
      await helm(['uninstall', name, '-n', second.name, '--wait', '--timeout', '2m']);
      await kubectl(['delete', 'namespace', second.name, '--wait=true', '--timeout=120s']).catch(() => undefined);
    }
  }, 12 * MINUTE);
});
