/**
 * What the operator makes of one pool an AppDefinition declares: the SandboxPool to
 * create, and the merge patch that brings an existing one in line. Pure functions,
 * so the rules (notably who owns spec.replicas) are unit-tested without a server.
 */
import { isDeepStrictEqual } from 'node:util';
import { APP_API_VERSION, APP_KIND, type PoolSpec } from '../apps/schema/app-definition-schema.js';
import { SANDBOX_POOL_KIND, type SandboxPoolSpec } from '../apps/schema/sandbox-pool-schema.js';
import { LABEL_APP, LABEL_POOL } from '../sandbox/sandbox-labels.js';
import type { AppDefinitionResource, OwnerReference, SandboxPoolResource } from '../k8s/custom-resources.js';

/** The SandboxPool name of a pool of an app: `<app>-<pool>`. */
export function sandboxPoolName(appName: string, poolName: string): string {
  return `${appName}-${poolName}`;
}

export function ownerReference(app: AppDefinitionResource): OwnerReference {
  return {
    apiVersion: APP_API_VERSION,
    kind: APP_KIND,
    name: app.metadata.name,
    uid: app.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** True when the pool's controller owner is this very app (same uid, not just same name). */
export function isControlledBy(pool: SandboxPoolResource, app: AppDefinitionResource): boolean {
  return (pool.metadata.ownerReferences ?? []).some(
    (owner) => owner.controller === true && owner.kind === APP_KIND && owner.uid === app.metadata.uid,
  );
}

/**
 * Spec fields the AppDefinition does not decide, left as found: replicas belongs to
 * whoever scales the pool, mcpServer to the core (it writes the server's launch once it
 * installed the package, which the operator cannot).
 */
const NOT_MIRRORED = new Set(['replicas', 'mcpServer']);

// Every SandboxPool spec field except those mirrors the app's pool declaration.
function mirroredSpec(appName: string, pool: PoolSpec): Omit<SandboxPoolSpec, 'replicas'> {
  const { name, ...settings } = pool;
  return { appName, poolName: name, ...settings };
}

export function newSandboxPool(app: AppDefinitionResource, pool: PoolSpec): SandboxPoolResource {
  return {
    apiVersion: APP_API_VERSION,
    kind: SANDBOX_POOL_KIND,
    metadata: {
      name: sandboxPoolName(app.metadata.name, pool.name),
      namespace: app.metadata.namespace,
      labels: { [LABEL_APP]: app.metadata.name, [LABEL_POOL]: pool.name },
      ownerReferences: [ownerReference(app)],
    },
    spec: { ...mirroredSpec(app.metadata.name, pool), replicas: pool.minWarm },
  };
}

/**
 * The merge patch of `existing.spec` that mirrors the declaration again, or undefined
 * when nothing differs. spec.replicas belongs to whoever scales the pool (kubectl,
 * an HPA); it is reset to minWarm only when the declared minWarm itself changed.
 */
export function sandboxPoolSpecPatch(existing: SandboxPoolSpec, appName: string, pool: PoolSpec): Record<string, unknown> | undefined {
  const desired = mirroredSpec(appName, pool) as Record<string, unknown>;
  const current = existing as unknown as Record<string, unknown>;
  const patch: Record<string, unknown> = {};
  for (const key of new Set([...Object.keys(desired), ...Object.keys(current)])) {
    if (NOT_MIRRORED.has(key)) continue;
    if (!isDeepStrictEqual(desired[key], current[key])) patch[key] = desired[key] ?? null; // null removes in a merge patch
  }
  if ('minWarm' in patch) patch.replicas = pool.minWarm;
  return Object.keys(patch).length > 0 ? patch : undefined;
}
