/**
 * The chart's bundled Sentinel (`redis.bundled.sentinel`) on the real single-node cluster
 * (scripts/k8s-node.sh): installed with helm from images built here, an app served through
 * the core's Service (once-only requests, queue publishes), then the master's pod deleted
 * at once (`--force --grace-period=0`) while traffic runs. The sentinels promote a replica,
 * the core writes again within a measured bound, no acknowledged publish is lost, a
 * once-only key answers as before, and the deleted pod comes back as a replica of the new
 * master. The same again with the pods TLS only (`redis.bundled.tls`). It fails, never
 * skips, without the node.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClusterImages } from '../../src/images/cluster-images.js';
import { docker, testImages } from '../docker/docker-env.js';
import { commitAll, git, initRepo, writeFiles } from '../helpers/git-repo.js';
import { startHttpsGitServer, type HttpsGitServer } from '../helpers/https-git-server.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/test-certificates.js';
import { CHART, helm, helmOk } from '../helm/helm-env.js';
import { createNamespace, kubectl, waitFor } from '../k8s/kube-env.js';
import { importImages, NODE_GATEWAY, requireNode } from './node-env.js';

const release = 'sentinel';
const fullname = `${release}-uhlp`;
const MINUTE = 60_000;

// Once-only answers, acknowledged queue publishes, and a queue route whose runs the test reads back.
const APP_SCRIPT = `import { randomUUID } from 'node:crypto';

// Every run answers something new, so a replay is told apart from a second run.
export function mint() {
  return { id: randomUUID() };
}

export async function publish(event, ctx) {
  const { id } = JSON.parse(event.httpDetails.body);
  try {
    return await ctx.tools.call('core.queue.publish', { queue: 'orders', payload: { id }, invocationId: id });
  } catch (error) {
    return { statusCode: error.status ?? 500, body: JSON.stringify({ code: error.code }) };
  }
}

export async function record(event, ctx) {
  const key = 'ran:' + event.queueDetails.payload.id;
  const runs = ((await ctx.tools.call('core.kv.get', { key })).value ?? 0) + 1;
  await ctx.tools.call('core.kv.set', { key, value: runs });
  return { runs };
}

export async function ran(event, ctx) {
  return { runs: (await ctx.tools.call('core.kv.get', { key: 'ran:' + event.httpDetails.pathParameters.id })).value ?? 0 };
}
`;

interface Pod {
  metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string; uid: string };
  status?: { podIP?: string; conditions?: Array<{ type: string; status: string }> };
}

const isReady = (pod: Pod): boolean => !pod.metadata.deletionTimestamp && pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** The last lines the core wrote, from the kubelet's log files (`kubectl logs` cannot reach this node by name). */
function coreLog(namespace: string): string {
  const root = '/var/log/pods';
  const dirs = existsSync(root) ? readdirSync(root).filter((dir) => dir.startsWith(`${namespace}_${fullname}-core-`)) : [];
  return dirs
    .flatMap((dir) => (existsSync(path.join(root, dir, 'core')) ? readdirSync(path.join(root, dir, 'core')).map((file) => path.join(root, dir, 'core', file)) : []))
    .map((file) => `${file}:\n${readFileSync(file, 'utf8').split('\n').slice(-30).join('\n')}`)
    .join('\n');
}

function splitReference(reference: string): { repository: string; tag: string } {
  const colon = reference.lastIndexOf(':');
  return { repository: reference.slice(0, colon), tag: reference.slice(colon + 1) };
}

/**
 * One command to a pod's Redis (or sentinel) by its IP: the host reaches pod IPs on this node.
 * With `ca`, over TLS: the chain is checked against it (the certificate names the pods' DNS names, not their IPs).
 */
