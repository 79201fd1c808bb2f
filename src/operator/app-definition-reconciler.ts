/**
 * Reconciles one AppDefinition: fetch (from the informer cache), handle deletion (the
 * garbage collector's: its pools are owned by it), validate what the CRD schema cannot,
 * converge its SandboxPools, and write status only when it changed. Idempotent; it
 * never writes the app's spec.
 */
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { validateAppDefinition } from '../apps/validation/validate-app-definition.js';
import type { AppDefinitionStatus } from '../apps/schema/sandbox-pool-schema.js';
import {
  APP_DEFINITION,
  SANDBOX_POOL,
  apiStatus,
  type AppDefinitionResource,
  type CustomResourceClient,
  type SandboxPoolResource,
} from '../k8s/custom-resources.js';
import type { ResourceInformer } from '../k8s/resource-informer.js';
import { setCondition, sameStatus, type ConditionInput } from './conditions.js';
import { splitKey, type ReconcileResult } from './controller.js';
import { isControlledBy, newSandboxPool, sandboxPoolName, sandboxPoolSpecPatch } from './sandbox-pool-template.js';

/**
 * The finalizer operators before this one held on every AppDefinition until its
 * SandboxPools were gone. Owner references already do that work (the garbage collector
 * deletes an app's pools, and their pods and NetworkPolicies, once the app is gone), and
 * a finalizer outlives its operator: after `helm uninstall` nothing removed it, and the
 * namespace's deletion hung on the apps. So none is added any more, and one left by an
 * earlier operator is removed.
 */
export const LEGACY_APP_FINALIZER = 'uhlp.dev/sandbox-pools';

export interface AppDefinitionReconcilerDeps {
  client: CustomResourceClient;
  apps: ResourceInformer<AppDefinitionResource>;
  pools: ResourceInformer<SandboxPoolResource>;
  /** Clock for condition timestamps. @defaultValue `() => new Date()` */
  now?: () => Date;
}

export class AppDefinitionReconciler {
  constructor(private readonly deps: AppDefinitionReconcilerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const app = this.deps.apps.get(namespace, name);
    if (!app) return; // gone; its pools go with it (ownerReferences)
    if ((app.metadata.finalizers ?? []).includes(LEGACY_APP_FINALIZER)) {
      await this.deps.client.patch(APP_DEFINITION, namespace, name, { metadata: withoutLegacyFinalizer(app) });
      return; // the update event brings the app back without it
    }
    if (app.metadata.deletionTimestamp) return;

    const problems = specProblems(app);
    if (problems.length > 0) {
      const message = problems.map((problem) => `${problem.field}: ${problem.message}`).join('; ');
      await this.writeStatus(app, { type: 'Ready', status: 'False', reason: 'InvalidSpec', message }, app.status?.pools ?? []);
      return;
    }

    const conflicts: string[] = [];
    const kept = new Set<string>();
    for (const pool of app.spec.pools) {
      const poolName = sandboxPoolName(name, pool.name);
      kept.add(poolName);
      if (!(await this.convergePool(app, pool))) conflicts.push(poolName);
    }
    for (const pool of this.deps.pools.list(namespace)) {
      if (isControlledBy(pool, app) && !kept.has(pool.metadata.name)) {
        await this.deps.client.delete(SANDBOX_POOL, namespace, pool.metadata.name);
      }
    }

    const poolNames = [...kept].filter((poolName) => !conflicts.includes(poolName)).sort();
    const ready: ConditionInput =
      conflicts.length > 0
        ? {
            type: 'Ready',
            status: 'False',
            reason: 'PoolNameTaken',
            message: `SandboxPool ${conflicts.map((c) => `"${c}"`).join(', ')} exists and is not owned by this AppDefinition`,
          }
        : { type: 'Ready', status: 'True', reason: 'Reconciled', message: `${poolNames.length} SandboxPool(s): ${poolNames.join(', ')}` };
    await this.writeStatus(app, ready, poolNames);
  }

  /** Creates or updates the pool's SandboxPool; false when the name is taken by something we do not own. */
  private async convergePool(app: AppDefinitionResource, pool: PoolSpec): Promise<boolean> {
    const { namespace, name } = app.metadata;
    const poolName = sandboxPoolName(name, pool.name);
    let existing = this.deps.pools.get(namespace, poolName);
    if (!existing) {
      try {
        await this.deps.client.create(SANDBOX_POOL, newSandboxPool(app, pool));
        return true;
      } catch (error) {
        if (apiStatus(error) !== 409) throw error;
        // Created meanwhile (our own earlier create not yet in the cache, or someone else's).
        existing = await this.deps.client.get<SandboxPoolResource>(SANDBOX_POOL, namespace, poolName);
        if (!existing) throw error;
      }
    }
    if (!isControlledBy(existing, app)) return false;
    const patch = sandboxPoolSpecPatch(existing.spec, name, pool);
    if (patch) await this.deps.client.patch(SANDBOX_POOL, namespace, poolName, { spec: patch });
    return true;
  }

  private async writeStatus(app: AppDefinitionResource, ready: ConditionInput, pools: string[]): Promise<void> {
    const generation = app.metadata.generation ?? 0;
    const status: AppDefinitionStatus = {
      observedGeneration: generation,
      conditions: setCondition(app.status?.conditions, { ...ready, observedGeneration: generation }, (this.deps.now ?? (() => new Date()))()),
      pools,
    };
    if (sameStatus(app.status, status)) return;
    await this.deps.client.patchStatus(APP_DEFINITION, app.metadata.namespace, app.metadata.name, status);
  }
}

/**
 * The metadata patch that drops LEGACY_APP_FINALIZER and keeps every other finalizer;
 * its resourceVersion makes it fail (409) if the app changed since it was read.
 */
export function withoutLegacyFinalizer(app: AppDefinitionResource): { finalizers: string[]; resourceVersion: string | undefined } {
  return {
    finalizers: (app.metadata.finalizers ?? []).filter((finalizer) => finalizer !== LEGACY_APP_FINALIZER),
    resourceVersion: app.metadata.resourceVersion,
  };
}

/** A problem of the app, with the field at fault in Kubernetes notation (`spec.components[1].pool`). */
export interface SpecProblem {
  field: string;
  message: string;
}

/**
 * What the CRD schema cannot check, by the same validator that checks AppDefinition
 * files from Git (unique names, references between pools, components and routes,
 * route patterns, reserved path prefixes, and the name as a DNS label, which matters
 * here too: it prefixes SandboxPool names and is a label value). Script files are not
 * checked: a custom resource carries no files.
 */
export function specProblems(app: AppDefinitionResource): SpecProblem[] {
  const problems: SpecProblem[] = [];
  const document = { apiVersion: app.apiVersion, kind: app.kind, metadata: { name: app.metadata.name }, spec: app.spec };
  const result = validateAppDefinition(document, { file: `${app.metadata.namespace}/${app.metadata.name}`, appDirName: app.metadata.name, fileExists: () => true });
  if (!result.ok) {
    for (const problem of result.problems) problems.push({ field: fieldPath(problem.path), message: problem.reason });
  }
  return problems;
}

/** `/spec/components/1/pool` (JSON pointer) -> `spec.components[1].pool`, as the API server names fields. */
export function fieldPath(pointer: string): string {
  let field = '';
  for (const raw of pointer.split('/').slice(1)) {
    const segment = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    field += /^\d+$/.test(segment) ? `[${segment}]` : field === '' ? segment : `.${segment}`;
  }
  return field === '' ? '.' : field;
}
