/**
 * A cache of pods matching a label selector in a set of namespaces (or all of them),
 * kept current by list+watch and restarted with backoff when its watch fails, like
 * resource-informer.ts does for the custom resources.
 */
import { CoreV1Api, makeInformer, type Informer, type KubeConfig, type ObjectCache, type V1Pod } from '@kubernetes/client-node';
import { backoffDelay } from '../shared/backoff.js';

export type PodEvent = 'add' | 'update' | 'delete';

export interface PodInformerOptions {
  /** Namespaces to watch; all namespaces when empty. @defaultValue `[]` */
  namespaces?: string[];
  labelSelector: string;
  /** Told about watch failures (they are retried). @defaultValue ignore */
  onError?: (error: unknown) => void;
}

export class PodInformer {
  private readonly informers: Array<Informer<V1Pod> & ObjectCache<V1Pod>> = [];
  private readonly handlers: Array<(event: PodEvent, pod: V1Pod) => void> = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(kubeConfig: KubeConfig, options: PodInformerOptions) {
    const api = kubeConfig.makeApiClient(CoreV1Api);
    const scopes = options.namespaces && options.namespaces.length > 0 ? options.namespaces : [undefined];
    for (const namespace of scopes) {
      const path = namespace === undefined ? '/api/v1/pods' : `/api/v1/namespaces/${namespace}/pods`;
      const list = () =>
        namespace === undefined
          ? api.listPodForAllNamespaces({ labelSelector: options.labelSelector })
          : api.listNamespacedPod({ namespace, labelSelector: options.labelSelector });
      const informer = makeInformer<V1Pod>(kubeConfig, path, list, options.labelSelector) as Informer<V1Pod> & ObjectCache<V1Pod>;
      for (const event of ['add', 'update', 'delete'] as const) informer.on(event, (pod) => this.emit(event, pod));
      let failures = 0;
      informer.on('connect', () => {
        failures = 0;
      });
      informer.on('error', (error) => {
        if (this.stopped) return;
        options.onError?.(error);
        failures += 1;
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (!this.stopped) informer.start().catch((startError: unknown) => options.onError?.(startError));
        }, backoffDelay(failures - 1, { initialMs: 500, maxMs: 30_000 }));
        this.timers.add(timer);
      });
      this.informers.push(informer);
    }
  }

  /** Adds a handler; handlers run synchronously and must not throw. */
  on(handler: (event: PodEvent, pod: V1Pod) => void): void {
    this.handlers.push(handler);
  }

  async start(): Promise<void> {
    this.stopped = false;
    await Promise.all(this.informers.map((informer) => informer.start()));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  list(namespace?: string): V1Pod[] {
    return this.informers.flatMap((informer) => [...informer.list(namespace)]);
  }

  private emit(event: PodEvent, pod: V1Pod): void {
    for (const handler of this.handlers) handler(event, pod);
  }
}
