/**
 * Reconciles one SandboxPool: its status (the warm count it is held at, spec.replicas
 * capped at maxSize, which the scale subresource reads; the label selector of its
 * sandboxes, for an HPA; observedGeneration; the Ready condition) and, when the
 * operator keeps sandbox pods (`pods`), the pool's warm pods, its NetworkPolicy, the
 * ready and busy counts and the Warm condition. Without `pods` the ready and busy
 * counts belong to whatever runs the sandboxes and are kept as found.
 */
import type { CoreV1Api, NetworkingV1Api, V1NetworkPolicy, V1Pod } from '@kubernetes/client-node';
import type { SandboxPoolStatus } from '../apps/schema/sandbox-pool-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { SANDBOX_POOL, apiStatus, type CustomResourceClient, type SandboxPoolResource } from '../k8s/custom-resources.js';
import type { PodInformer } from '../k8s/pod-informer.js';
import type { ResourceInformer } from '../k8s/resource-informer.js';
import { LABEL_APP, LABEL_POOL, LABEL_SANDBOX_POOL } from '../sandbox/sandbox-labels.js';
import { sameStatus, setCondition, type ConditionInput } from './conditions.js';
import { splitKey, type ReconcileResult } from './controller.js';
import { ClaimerPods } from './claimer-pods.js';
import { mcpPoolWaiting, networkPolicyName, planPods, sandboxNetworkPolicy, warmPod, type PodPlan, type SandboxPodsOptions } from './sandbox-pool-pods.js';

/** What the operator needs to keep sandbox pods. */
export interface SandboxPoolPods {
  core: CoreV1Api;
  networking: NetworkingV1Api;
  /** Sandbox pods (label uhlp.dev/role=sandbox) of the watched namespaces. */
  cache: PodInformer;
  options: SandboxPodsOptions;
  /** Field manager of the writes. */
  fieldManager: string;
}

export interface SandboxPoolReconcilerDeps {
  client: CustomResourceClient;
  pools: ResourceInformer<SandboxPoolResource>;
  /** Keep the pools' warm pods. @defaultValue none: status only */
  pods?: SandboxPoolPods;
  /** Clock for condition timestamps. @defaultValue `() => new Date()` */
  now?: () => Date;
}

/** How soon a pool whose pods are starting is looked at again (pod events usually come first). */
const FILLING_RECHECK_MS = 2000;
/**
 * How soon a pool with pods claimed by in-cluster cores is looked at again, for claims
 * of core pods that went away (no event of the pool's own pods tells).
 */
const CLAIMS_RECHECK_MS = 5000;

/** The status fields the operator owns, computed from the spec (and the pods, when it keeps them). */
export function sandboxPoolStatus(pool: SandboxPoolResource, now: Date, plan?: PodPlan, options: SandboxPodsOptions = {}): SandboxPoolStatus {
  const { replicas, maxSize, appName, poolName } = pool.spec;
  const generation = pool.metadata.generation ?? 0;
  const held = Math.min(replicas, maxSize);
  const ready: ConditionInput =
    replicas > maxSize
      ? { type: 'Ready', status: 'True', reason: 'CappedAtMaxSize', message: `spec.replicas ${replicas} is over maxSize; held at ${maxSize}`, observedGeneration: generation }
      : { type: 'Ready', status: 'True', reason: 'AsRequested', message: `held at ${held} warm sandbox(es)`, observedGeneration: generation };
  let conditions = setCondition(pool.status?.conditions, ready, now);
  const counts: Partial<SandboxPoolStatus> = {};
  if (plan) {
    counts.readyReplicas = plan.ready;
    counts.busyReplicas = plan.busy;
    const waiting = mcpPoolWaiting(pool, options);
    const warm: ConditionInput =
      waiting !== undefined
        ? { type: 'Warm', status: 'False', ...waiting, observedGeneration: generation }
        : plan.ready >= plan.target
        ? { type: 'Warm', status: 'True', reason: 'Filled', message: `${plan.ready} warm sandbox pod(s) ready, ${plan.busy} busy`, observedGeneration: generation }
        : { type: 'Warm', status: 'False', reason: 'Filling', message: `${plan.ready} of ${plan.target} warm sandbox pod(s) ready, ${plan.busy} busy`, observedGeneration: generation };
    conditions = setCondition(conditions, warm, now);
  }
  return {
    ...pool.status,
    ...counts,
    observedGeneration: generation,
    replicas: held,
    selector: `${LABEL_APP}=${appName},${LABEL_POOL}=${poolName}`,
    conditions,
  };
}

