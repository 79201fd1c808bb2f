/**
 * The AppDefinitions the core may route to, read from the Kubernetes API: those the
 * operator has marked Ready for their current generation. It lists and watches the
 * given namespaces and tells its listeners the whole current set whenever the set
 * changes (an app became Ready, changed, stopped being Ready, or was deleted). While
 * the operator has not yet judged an edited spec, the app stays in the set with its
 * last Ready spec.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import type { AppSpec } from '../schema/app-definition-schema.js';
import { APP_DEFINITION, type AppDefinitionResource } from '../../k8s/custom-resources.js';
import { ResourceInformer, type WatchLiveness } from '../../k8s/resource-informer.js';

/** One routable app, as the operator last validated it. */
export interface ReadyAppDefinition {
  name: string;
  namespace: string;
  spec: AppSpec;
  /** The resourceVersion of the object this entry was read from. */
  resourceVersion: string;
  /** metadata.generation: changes with the spec only. */
  generation: number;
}

export type ReadyAppsListener = (apps: ReadyAppDefinition[]) => void;

export interface AppDefinitionWatcherOptions {
  /** Namespaces to watch; all namespaces when empty or omitted. @defaultValue `[]` */
  namespaces?: string[];
  /** How often the cache is re-examined even without events. @defaultValue `30000` */
  resyncPeriodMs?: number;
  /** Told about watch failures (they are retried with backoff). @defaultValue ignore */
  onError?: (error: unknown) => void;
}

/** Ready means: condition Ready=True, computed for the generation the object has now. */
export function isReady(app: AppDefinitionResource): boolean {
  if (app.metadata.deletionTimestamp) return false;
  const generation = app.metadata.generation ?? 0;
  if (app.status?.observedGeneration !== generation) return false;
  const ready = app.status.conditions?.find((condition) => condition.type === 'Ready');
  return ready?.status === 'True' && (ready.observedGeneration === undefined || ready.observedGeneration === generation);
}

export class AppDefinitionWatcher {
  private readonly informer: ResourceInformer<AppDefinitionResource>;
  private readonly listeners = new Set<ReadyAppsListener>();
  private snapshot: ReadyAppDefinition[] = [];
  private byUid = new Map<string, ReadyAppDefinition>();
  private fingerprint = '';
  private started = false;

  constructor(kubeConfig: KubeConfig, options: AppDefinitionWatcherOptions = {}) {
    this.informer = new ResourceInformer<AppDefinitionResource>(kubeConfig, APP_DEFINITION, {
      namespaces: options.namespaces ?? [],
      resyncPeriodMs: options.resyncPeriodMs ?? 30_000,
      onError: options.onError,
    });
    this.informer.on(() => {
      if (this.started) this.refresh();
    });
  }

  /** Adds a listener; it is called with the full set on every change. Returns the unsubscribe function. */
  onChange(listener: ReadyAppsListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Lists the namespaces and starts watching; listeners get the initial set before this resolves. */
  async start(): Promise<void> {
    await this.informer.start();
    this.started = true;
    this.refresh(true);
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.informer.stop();
  }

  /** Whether the set follows the API server now (ResourceInformer.liveness); not before start. */
  liveness(): WatchLiveness {
    return this.started ? this.informer.liveness() : { live: false, synced: false, reason: 'not started' };
  }

  /** The current set, sorted by namespace then name. */
  current(): ReadyAppDefinition[] {
    return this.snapshot;
  }

  private refresh(force = false): void {
    const entries: Array<{ uid: string; app: ReadyAppDefinition }> = [];
    for (const resource of this.informer.list()) {
      const uid = resource.metadata.uid ?? `${resource.metadata.namespace}/${resource.metadata.name}`;
      if (isReady(resource)) {
        entries.push({ uid, app: toReady(resource) });
      } else if (!resource.metadata.deletionTimestamp && resource.status?.observedGeneration !== resource.metadata.generation) {
        // A new spec the operator has not judged yet: keep routing to the last Ready one
        // rather than dropping the app for the moment between the edit and the verdict.
        const previous = this.byUid.get(uid);
        if (previous) entries.push({ uid, app: previous });
      }
    }
    entries.sort((a, b) => a.app.namespace.localeCompare(b.app.namespace) || a.app.name.localeCompare(b.app.name));
    // Only spec changes (and re-creations) matter to routing; status-only writes are not news.
    const fingerprint = JSON.stringify(entries.map(({ uid, app }) => [uid, app.generation]));
    if (!force && fingerprint === this.fingerprint) return;
    this.fingerprint = fingerprint;
    this.byUid = new Map(entries.map(({ uid, app }) => [uid, app]));
    this.snapshot = entries.map(({ app }) => app);
    for (const listener of this.listeners) listener(this.snapshot);
  }
}

function toReady(app: AppDefinitionResource): ReadyAppDefinition {
  return {
    name: app.metadata.name,
    namespace: app.metadata.namespace,
    spec: app.spec,
    resourceVersion: app.metadata.resourceVersion ?? '',
    generation: app.metadata.generation ?? 0,
  };
}
