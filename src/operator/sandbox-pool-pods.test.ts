import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { SandboxPoolResource } from '../k8s/custom-resources.js';
import { podConfigHash } from '../sandbox/sandbox-pod.js';
import { mcpPoolWaiting, planPods, poolInput, sandboxNetworkPolicy, warmPod } from './sandbox-pool-pods.js';

function pool(replicas: number, maxSize: number): SandboxPoolResource {
  return {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'SandboxPool',
    metadata: { name: 'shop-main', namespace: 'ns', uid: 'u1', generation: 1 },
    spec: { appName: 'shop', poolName: 'main', replicas, runner: 'jit', minWarm: 1, maxSize, maxUses: 1, concurrency: 1, idleTtlSeconds: 1, maxQueue: 1, acquireTimeoutMs: 1, limits: { memoryMb: 128, cpus: 1, timeoutMs: 1 } },
  };
}

const hash = podConfigHash(poolInput(pool(1, 1), {}));
const mcpServer = { packageKey: '0123456789abcdef0123456789abcdef', entry: 'dist/index.js', args: ['stdio'], env: [] };

function pod(name: string, state: 'warm' | 'claimed', options: { ready?: boolean; phase?: string; config?: string; deleting?: boolean } = {}): V1Pod {
  return {
    metadata: {
      name,
      resourceVersion: `rv-${name}`,
      labels: { 'uhlp.dev/sandbox-state': state, 'uhlp.dev/config-hash': options.config ?? hash },
      ...(options.deleting ? { deletionTimestamp: new Date() } : {}),
    },
    status: { phase: options.phase ?? 'Running', conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }] },
  };
}

describe('planPods', () => {
  it('creates the missing warm pods up to spec.replicas', () => {
    expect(planPods(pool(3, 5), [pod('a', 'warm')], {})).toMatchObject({ create: 2, remove: [], ready: 1, busy: 0, target: 3 });
  });

  it('holds warm pods within what maxSize leaves beside the claimed ones, and never touches a live claimed pod', () => {
    const plan = planPods(pool(4, 5), [pod('c1', 'claimed'), pod('c2', 'claimed'), pod('w1', 'warm')], {});
    expect(plan).toMatchObject({ create: 2, busy: 2, target: 3 });
    expect(plan.remove).toEqual([]);
  });

  it('removes extra warm pods, the not-yet-Ready first, with the resourceVersion it saw', () => {
    const plan = planPods(pool(1, 5), [pod('r1', 'warm'), pod('n1', 'warm', { ready: false }), pod('r2', 'warm')], {});
    expect(plan.create).toBe(0);
    expect(plan.remove.map((r) => r.name)).toEqual(['n1', 'r1']);
    expect(plan.remove[0]!.resourceVersion).toBe('rv-n1');
  });

  it('replaces warm pods of another configuration and ended pods, and ignores pods being deleted', () => {
    const plan = planPods(
      pool(2, 5),
      [pod('old', 'warm', { config: 'other' }), pod('dead', 'warm', { phase: 'Failed' }), pod('gone', 'claimed', { phase: 'Succeeded' }), pod('leaving', 'warm', { deleting: true }), pod('ok', 'warm')],
      {},
    );
    expect(plan.remove.map((r) => r.name).sort()).toEqual(['dead', 'gone', 'old']);
    expect(plan).toMatchObject({ create: 1, ready: 1, busy: 0, target: 2 });
  });

  it('lists the claimed pods that name their core pod, for the reconciler to check', () => {
    const named = pod('c1', 'claimed');
    named.metadata!.annotations = { 'uhlp.dev/claimer-pod': 'ns/core-abc' };
    const plan = planPods(pool(1, 5), [named, pod('c2', 'claimed'), pod('w1', 'warm')], {});
    expect(plan.claimed).toEqual([{ name: 'c1', resourceVersion: 'rv-c1', claimerPod: 'ns/core-abc' }]);
    expect(plan.remove).toEqual([]);
  });

  it('keeps no warm pods for a runner: mcp pool whose server no core has written yet, and removes any', () => {
    const mcp = pool(2, 5);
    (mcp.spec as { runner: string }).runner = 'mcp';
    expect(planPods(mcp, [pod('w', 'warm', { config: podConfigHash(poolInput(mcp, {})) })], {})).toMatchObject({ create: 0, target: 0, remove: [{ name: 'w' }] });
  });

  it('keeps the warm pods of a runner: mcp pool once a core wrote its server, and the package cache is configured', () => {
    const mcp = pool(2, 5);
    (mcp.spec as { runner: string }).runner = 'mcp';
    const withServer = { ...mcp, spec: { ...mcp.spec, mcpServer } };
    const options = { packageCache: { claimName: 'mcp-packages' } };
    expect(mcpPoolWaiting(mcp, options)).toMatchObject({ reason: 'WaitingForServer' });
    expect(mcpPoolWaiting(withServer, {})).toMatchObject({ reason: 'NoPackageCache' });
    expect(mcpPoolWaiting(withServer, options)).toBeUndefined();
    expect(planPods(withServer, [], {})).toMatchObject({ create: 0, target: 0 });
    expect(planPods(withServer, [], options)).toMatchObject({ create: 2, target: 2 });
    // The warm pod is the one the pod driver makes of the same launch: the server, its package, read-only.
    const warm = warmPod(withServer, options) as { metadata: { labels: Record<string, string> }; spec: { containers: Array<{ args: string[]; volumeMounts: unknown[] }> } };
    expect(warm.metadata.labels['uhlp.dev/config-hash']).toBe(podConfigHash(poolInput(withServer, options)));
    expect(warm.spec.containers[0]!.args).toEqual(expect.arrayContaining(['--server-entry', '/mcp-server/dist/index.js', '--server-arg', 'stdio']));
    expect(warm.spec.containers[0]!.volumeMounts).toContainEqual({ name: 'mcp-server', mountPath: '/mcp-server', subPath: mcpServer.packageKey, readOnly: true });
  });

  it('gives a runner: mcp pool no egress at all, and the core alone as its peer', () => {
    const mcp = pool(1, 2);
    (mcp.spec as { runner: string }).runner = 'mcp';
    const policy = sandboxNetworkPolicy(mcp, {}) as { spec: { egress: unknown[]; ingress: unknown[]; policyTypes: string[] } };
    expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec.egress).toEqual([]);
    expect(policy.spec.ingress).toHaveLength(1);
    expect((sandboxNetworkPolicy(pool(1, 2), {}) as { spec: { egress: unknown[] } }).spec.egress).toHaveLength(1);
  });

  it('scales to zero', () => {
    expect(planPods(pool(0, 5), [pod('w', 'warm')], {}).remove.map((r) => r.name)).toEqual(['w']);
  });
});
