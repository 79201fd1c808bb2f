import { describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { AppDefinitionResource } from '../k8s/custom-resources.js';
import { isControlledBy, newSandboxPool, sandboxPoolSpecPatch } from './sandbox-pool-template.js';

const pool: PoolSpec = poolSpec({ name: 'main', minWarm: 2 });
const app = {
  apiVersion: 'uhlp.dev/v1alpha1',
  kind: 'AppDefinition',
  metadata: { name: 'shop', namespace: 'ns', uid: 'uid-1' },
  spec: { deploymentMode: 'development', ingress: { hosts: [] }, pools: [pool], components: [], routes: [] },
} as AppDefinitionResource;

describe('newSandboxPool', () => {
  it('names the pool <app>-<pool>, labels it, makes the app its controller and starts replicas at minWarm', () => {
    const created = newSandboxPool(app, pool);
    expect(created.metadata).toMatchObject({
      name: 'shop-main',
      namespace: 'ns',
      labels: { 'uhlp.dev/app': 'shop', 'uhlp.dev/pool': 'main' },
      ownerReferences: [{ kind: 'AppDefinition', name: 'shop', uid: 'uid-1', controller: true }],
    });
    expect(created.spec).toMatchObject({ appName: 'shop', poolName: 'main', replicas: 2, maxSize: 4 });
    expect(isControlledBy(created, app)).toBe(true);
    expect(isControlledBy(created, { ...app, metadata: { ...app.metadata, uid: 'other' } })).toBe(false);
  });
});

describe('sandboxPoolSpecPatch', () => {
  const existing = newSandboxPool(app, pool).spec;
  const cases: Array<{ name: string; current: typeof existing; declared: PoolSpec; patch: Record<string, unknown> | undefined }> = [
    { name: 'nothing when in line', current: existing, declared: pool, patch: undefined },
    { name: 'keeps a scaled replicas count', current: { ...existing, replicas: 7 }, declared: pool, patch: undefined },
    { name: 'mirrors a changed maxSize but keeps replicas', current: { ...existing, replicas: 3 }, declared: { ...pool, maxSize: 8 }, patch: { maxSize: 8 } },
    { name: 'resets replicas when minWarm changes', current: { ...existing, replicas: 3 }, declared: { ...pool, minWarm: 1 }, patch: { minWarm: 1, replicas: 1 } },
    { name: 'removes a field the declaration dropped', current: { ...existing, image: 'old' }, declared: pool, patch: { image: null } },
    {
      name: "keeps the MCP server's launch a core wrote (the declaration has none)",
      current: { ...existing, mcpServer: { packageKey: '0123456789abcdef0123456789abcdef', entry: 'dist/index.js', args: [], env: [] } },
      declared: pool,
      patch: undefined,
    },
    { name: 'replaces changed limits whole', current: existing, declared: { ...pool, limits: { ...pool.limits, memoryMb: 256 } }, patch: { limits: { ...pool.limits, memoryMb: 256 } } },
  ];
  for (const { name, current, declared, patch } of cases) {
    it(name, () => expect(sandboxPoolSpecPatch(current, 'shop', declared)).toEqual(patch));
  }
});
