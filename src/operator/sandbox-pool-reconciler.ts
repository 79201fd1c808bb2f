/**
 * Reconciles one SandboxPool's status: the warm count it is held at (spec.replicas
 * capped at maxSize; the scale subresource reads it), the label selector of its
 * sandboxes (for an HPA), observedGeneration and the Ready condition. The counts of
 * ready and busy sandboxes belong to the runtime that runs them and are kept as found.
 */
import { APP_LABEL, POOL_LABEL, type SandboxPoolStatus } from '../definitions/sandbox-pool-schema.js';
import { SANDBOX_POOL, type CustomResourceClient, type SandboxPoolResource } from '../k8s/custom-resources.js';
import type { ResourceInformer } from '../k8s/resource-informer.js';
import { sameStatus, setCondition, type ConditionInput } from './conditions.js';
import { splitKey } from './controller.js';

export interface SandboxPoolReconcilerDeps {
  client: CustomResourceClient;
  pools: ResourceInformer<SandboxPoolResource>;
  /** Clock for condition timestamps. @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** The status fields the operator owns, computed from the spec alone. */
export function sandboxPoolStatus(pool: SandboxPoolResource, now: Date): SandboxPoolStatus {
  const { replicas, maxSize, appName, poolName } = pool.spec;
  const generation = pool.metadata.generation ?? 0;
  const held = Math.min(replicas, maxSize);
  const ready: ConditionInput =
    replicas > maxSize
      ? { type: 'Ready', status: 'True', reason: 'CappedAtMaxSize', message: `spec.replicas ${replicas} is over maxSize; held at ${maxSize}`, observedGeneration: generation }
      : { type: 'Ready', status: 'True', reason: 'AsRequested', message: `held at ${held} warm sandbox(es)`, observedGeneration: generation };
  return {
    ...pool.status,
    observedGeneration: generation,
    replicas: held,
    selector: `${APP_LABEL}=${appName},${POOL_LABEL}=${poolName}`,
    conditions: setCondition(pool.status?.conditions, ready, now),
  };
}

export class SandboxPoolReconciler {
  constructor(private readonly deps: SandboxPoolReconcilerDeps) {}

  async reconcile(key: string): Promise<void> {
    const { namespace, name } = splitKey(key);
    const pool = this.deps.pools.get(namespace, name);
    if (!pool || pool.metadata.deletionTimestamp) return;
    const status = sandboxPoolStatus(pool, (this.deps.now ?? (() => new Date()))());
    if (sameStatus(pool.status, status)) return;
    await this.deps.client.patchStatus(SANDBOX_POOL, namespace, name, status);
  }
}
