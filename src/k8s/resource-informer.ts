/**
 * A cache of one custom resource kind in a set of namespaces (or all of them), kept
 * current by list+watch. It wraps the client's ListWatch, which stops for good on any
 * watch error other than 410 Gone: this class restarts it with backoff, so a restarted
 * API server or a dropped connection heals by itself. A periodic resync re-delivers
 * every cached object, so work lost to a bug or a failed write is retried.
 */
import {
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ObjectCache,
} from '@kubernetes/client-node';
import { CustomResourceClient, resourcePath, type CustomObject, type ResourceKind } from './custom-resources.js';

export type InformerEvent = 'add' | 'update' | 'delete' | 'resync';

export interface ResourceInformerOptions {
  /** Namespaces to watch; all namespaces when empty or omitted. @defaultValue `[]` */
  namespaces?: string[];
  /** Every this many milliseconds each cached object is delivered again as `resync`; 0 turns resync off. @defaultValue `30000` */
  resyncPeriodMs?: number;
  /** Delay before restarting a failed watch; doubles per failure up to 30 s. @defaultValue `500` */
  restartDelayMs?: number;
  /** Label selector the list and watch use. @defaultValue none */
  labelSelector?: string;
  /** Told about watch failures (they are retried). @defaultValue ignore */
  onError?: (error: unknown) => void;
}

type Handler<T> = (event: InformerEvent, object: T) => void;

export class ResourceInformer<T extends CustomObject> {
  // The client types objects as KubernetesObject (Date timestamps); custom objects stay plain JSON.
  private readonly informers: Array<Informer<KubernetesObject> & ObjectCache<KubernetesObject>> = [];
  private readonly handlers: Handler<T>[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly options: Required<Omit<ResourceInformerOptions, 'labelSelector'>> & { labelSelector?: string };
  private resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(kubeConfig: KubeConfig, resource: ResourceKind, options: ResourceInformerOptions = {}) {
    this.options = {
      namespaces: options.namespaces ?? [],
      resyncPeriodMs: options.resyncPeriodMs ?? 30_000,
      restartDelayMs: options.restartDelayMs ?? 500,
      onError: options.onError ?? (() => {}),
      labelSelector: options.labelSelector,
    };
    const client = new CustomResourceClient(kubeConfig);
    const scopes = this.options.namespaces.length > 0 ? this.options.namespaces : [undefined];
    for (const namespace of scopes) {
      const path = resourcePath(resource, namespace);
      const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
        const result = await client.list<KubernetesObject>(resource, namespace, this.options.labelSelector);
        return { apiVersion: 'v1', kind: 'List', items: result.items, metadata: { resourceVersion: result.resourceVersion } };
      };
      const informer = makeInformer<KubernetesObject>(kubeConfig, path, list, this.options.labelSelector);
      informer.on('add', (object) => this.emit('add', object as T));
      informer.on('update', (object) => this.emit('update', object as T));
      informer.on('delete', (object) => this.emit('delete', object as T));
      let failures = 0;
      informer.on('connect', () => {
        failures = 0;
      });
      informer.on('error', (error) => {
        if (this.stopped) return;
        this.options.onError(error);
        failures += 1;
        const delay = Math.min(this.options.restartDelayMs * 2 ** (failures - 1), 30_000);
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (!this.stopped) informer.start().catch((startError: unknown) => this.options.onError(startError));
        }, delay);
        this.timers.add(timer);
      });
      this.informers.push(informer);
    }
  }

  /** Adds a handler for every change; handlers run synchronously and must not throw. */
  on(handler: Handler<T>): void {
    this.handlers.push(handler);
  }

  /** Lists and starts watching; resolves once every namespace has been listed (or failed to be, and is retried in the background). */
  async start(): Promise<void> {
    this.stopped = false;
    await Promise.all(this.informers.map((informer) => informer.start()));
    if (this.options.resyncPeriodMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const object of this.list()) this.emit('resync', object);
      }, this.options.resyncPeriodMs);
      this.resyncTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  get(namespace: string, name: string): T | undefined {
    for (const informer of this.informers) {
      const object = informer.get(name, namespace);
      if (object) return object as T;
    }
    return undefined;
  }

  list(namespace?: string): T[] {
    return this.informers.flatMap((informer) => [...informer.list(namespace)] as T[]);
  }

  private emit(event: InformerEvent, object: T): void {
    for (const handler of this.handlers) handler(event, object);
  }
}