export class SandboxPoolReconciler {
  private readonly claimers: ClaimerPods | undefined;

  constructor(private readonly deps: SandboxPoolReconcilerDeps) {
    this.claimers = deps.pods ? new ClaimerPods(deps.pods.core) : undefined;
  }

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const pool = this.deps.pools.get(namespace, name);
    if (!pool || pool.metadata.deletionTimestamp) return;
    let plan: PodPlan | undefined;
    if (this.deps.pods) plan = await this.convergePods(pool, this.deps.pods);
    const status = sandboxPoolStatus(pool, (this.deps.now ?? (() => new Date()))(), plan, this.deps.pods?.options);
    if (!sameStatus(pool.status, status)) await this.deps.client.patchStatus(SANDBOX_POOL, namespace, name, status);
    if (plan && (plan.create > 0 || plan.ready < plan.target)) return { requeueAfterMs: FILLING_RECHECK_MS };
    if (plan && plan.claimed.length > 0) return { requeueAfterMs: CLAIMS_RECHECK_MS };
  }

  private async convergePods(pool: SandboxPoolResource, pods: SandboxPoolPods): Promise<PodPlan> {
    const { namespace, name } = pool.metadata;
    await this.ensureNetworkPolicy(pool, pods);
    const owned = pods.cache.list(namespace).filter((pod) => pod.metadata?.labels?.[LABEL_SANDBOX_POOL] === name);
    const plan = planPods(pool, owned, pods.options);
    const orphaned: PodPlan['remove'][number][] = [];
    for (const pod of plan.claimed) {
      if (!(await this.claimers!.exists(pod.claimerPod))) orphaned.push(pod);
    }
    for (const { name: podName, resourceVersion } of [...plan.remove, ...orphaned]) {
      // The resourceVersion precondition: a pod a core claimed since we read it stays.
      await pods.core
        .deleteNamespacedPod({ name: podName, namespace, gracePeriodSeconds: 0, body: { preconditions: { resourceVersion } } })
        .catch((error: unknown) => {
          if (apiStatus(error) !== 404 && apiStatus(error) !== 409) throw error;
        });
    }
    await Promise.all(
      Array.from({ length: plan.create }, () =>
        pods.core.createNamespacedPod({ namespace, body: warmPod(pool, pods.options) as V1Pod, fieldManager: pods.fieldManager }),
      ),
    );
    return plan;
  }

  private async ensureNetworkPolicy(pool: SandboxPoolResource, pods: SandboxPoolPods): Promise<void> {
    const { namespace } = pool.metadata;
    const body = clientNetworkPolicy(sandboxNetworkPolicy(pool, pods.options));
    const name = networkPolicyName(pool);
    const existing = await pods.networking.readNamespacedNetworkPolicy({ name, namespace }).catch((error: unknown) => {
      if (apiStatus(error) === 404) return undefined;
      throw error;
    });
    if (!existing) {
      await pods.networking.createNamespacedNetworkPolicy({ namespace, body, fieldManager: pods.fieldManager }).catch((error: unknown) => {
        if (apiStatus(error) !== 409) throw error;
      });
      return;
    }
    // Canonical JSON: the client's models and a manifest list keys in different orders.
    if (canonicalJson(existing.spec) !== canonicalJson(body.spec)) {
      await pods.networking.replaceNamespacedNetworkPolicy({ name, namespace, body: { ...body, metadata: { ...(body.metadata ?? {}), resourceVersion: existing.metadata?.resourceVersion } }, fieldManager: pods.fieldManager });
    }
  }
}

/**
 * The manifest as the API client's models spell it: they name an ingress rule's
 * `from` `_from` (a reserved word where they are generated) and send only the
 * fields they know, so a plain `from` would be dropped and the rule would admit
 * every peer.
 */
export function clientNetworkPolicy(manifest: Record<string, unknown>): V1NetworkPolicy {
  const policy = structuredClone(manifest) as { spec?: { ingress?: Array<Record<string, unknown>> } };
  for (const rule of policy.spec?.ingress ?? []) {
    if ('from' in rule) {
      rule['_from'] = rule['from'];
      delete rule['from'];
    }
  }
  return policy as V1NetworkPolicy;
}
