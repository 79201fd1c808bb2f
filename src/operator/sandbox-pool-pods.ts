/**
 * What the operator does with one SandboxPool's pods, as pure functions over what
 * the cache holds: how many warm pods to create, which to delete, what the status
 * counts are, and the pool's NetworkPolicy. The operator is the one owner of warm
 * pods (cores only claim them, see src/sandbox/pod-driver.ts): warm capacity then
 * follows `spec.replicas` whoever sets it (kubectl scale, an HPA), exists before any
 * core asks, and is shared by every core replica.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { APP_API_VERSION } from '../apps/schema/app-definition-schema.js';
import { SANDBOX_POOL_KIND } from '../apps/schema/sandbox-pool-schema.js';
import type { SandboxPoolResource } from '../k8s/custom-resources.js';
import type { RunnerKind } from '../images/runner-files.js';
import { ANNOTATION_CLAIMER_POD, LABEL_APP, LABEL_CONFIG, LABEL_POOL, LABEL_ROLE, LABEL_SANDBOX_STATE, ROLE_SANDBOX } from '../sandbox/sandbox-labels.js';
import { POD_RUNNER_PORT, podConfigHash, sandboxPod, type PackageCacheVolume, type SandboxPodInput } from '../sandbox/sandbox-pod.js';

/** Where the core's pods are, for the NetworkPolicy: sandboxes may reach them and nothing else. */
export interface CoreEndpoint {
  /** Labels of the core's pods. @defaultValue `{ 'app.kubernetes.io/component': 'core' }` */
  readonly selector: Readonly<Record<string, string>>;
  /** The core's HTTP port (its MCP endpoint). @defaultValue 8080 */
  readonly port: number;
}

export interface SandboxPodsOptions {
  /** Image per runner for pools that name none; must match the cores' (the pod hash includes it). @defaultValue RUNNER_IMAGES */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  readonly core?: Partial<CoreEndpoint>;
  /** The MCP package cache runner: mcp pods mount (the cores' UHLP_MCP_PACKAGE_VOLUME). @defaultValue none: no warm pods for such pools */
  readonly packageCache?: PackageCacheVolume;
}

export const DEFAULT_CORE_ENDPOINT: CoreEndpoint = { selector: { 'app.kubernetes.io/component': 'core' }, port: 8080 };

/** The pool's declaration as the pod template takes it. */
export function poolInput(pool: SandboxPoolResource, options: SandboxPodsOptions): SandboxPodInput {
  const { appName, poolName, replicas: _replicas, mcpServer, ...settings } = pool.spec;
  const spec = { name: poolName, ...settings } as PoolSpec;
  return {
    namespace: pool.metadata.namespace,
    appId: appName,
    pool: spec,
    ...(options.images ? { images: options.images } : {}),
    ...(spec.runner === 'mcp' && mcpServer !== undefined && options.packageCache !== undefined ? { mcpServer, packageCache: options.packageCache } : {}),
  };
}

/**
 * Why the operator keeps no warm pods for a runner: mcp pool, or undefined when it does:
 * a pod needs the server's launch (the core writes it once it installed the package) and
 * the volume of the package cache.
 */
export function mcpPoolWaiting(pool: SandboxPoolResource, options: SandboxPodsOptions): { reason: string; message: string } | undefined {
  if (pool.spec.runner !== 'mcp') return undefined;
  if (options.packageCache === undefined) {
    return { reason: 'NoPackageCache', message: 'runner: mcp pods mount the MCP package cache, and the operator has none (--mcp-package-volume)' };
  }
  if (pool.spec.mcpServer === undefined) {
    return { reason: 'WaitingForServer', message: "no warm pods until a core has installed the server's package and written spec.mcpServer" };
  }
  return undefined;
}

