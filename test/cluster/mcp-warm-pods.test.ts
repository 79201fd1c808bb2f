/**
 * Warm pods of a runner: mcp pool on the real one-node cluster: the operator keeps none
 * until a core has installed the server's package and written its launch into the
 * SandboxPool (the pod driver's preparePool, at a pool's start or a miss), then keeps them warm like any pool's, each
 * mounting the package from the cache volume (a directory of the node here) read-only; a
 * core claims one and calls its server (server-memory from the npm registry).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { McpHostAnswer } from '../../src/contract/mcp-host-wire.js';
import { CustomResourceClient, SANDBOX_POOL, type SandboxPoolResource } from '../../src/k8s/custom-resources.js';
import { silentLogger } from '../../src/logger.js';
import { npmEnvironment } from '../../src/mcp/federation/npm-environment.js';
import { PackageCache } from '../../src/mcp/federation/package-cache.js';
import { runOperator, type RunningOperator } from '../../src/operator/run-operator.js';
import { PodDriver } from '../../src/sandbox/pod-driver.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxHandle, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { poolSpec } from '../helpers/pool-spec.js';
import { testImages, uniqueInstanceId } from '../docker/docker-env.js';
import { FAST_LEASE, collectingLogger } from '../k8s/fixtures.js';
import { createNamespace, installCrds, waitFor } from '../k8s/kube-env.js';
import { importImages, requireNode } from './node-env.js';

/** Empty at every run: the package is installed as a core installs it (npm, with the core's npm environment). */
const PACKAGE_CACHE = mkdtempSync(path.join(os.tmpdir(), 'uhlp-test-mcp-packages-'));
const VOLUME = { hostPath: PACKAGE_CACHE };

