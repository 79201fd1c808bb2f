/**
 * What `helm uninstall` runs before it deletes a release (the chart's pre-delete hook
 * runs `uhlp operator --uninstall`): the release's operators stop acting, and what they
 * made of the AppDefinitions goes, so that nothing runs on with nobody to manage it:
 * every SandboxPool of the served namespaces, the sandbox pods (warm and claimed), and,
 * owned by the pools, their NetworkPolicies. The AppDefinitions stay: they are the
 * users', with no finalizer to hold a namespace's deletion, and a release installed
 * later serves them again.
 *
 * The operators are stopped through their Lease, not by scaling their Deployment: the
 * hook holds it (so no operator re-creates a pool it deletes) and waits out the previous
 * holder's lease duration, past which that leader has stopped for sure. If the
 * uninstall fails after the hook, the operators lead again once the hold expires.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { hostname } from 'node:os';
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { APP_DEFINITION, SANDBOX_POOL, apiStatus, CustomResourceClient, type AppDefinitionResource, type SandboxPoolResource } from '../k8s/custom-resources.js';
import { LABEL_ROLE, ROLE_SANDBOX } from '../sandbox/sandbox-labels.js';
import { LEGACY_APP_FINALIZER, withoutLegacyFinalizer } from './app-definition-reconciler.js';
import { takeOverLease } from './leader-election.js';

export interface ReleaseUninstallOptions {
  readonly kubeConfig: KubeConfig;
  /** The served namespaces; all namespaces when empty (cluster-wide RBAC). */
  readonly namespaces: readonly string[];
  /** Namespace of the operators' Lease (the release namespace). */
  readonly leaseNamespace: string;
  /** Name of the Lease. @defaultValue `uhlp-operator` */
  readonly leaseName?: string;
  /** Delete sandbox pods too (the operator ran with `--sandbox-pods`; otherwise it has no rights on pods). @defaultValue false */
  readonly sandboxPods?: boolean;
  /** How long the Lease is held: long enough for helm to delete the operators. @defaultValue `600` */
  readonly holdSeconds?: number;
  /** How long to wait for the deleted pools and pods to be gone. @defaultValue `60000` */
  readonly timeoutMs?: number;
  readonly log: (message: string, fields?: Record<string, unknown>) => void;
}

export interface ReleaseUninstallReport {
  /** The operator that led until the hook took the Lease; empty when none did. */
  readonly stoppedLeader: string;
  readonly deletedPools: number;
  readonly deletedPods: number;
  /** AppDefinitions an earlier operator's finalizer was removed from. */
  readonly releasedApps: number;
  /** Pools and pods still there (terminating) when the wait ended. */
  readonly remaining: readonly string[];
}

const POLL_MS = 500;

export async function uninstallRelease(options: ReleaseUninstallOptions): Promise<ReleaseUninstallReport> {
  const identity = `uninstall-${hostname()}`;
  const takeover = await takeOverLease(options.kubeConfig, {
    namespace: options.leaseNamespace,
    ...(options.leaseName !== undefined ? { name: options.leaseName } : {}),
    identity,
    holdSeconds: options.holdSeconds ?? 600,
  });
  if (takeover.previousHolder !== '') {
    options.log('holding the operators\u2019 Lease; waiting until the previous leader has stopped', { leader: takeover.previousHolder, waitMs: takeover.previousDurationMs });
    await delay(takeover.previousDurationMs);
  }

  const client = new CustomResourceClient(options.kubeConfig, { fieldManager: identity });
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const scopes: Array<string | undefined> = options.namespaces.length > 0 ? [...options.namespaces] : [undefined];
  const sandboxSelector = `${LABEL_ROLE}=${ROLE_SANDBOX}`;
  const listPods = async (namespace: string | undefined): Promise<V1Pod[]> =>
    options.sandboxPods
      ? (namespace === undefined
          ? await core.listPodForAllNamespaces({ labelSelector: sandboxSelector })
          : await core.listNamespacedPod({ namespace, labelSelector: sandboxSelector })
        ).items
      : [];

  let releasedApps = 0;
  let deletedPools = 0;
  let deletedPods = 0;
  for (const namespace of scopes) {
    for (const app of (await client.list<AppDefinitionResource>(APP_DEFINITION, namespace)).items) {
      if (!(app.metadata.finalizers ?? []).includes(LEGACY_APP_FINALIZER)) continue;
      await client.patch(APP_DEFINITION, app.metadata.namespace, app.metadata.name, { metadata: withoutLegacyFinalizer(app) });
      releasedApps += 1;
    }
    for (const pool of (await client.list<SandboxPoolResource>(SANDBOX_POOL, namespace)).items) {
      if (await client.delete(SANDBOX_POOL, pool.metadata.namespace, pool.metadata.name)) deletedPools += 1;
    }
    // The pools' garbage collection would take their pods too; deleted here, they are gone when helm goes on.
    for (const pod of await listPods(namespace)) {
      const deleted = await core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace!, gracePeriodSeconds: 0 }).then(
        () => true,
        (error: unknown) => {
          if (apiStatus(error) === 404) return false;
          throw error;
        },
      );
      if (deleted) deletedPods += 1;
    }
  }

  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let remaining: string[] = [];
  for (;;) {
    remaining = [];
    for (const namespace of scopes) {
      for (const pool of (await client.list<SandboxPoolResource>(SANDBOX_POOL, namespace)).items) remaining.push(`sandboxpool/${pool.metadata.namespace}/${pool.metadata.name}`);
      for (const pod of await listPods(namespace)) remaining.push(`pod/${pod.metadata?.namespace}/${pod.metadata?.name}`);
    }
    if (remaining.length === 0 || Date.now() >= deadline) break;
    await delay(POLL_MS);
  }
  const report = { stoppedLeader: takeover.previousHolder, deletedPools, deletedPods, releasedApps, remaining };
  options.log(remaining.length === 0 ? 'release uninstalled: no pool and no sandbox pod left' : 'release uninstalled; some pools or pods are still terminating', { ...report });
  return report;
}
