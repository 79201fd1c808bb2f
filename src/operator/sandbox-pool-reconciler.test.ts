import { describe, expect, it } from 'vitest';
import type { SandboxPoolResource } from '../k8s/custom-resources.js';
import { sandboxNetworkPolicy } from './sandbox-pool-pods.js';
import { clientNetworkPolicy, sandboxPoolStatus } from './sandbox-pool-reconciler.js';

const now = new Date('2026-01-01T00:00:00Z');
function pool(replicas: number, maxSize: number, status?: SandboxPoolResource['status']): SandboxPoolResource {
  return {
    apiVersion: 'uhlp.dev/v1alpha1',
    kind: 'SandboxPool',
    metadata: { name: 'shop-main', namespace: 'ns', generation: 3 },
    spec: { appName: 'shop', poolName: 'main', replicas, runner: 'jit', minWarm: 1, maxSize, maxUses: 1, concurrency: 1, idleTtlSeconds: 1, maxQueue: 1, acquireTimeoutMs: 1, limits: { memoryMb: 128, cpus: 1, timeoutMs: 1 } },
    ...(status ? { status } : {}),
  };
}

describe('sandboxPoolStatus', () => {
  it('holds the pool at spec.replicas and gives the selector of its sandboxes', () => {
    expect(sandboxPoolStatus(pool(2, 4), now)).toMatchObject({
      observedGeneration: 3,
      replicas: 2,
      selector: 'uhlp.dev/app=shop,uhlp.dev/pool=main',
      conditions: [{ type: 'Ready', status: 'True', reason: 'AsRequested', observedGeneration: 3 }],
    });
  });

  it('caps replicas at maxSize and says so', () => {
    const status = sandboxPoolStatus(pool(9, 4), now);
    expect(status.replicas).toBe(4);
    expect(status.conditions?.[0]).toMatchObject({ reason: 'CappedAtMaxSize', message: expect.stringContaining('maxSize') });
  });

  it('keeps the counts the runtime reported', () => {
    expect(sandboxPoolStatus(pool(2, 4, { readyReplicas: 1, busyReplicas: 1 }), now)).toMatchObject({ readyReplicas: 1, busyReplicas: 1 });
  });
});

describe('clientNetworkPolicy', () => {
  it("spells each ingress rule's peers as the API client sends them, so they are not dropped", () => {
    const manifest = sandboxNetworkPolicy({ ...pool(1, 2), metadata: { name: 'shop-main', namespace: 'ns', uid: 'u1' } }, {});
    const policy = clientNetworkPolicy(manifest);
    const rule = policy.spec!.ingress![0]!;
    expect(rule._from).toEqual([{ podSelector: { matchLabels: { 'app.kubernetes.io/component': 'core' } } }]);
    expect('from' in rule).toBe(false);
    expect(policy.spec!.egress![0]!.to).toEqual(rule._from);
    // The manifest itself is left as it was.
    expect((manifest.spec as { ingress: Array<Record<string, unknown>> }).ingress[0]!['from']).toEqual(rule._from);
  });
});