describe('warm pods of a runner: mcp pool', () => {
  let kubeConfig: KubeConfig;
  let namespace: { name: string; remove: () => Promise<void> };
  let operator: RunningOperator | undefined;
  let driver: PodDriver | undefined;
  let client: CustomResourceClient;
  let spec: SandboxSpec;
  const held: SandboxHandle[] = [];

  const poolResource = (): Promise<SandboxPoolResource | undefined> => client.get<SandboxPoolResource>(SANDBOX_POOL, namespace.name, 'notes-memory');
  const warmPods = async (): Promise<V1Pod[]> =>
    (await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: namespace.name, labelSelector: 'uhlp.dev/pool=memory,uhlp.dev/sandbox-state=warm' })).items.filter(
      (pod) => pod.status?.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True'),
    );

  beforeAll(async () => {
    kubeConfig = await requireNode();
    await installCrds(kubeConfig);
    namespace = await createNamespace(kubeConfig, 'uhlp-mcp-pods');
    client = new CustomResourceClient(kubeConfig, { fieldManager: 'uhlp-test' });
    const { mcpHost } = await testImages();
    await importImages([mcpHost.reference]);
    const installed = await new PackageCache(PACKAGE_CACHE, { env: npmEnvironment(process.env) }).install({ name: '@modelcontextprotocol/server-memory', version: '2026.8.31' });
    const pool = poolSpec({ name: 'memory', runner: 'mcp', minWarm: 1, maxSize: 2 });
    spec = {
      appId: 'notes',
      pool,
      definitionsRoot: os.tmpdir(),
      labels: {},
      mcpServer: { packageDir: installed.dir, entry: installed.entry, args: [], env: ['MEMORY_FILE_PATH={work}/memory.jsonl'] },
    };
    // The SandboxPool as the operator makes it of an AppDefinition's pool (spec.replicas from minWarm).
    const { name: poolName, ...settings } = pool;
    await client.create(SANDBOX_POOL, {
      apiVersion: 'uhlp.dev/v1alpha1',
      kind: 'SandboxPool',
      metadata: { name: 'notes-memory', namespace: namespace.name, labels: { 'uhlp.dev/app': 'notes', 'uhlp.dev/pool': poolName } },
      spec: { appName: 'notes', poolName, replicas: 1, ...settings },
    });
    operator = await runOperator({
      kubeConfig,
      namespaces: [namespace.name],
      ...FAST_LEASE,
      logger: collectingLogger(),
      sandboxPods: { images: { mcp: mcpHost.reference }, packageCache: VOLUME },
    });
    driver = new PodDriver({ logger: silentLogger(), instanceId: uniqueInstanceId('mcp-pods'), kubeConfig, namespace: namespace.name, images: { mcp: mcpHost.reference }, packageCache: { root: PACKAGE_CACHE, volume: VOLUME } });
  }, 180_000);

  afterAll(async () => {
    for (const handle of held) await driver?.destroy(handle, 'shutdown').catch(() => undefined);
    await driver?.close();
    await operator?.stop();
    await namespace?.remove();
    rmSync(PACKAGE_CACHE, { recursive: true, force: true });
  });

  it('waits for the server a core writes (at a miss, or when its pool starts), then keeps a warm pod that a core claims and calls', async () => {
    const waiting = await waitFor('Warm=False WaitingForServer', async () => (await poolResource())?.status?.conditions?.find((c) => c.type === 'Warm' && c.reason === 'WaitingForServer'));
    expect(waiting.status).toBe('False');
    expect(await warmPods()).toEqual([]);

    // A core whose pool started before the SandboxPool existed: its first call misses, makes a pod of
    // its own, and writes the server then.
    const made = await driver!.create(spec);
    expect(made.id).toMatch(/^sb-notes-memory-/);
    const written = await waitFor('spec.mcpServer written', async () => (await poolResource())?.spec.mcpServer);
    await driver!.destroy(made, 'recycled');
    expect(written).toEqual({ packageKey: path.basename(spec.mcpServer!.packageDir!), entry: spec.mcpServer!.entry, args: [], env: ['MEMORY_FILE_PATH={work}/memory.jsonl'] });
    // Written once: a second core (or a restart) with the same server leaves the spec (its generation) as it is.
    const generation = (await poolResource())!.metadata.generation;
    await driver!.preparePool(spec);
    expect((await poolResource())!.metadata.generation).toBe(generation);

    const [warm] = await waitFor('a Ready warm pod', async () => ((await warmPods()).length === 1 ? warmPods() : undefined), 90_000);
    const container = warm!.spec!.containers[0]!;
    expect(container.volumeMounts).toContainEqual(expect.objectContaining({ mountPath: '/mcp-server', subPath: written.packageKey, readOnly: true }));
    expect(container.args).toEqual(expect.arrayContaining(['--server-entry', `/mcp-server/${written.entry}`]));
    await waitFor('Warm=True', async () => (await poolResource())?.status?.conditions?.find((c) => c.type === 'Warm' && c.status === 'True'));

    // The core claims the operator's pod (the same configuration hash) rather than making one.
    const handle = await driver!.create(spec);
    held.push(handle);
    expect(handle.id).toBe(warm!.metadata!.name);
    const sandbox = new SandboxClient(handle.endpoint);
    try {
      const call = (method: 'tools/list' | 'tools/call', params: Record<string, unknown>) =>
        sandbox.mcp(JSON.stringify({ method, params, timeoutMs: 10_000, maxOutputBytes: 1 << 20 }), 15_000).then((response) => JSON.parse(response.body.toString('utf8')) as McpHostAnswer);
      const tools = ((await call('tools/list', {})).result!['tools'] as Array<{ name: string }>).map((tool) => tool.name);
      expect(tools).toEqual(expect.arrayContaining(['create_entities', 'read_graph']));
      await call('tools/call', { name: 'create_entities', arguments: { entities: [{ name: 'ada', entityType: 'person', observations: ['in a pod'] }] } });
      const graph = (await call('tools/call', { name: 'read_graph', arguments: {} })).result!;
      expect(JSON.stringify(graph)).toContain('in a pod');
    } finally {
      sandbox.close();
    }
    // The pool refills what the core claimed.
    await waitFor('a new warm pod', async () => ((await warmPods()).some((pod) => pod.metadata!.name !== warm!.metadata!.name) ? true : undefined), 90_000);
  }, 240_000);
});