async function ask(ip: string, port: number, args: string[], ca?: Buffer): Promise<unknown> {
  const client = new Redis({
    host: ip,
    port,
    lazyConnect: true,
    connectTimeout: 2000,
    commandTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    ...(ca ? { tls: { ca, checkServerIdentity: () => undefined } } : {}),
  });
  client.on('error', () => {});
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

// The plain install, then the TLS-only one (redis.bundled.tls); `-t 'TLS only'` runs that one alone.
describe.each([
  ['plain', false],
  ['TLS only', true],
])('the bundled Sentinel (%s): helm install, serve, delete the master pod, fail over', (_, tls) => {
  let ca: Buffer | undefined;
  let certificates: TestCertificates | undefined;
  let namespace: { name: string; remove: () => Promise<void> };
  let gitServer: HttpsGitServer;
  let work: string;
  let base: string;
  let installed = false;

  const get = async <T>(args: string[]): Promise<T> => JSON.parse(await kubectl([...args, '-n', namespace.name, '-o', 'json'])) as T;
  const pods = async (component: string): Promise<Pod[]> =>
    (await get<{ items: Pod[] }>(['get', 'pods', '-l', `app.kubernetes.io/instance=${release},app.kubernetes.io/component=${component}`])).items;
  /** `ROLE` of each Ready data pod, by pod name: [role, master host when a replica]. */
  const roles = async (): Promise<Map<string, string[]>> => {
    const result = new Map<string, string[]>();
    for (const pod of (await pods('redis')).filter(isReady)) {
      const role = (await ask(pod.status!.podIP!, 6379, ['ROLE'], ca).catch(() => undefined)) as unknown[] | undefined;
      if (role) result.set(pod.metadata.name, [String(role[0]), ...(role[0] === 'slave' ? [String(role[1])] : [])]);
    }
    return result;
  };
  /** The master the sentinels name, as the pod name its DNS name starts with (when two of them agree). */
  const namedMaster = async (): Promise<string | undefined> => {
    const names = new Map<string, number>();
    for (const pod of (await pods('redis-sentinel')).filter((p) => p.status?.podIP)) {
      const reply = (await ask(pod.status!.podIP!, 26379, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'uhlp'], ca).catch(() => undefined)) as string[] | null | undefined;
      const name = reply?.[0]?.split('.')[0];
      if (name) names.set(name, (names.get(name) ?? 0) + 1);
    }
    return [...names].find(([, count]) => count >= 2)?.[0];
  };
  const post = async (route: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> => {
    const response = await fetch(`${base}/shop${route}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json', ...headers },
      signal: AbortSignal.timeout(20_000),
    });
    const text = await response.text();
    let json: unknown = text;
    try {
      json = JSON.parse(text);
    } catch {
      // A proxy's or a cut connection's answer: kept as text.
    }
    return { status: response.status, json };
  };
  const mint = (key: string) => post('/mint', {}, { 'Idempotency-Key': key });
  const publish = (id: string) => post('/publish', { id });
  /** Retries `step` until it answers 200: on this loaded 2-core node the core's liveness probe may restart it now and then. */
  const until200 = (what: string, step: () => Promise<{ status: number; json: any }>): Promise<{ status: number; json: any }> =>
    waitFor(what, async () => {
      const answer = await step().catch(() => undefined);
      return answer?.status === 200 ? answer : undefined;
    }, 3 * MINUTE);
  const coreRestarts = async (): Promise<number> =>
    (await get<{ items: Array<{ status?: { containerStatuses?: Array<{ restartCount: number }> } }> }>(['get', 'pods', '-l', `app.kubernetes.io/instance=${release},app.kubernetes.io/component=core`])).items
      .reduce((sum, pod) => sum + (pod.status?.containerStatuses?.[0]?.restartCount ?? 0), 0);
  const runs = async (id: string): Promise<number> => {
    const response = await fetch(`${base}/shop/ran/${id}`, { signal: AbortSignal.timeout(20_000) });
    return response.status === 200 ? ((await response.json()) as { runs: number }).runs : -1;
  };

  beforeAll(async () => {
    const kubeConfig = await requireNode();
    namespace = await createNamespace(kubeConfig, tls ? 'uhlp-sentinel-tls' : 'uhlp-sentinel');
    work = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bundled-sentinel-'));

    const repo = path.join(work, 'repo');
    mkdirSync(repo);
    initRepo(repo);
    writeFiles(repo, { 'apps/shop/scripts/app.mjs': APP_SCRIPT });
    commitAll(repo, 'shop');
    const bare = path.join(work, 'served', 'apps.git');
    git(work, 'clone', '-q', '--bare', repo, bare);
    gitServer = await startHttpsGitServer({ root: path.dirname(bare), host: NODE_GATEWAY });
    await kubectl(['create', 'configmap', 'git-ca', '-n', namespace.name, `--from-file=ca.crt=${gitServer.caFile}`]);

    // The images helm-journey uses (found by their input hash when built before) in the node.
    const cluster = await buildClusterImages({ docker });
    const { jitRunner } = await testImages();
    await importImages([cluster.core.reference, cluster.redis.reference, jitRunner.reference]);
    if (tls) {
      // One certificate for every data pod and sentinel, by the DNS names they announce and the core dials.
      certificates = makeTestCertificates([`*.${fullname}-redis-headless.${namespace.name}.svc`, `*.${fullname}-redis-sentinel-headless.${namespace.name}.svc`]);
      ca = readFileSync(certificates.caFile);
      await kubectl([
        'create', 'secret', 'generic', 'redis-tls', '-n', namespace.name,
        `--from-file=tls.crt=${certificates.certFile}`, `--from-file=tls.key=${certificates.keyFile}`, `--from-file=ca.crt=${certificates.caFile}`,
      ]);
    }
    const core = splitReference(cluster.core.reference);
    const redis = splitReference(cluster.redis.reference);
    await helmOk([
      'install', release, CHART, '-n', namespace.name, '--wait', '--timeout', '8m',
      '--set', `image.repository=${core.repository},image.tag=${core.tag},image.pullPolicy=Never`,
      '--set', `redis.bundled.enabled=true,redis.bundled.image.repository=${redis.repository},redis.bundled.image.tag=${redis.tag},redis.bundled.image.pullPolicy=Never`,
      // An acknowledged write is on a replica before the answer: a crashed master loses none.
      '--set', 'redis.bundled.sentinel.enabled=true,redis.replicaAcks=1',
      ...(tls ? ['--set', 'redis.bundled.tls.enabled=true,redis.bundled.tls.existingSecret=redis-tls'] : []),
      '--set', 'operator.replicaCount=1',
      '--set', `core.sandboxes.runnerImages.jit=${jitRunner.reference}`,
      '--set', `core.git.allowPrivate={${NODE_GATEWAY}:${gitServer.port}},core.git.caBundle.configMap=git-ca`,
    ]);
    installed = true;
    const service = await get<{ spec: { clusterIP: string; ports: Array<{ port: number }> } }>(['get', 'service', `${fullname}-core`]);
    base = `http://${service.spec.clusterIP}:${service.spec.ports[0]!.port}`;

    const file = path.join(work, 'app.json');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'uhlp.dev/v1alpha1',
        kind: 'AppDefinition',
        metadata: { name: 'shop' },
        spec: {
          ingress: { pathPrefix: '/shop' },
          source: { git: { url: `${gitServer.origin}/apps.git`, ref: 'main' } },
          pools: [{ name: 'main', minWarm: 2, maxSize: 6, maxUses: 1_000_000 }],
          components: ['mint', 'publish', 'record', 'ran'].map((id) => ({ id, handler: 'JIT', pool: 'main', jit: { script: 'scripts/app.mjs', function: id } })),
          routes: [
            { http: { method: 'POST', path: '/mint' }, component: 'mint' },
            { http: { method: 'POST', path: '/publish' }, component: 'publish' },
            { http: { method: 'GET', path: '/ran/:id' }, component: 'ran' },
            { queue: { name: 'orders', concurrency: 2, maxAttempts: 20, backoff: { initialMs: 200, maxMs: 2000 } }, component: 'record' },
          ],
          capabilities: { kv: { prefixes: ['ran:'], ops: ['get', 'set'] }, queue: { publish: ['orders'] } },
        },
      }),
    );
    await kubectl(['apply', '-n', namespace.name, '-f', file]);
    let last: unknown;
    await waitFor('shop answering', async () => {
      const answer = await mint(`warm-${Date.now()}`).catch((error: unknown) => String(error));
      last = answer;
      return typeof answer === 'object' && answer.status === 200;
    }, 6 * MINUTE).catch(async (error: unknown) => {
      const state = await kubectl(['get', 'pods,appdefinitions,sandboxpools', '-n', namespace.name, '-o', 'wide']).catch(String);
      const app = await kubectl(['get', 'appdefinition', 'shop', '-n', namespace.name, '-o', 'jsonpath={.status}']).catch(String);
      throw new Error(`${String(error)}; last answer ${JSON.stringify(last)}\n${state}\n${app}\n--- core log ---\n${coreLog(namespace.name)}`);
    });
  }, 20 * MINUTE);

  afterAll(async () => {
    if (installed) await helm(['uninstall', release, '-n', namespace.name, '--wait', '--timeout', '2m']);
    await namespace?.remove();
    await gitServer?.close();
    if (work) rmSync(work, { recursive: true, force: true });
    if (certificates) rmSync(certificates.dir, { recursive: true, force: true });
  }, 4 * MINUTE);

  it('runs one master, two replicas of it and three sentinels that name it', async () => {
    const sentinels = (await pods('redis-sentinel')).filter(isReady);
    expect(sentinels).toHaveLength(3);
    const now = await waitFor('three data pods, one master', async () => {
      const found = await roles();
      return found.size === 3 ? found : undefined;
    }, 2 * MINUTE);
    const masters = [...now].filter(([, role]) => role[0] === 'master').map(([name]) => name);
    expect(masters).toEqual([`${fullname}-redis-0`]);
    for (const [name, role] of now) if (name !== masters[0]) expect(role).toEqual(['slave', `${fullname}-redis-0.${fullname}-redis-headless.${namespace.name}.svc`]);
    expect(await namedMaster()).toBe(masters[0]);
    const readyz = await until200('the core ready', async () => {
      const response = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(10_000) });
      return { status: response.status, json: await response.json() };
    });
    expect(readyz.json.state).toMatchObject({ kind: 'redis', ok: true });
    if (tls) {
      // TLS only: a plain client gets no answer from a data pod or a sentinel.
      const [data] = (await pods('redis')).filter(isReady);
      await expect(ask(data!.status!.podIP!, 6379, ['PING'])).rejects.toThrow();
      await expect(ask(sentinels[0]!.status!.podIP!, 26379, ['PING'])).rejects.toThrow();
      expect(await ask(data!.status!.podIP!, 6379, ['PING'], ca)).toBe('PONG');
    }
  }, 3 * MINUTE);

  it('survives the master pod deleted at once: a replica promoted, writes again, nothing acknowledged lost, the pod back as a replica', async () => {
    const before = await until200('a once-only answer before the deletion', () => mint('before-failover'));
    const restartsBefore = await coreRestarts();
    const oldMaster = (await namedMaster())!;
    expect(oldMaster).toBeDefined();
    const oldPod = (await pods('redis')).find((pod) => pod.metadata.name === oldMaster)!;

    // Traffic throughout: each publish and each once-only key (sent twice) is recorded with its answer.
    const acknowledged: string[] = [];
    const refused: string[] = [];
    const minted = new Map<string, unknown[]>();
    let deletedAt = 0;
    // The deleted pod's container may run on for seconds (the kubelet kills it later): a write counts
    // as "again" only when it was sent after the sentinels named the new master.
    let promotedAt = 0;
    let firstWriteAfter = 0;
    let stop = false;
    let sequence = 0;
    const load = Promise.all(
      Array.from({ length: 2 }, async (_, lane) => {
        while (!stop) {
          const n = sequence++;
          const id = `p${lane}-${n}`;
          const sent = Date.now();
          const answer = await publish(id).catch((error: unknown) => ({ status: 0, json: String(error) }));
          if (answer.status === 200) {
            acknowledged.push(id);
            if (promotedAt && sent >= promotedAt && !firstWriteAfter) firstWriteAfter = Date.now();
          } else refused.push(`${answer.status} ${JSON.stringify(answer.json)}`);
          const key = `k${lane}-${n}`;
          for (let twice = 0; twice < 2; twice++) {
            const once = await mint(key).catch(() => undefined);
            if (once?.status === 200) minted.set(key, [...(minted.get(key) ?? []), once.json]);
          }
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }),
    );
    let promotedAfter = 0;
    let newMaster = '';
    try {
      await waitFor('publishes before the deletion', () => acknowledged.length >= 10, MINUTE);
      const ackedBefore = acknowledged.length;
      deletedAt = Date.now();
      await kubectl(['delete', 'pod', oldMaster, '-n', namespace.name, '--force', '--grace-period=0', '--wait=false']);
      newMaster = await waitFor('the sentinels name another master', async () => {
        const named = await namedMaster();
        return named && named !== oldMaster ? named : undefined;
      }, 2 * MINUTE);
      promotedAt = Date.now();
      promotedAfter = promotedAt - deletedAt;
      await waitFor('a publish sent after the promotion acknowledged', () => firstWriteAfter > 0 && acknowledged.length > ackedBefore, 2 * MINUTE);
      const after = acknowledged.length;
      await waitFor('publishes going on', () => acknowledged.length >= after + 10, MINUTE);
    } finally {
      stop = true;
      await load;
    }
    const writesAfter = firstWriteAfter - promotedAt;
    process.stderr.write(
      `bundled sentinel (${tls ? 'TLS' : 'plain'}): master ${oldMaster} deleted; ${newMaster} named master after ${promotedAfter} ms; a publish acknowledged again ${writesAfter} ms after that; ` +
        `${acknowledged.length} publishes acknowledged, ${refused.length} refused; the core's container restarted ${(await coreRestarts()) - restartsBefore} times meanwhile\n`,
    );
    // The core's reconnect to the master the sentinels name; the bound is generous for a loaded 2-core machine.
    expect(writesAfter).toBeLessThan(60_000);
    for (const answer of refused) expect(answer).toMatch(/^(503|0 )|UHLP_STATE_UNAVAILABLE|UHLP_IDEMPOTENCY_IN_FLIGHT/);

    // Nothing acknowledged is lost: every acknowledged publish ran.
    const missing = await waitFor('every acknowledged publish run', async () => {
      const counts = await Promise.all(acknowledged.map(async (id) => [id, await runs(id).catch(() => -1)] as const));
      const notRun = counts.filter(([, count]) => count < 1);
      return notRun.length === 0 ? [] : undefined;
    }, 3 * MINUTE).catch(async () => (await Promise.all(acknowledged.map(async (id) => [id, await runs(id).catch(() => -1)] as const))).filter(([, c]) => c < 1));
    expect(missing).toEqual([]);
    // A once-only key answers the same, before the deletion and throughout.
    expect(await until200('the once-only key again', () => mint('before-failover'))).toEqual(before);
    for (const [key, answers] of minted) expect(answers.every((answer) => JSON.stringify(answer) === JSON.stringify(answers[0])), key).toBe(true);

    // The deleted pod is back (a new pod under its name) as a replica of the new master, not a second master.
    const newHost = `${newMaster}.${fullname}-redis-headless.${namespace.name}.svc`;
    const settled = await waitFor('the deleted pod back as a replica of the new master', async () => {
      const back = (await pods('redis')).find((pod) => pod.metadata.name === oldMaster);
      if (!back || back.metadata.uid === oldPod.metadata.uid || !isReady(back)) return undefined;
      const found = await roles();
      return found.size === 3 && found.get(oldMaster)?.[0] === 'slave' ? found : undefined;
    }, 4 * MINUTE).catch(async (error: Error) => {
      // What the pod did instead: its phase, its start-up step's output, the roles and the sentinels' master.
      const back = await get<{ status?: Record<string, unknown> }>(['get', 'pod', oldMaster!]).catch(() => undefined);
      const startUp = await kubectl(['logs', '-n', namespace.name, oldMaster!, '-c', 'config']).catch((failure: Error) => failure.message);
      throw new Error(`${error.message}; ${oldMaster}: ${JSON.stringify(back?.status).slice(0, 1500)}; start-up step: ${String(startUp).slice(-600)}; roles ${JSON.stringify([...(await roles())])}; named ${await namedMaster()}`);
    });
    expect([...settled].filter(([, role]) => role[0] === 'master').map(([name]) => name)).toEqual([newMaster]);
    for (const [name, role] of settled) if (name !== newMaster) expect(role).toEqual(['slave', newHost]);
    // The sentinels agree, and the core still writes.
    expect(await namedMaster()).toBe(newMaster);
    expect((await until200('a publish after it settled', () => publish('after-settle'))).status).toBe(200);
  }, 15 * MINUTE);
});