export interface PodPlan {
  /** Warm pods to create now. */
  readonly create: number;
  /** Pods to delete (extra, outdated or ended warm pods), with the resourceVersion a delete must match. */
  readonly remove: ReadonlyArray<{ name: string; resourceVersion: string | undefined }>;
  /** Warm pods of the current configuration that are Ready. */
  readonly ready: number;
  /** Pods claimed by a core. */
  readonly busy: number;
  /** Claimed pods that name the core pod that claimed them (ANNOTATION_CLAIMER_POD): deleted once it is gone. */
  readonly claimed: ReadonlyArray<{ name: string; resourceVersion: string | undefined; claimerPod: string }>;
  /** Warm pods the pool is held at: spec.replicas within what maxSize leaves beside the busy ones. */
  readonly target: number;
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function ended(pod: V1Pod): boolean {
  return pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded';
}

/**
 * Converges the pool's warm pods: outdated and ended warm pods go, missing ones are
 * created, extra ones go (those not yet Ready first). Claimed pods are the cores':
 * they count against maxSize but are never touched here, except ended ones, whose
 * core is gone or will see the end itself (and those whose core pod is gone: the
 * reconciler checks `claimed`).
 */
export function planPods(pool: SandboxPoolResource, pods: readonly V1Pod[], options: SandboxPodsOptions): PodPlan {
  const hash = podConfigHash(poolInput(pool, options));
  const live = pods.filter((pod) => !pod.metadata?.deletionTimestamp);
  const remove: Array<{ name: string; resourceVersion: string | undefined }> = [];
  const warm: V1Pod[] = [];
  const claimed: Array<{ name: string; resourceVersion: string | undefined; claimerPod: string }> = [];
  let busy = 0;
  for (const pod of live) {
    const labels = pod.metadata?.labels ?? {};
    const drop = (): void => void remove.push({ name: pod.metadata!.name!, resourceVersion: pod.metadata?.resourceVersion });
    if (labels[LABEL_SANDBOX_STATE] === 'warm') {
      if (ended(pod) || labels[LABEL_CONFIG] !== hash) drop();
      else warm.push(pod);
    } else if (ended(pod)) {
      drop();
    } else {
      busy += 1;
      const claimerPod = pod.metadata?.annotations?.[ANNOTATION_CLAIMER_POD];
      if (claimerPod) claimed.push({ name: pod.metadata!.name!, resourceVersion: pod.metadata?.resourceVersion, claimerPod });
    }
  }
  // A runner: mcp pod without its server's package would only fail.
  const target = mcpPoolWaiting(pool, options) !== undefined ? 0 : Math.max(0, Math.min(pool.spec.replicas, pool.spec.maxSize - busy));
  // Not-ready pods first: a Ready one is what a core may be claiming right now.
  warm.sort((a, b) => Number(isReady(a)) - Number(isReady(b)));
  const extra = warm.length - target;
  for (const pod of warm.slice(0, Math.max(0, extra))) remove.push({ name: pod.metadata!.name!, resourceVersion: pod.metadata?.resourceVersion });
  return {
    create: Math.max(0, target - warm.length),
    remove,
    ready: warm.filter(isReady).length,
    busy,
    claimed,
    target,
  };
}

/** A warm pod of the pool, owned by it (deleting the pool deletes its pods). */
export function warmPod(pool: SandboxPoolResource, options: SandboxPodsOptions): Record<string, unknown> {
  return sandboxPod(poolInput(pool, options), {
    state: 'warm',
    owner: { apiVersion: APP_API_VERSION, kind: SANDBOX_POOL_KIND, name: pool.metadata.name, uid: pool.metadata.uid ?? '' },
  });
}

/** The NetworkPolicy name of a pool. */
export function networkPolicyName(pool: SandboxPoolResource): string {
  return `${pool.metadata.name}-sandboxes`;
}

/**
 * The pool's sandboxes may be reached by the core only (its /execute calls and the
 * kubelet's probes, which no policy blocks) and may reach the core's port only (MCP:
 * every tool call, file read and model call goes through it), and no DNS: the MCP
 * URL the core sends names an address. An app's capabilities (web fetch, shell)
 * run in the core's endpoint hosts behind MCP, never in the sandbox, so no app needs
 * more egress than this. A runner: mcp pod gets no egress at all: its server has no
 * token, and nothing to ask the core, as its Docker container has no network.
 */
export function sandboxNetworkPolicy(pool: SandboxPoolResource, options: SandboxPodsOptions): Record<string, unknown> {
  const core = { ...DEFAULT_CORE_ENDPOINT, ...options.core };
  const corePeer = { podSelector: { matchLabels: { ...core.selector } } };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name: networkPolicyName(pool),
      namespace: pool.metadata.namespace,
      labels: { [LABEL_APP]: pool.spec.appName, [LABEL_POOL]: pool.spec.poolName },
      ownerReferences: [
        { apiVersion: APP_API_VERSION, kind: SANDBOX_POOL_KIND, name: pool.metadata.name, uid: pool.metadata.uid ?? '', controller: true, blockOwnerDeletion: true },
      ],
    },
    spec: {
      podSelector: { matchLabels: { [LABEL_ROLE]: ROLE_SANDBOX, [LABEL_APP]: pool.spec.appName, [LABEL_POOL]: pool.spec.poolName } },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [corePeer], ports: [{ protocol: 'TCP', port: POD_RUNNER_PORT }] }],
      egress: pool.spec.runner === 'mcp' ? [] : [{ to: [corePeer], ports: [{ protocol: 'TCP', port: core.port }] }],
    },
  };
}
