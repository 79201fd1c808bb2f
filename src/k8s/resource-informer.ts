/**
 * A cache of one custom resource kind in a set of namespaces (or all of them), kept
 * current by list+watch. It wraps the client's ListWatch, which stops for good on any
 * watch error other than 410 Gone: this class restarts it with backoff, so a restarted
 * API server or a dropped connection heals by itself. A periodic resync re-delivers
 * every cached object, so work lost to a bug or a failed write is retried.
 *
 * A watch can also go quiet without failing: a connection dropped by a relay or a
 * NAT in between ends no stream, and the client's list and watch requests have no
 * deadline of their own. So a list that takes longer than `listTimeoutMs` fails (and
 * is retried), and a watch that delivered nothing for `rewatchAfterMs` is started
 * again from the last resource version (a relist only if the server has moved on),
 * as client-go's reflector ends its watches every few minutes.
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
import { backoffDelay } from '../shared/backoff.js';
import { withDeadline } from '../shared/deadline.js';

export type InformerEvent = 'add' | 'update' | 'delete' | 'resync';

export interface ResourceInformerOptions {
  /** Namespaces to watch; all namespaces when empty or omitted. @defaultValue `[]` */
  namespaces?: string[];
  /** Every this many milliseconds each cached object is delivered again as `resync`; 0 turns resync off. @defaultValue `30000` */
  resyncPeriodMs?: number;
  /** Ceiling of the first wait before restarting a failed watch; doubles per failure up to 30 s, half of each wait random (src/shared/backoff.ts). @defaultValue `500` */
  restartDelayMs?: number;
  /** Label selector the list and watch use. @defaultValue none */
  labelSelector?: string;
  /** Told about watch failures (they are retried). @defaultValue ignore */
  onError?: (error: unknown) => void;
  /** A list that has not answered after this many milliseconds fails, and is retried. @defaultValue `20000` */
  listTimeoutMs?: number;
  /** A watch that delivered nothing (no event, no reconnect) for this long is started again; 0 never. @defaultValue `60000` */
  rewatchAfterMs?: number;
  /**
   * A watch that failed, or that the watchdog started again, still counts as live
   * (liveness()) this long before it must be back: a restart takes a list at most, and
   * a readiness that flapped with every dropped watch would take the core out of its
   * Service for nothing. @defaultValue `10000`
   */
  restartGraceMs?: number;
}

type Handler<T> = (event: InformerEvent, object: T) => void;

/** Whether the cache follows the API server (WatchLiveness of every namespace's watch). */
export interface WatchLiveness {
  /** Every watch was listed and established, with no failure since, and none restarting for long. */
  readonly live: boolean;
  /**
   * Every namespace was listed at least once: the cache holds what the API server had then,
   * even while it does not follow it now.
   */
  readonly synced: boolean;
  /** Why not live, when it is not. */
  readonly reason?: string;
}


interface WatchState {
  /** Listed and watching, with no failure since. */
  live: boolean;
  /** Listed at least once. */
  synced: boolean;
  /** Failures so far: a start during which one happened did not bring the watch back. */
  failures: number;
  /** The watchdog's restart of a quiet watch, not yet back. */
  rewatchingSince?: number;
  /** The first failure since the watch was last live. */
  failedSince?: number;
  lastError?: string;
}

export class ResourceInformer<T extends CustomObject> {
  // The client types objects as KubernetesObject (Date timestamps); custom objects stay plain JSON.
  private readonly informers: Array<Informer<KubernetesObject> & ObjectCache<KubernetesObject>> = [];
  private readonly handlers: Handler<T>[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly options: Required<Omit<ResourceInformerOptions, 'labelSelector'>> & { labelSelector?: string };
  private resyncTimer: NodeJS.Timeout | undefined;
  private watchdogTimer: NodeJS.Timeout | undefined;
  /** When each informer last showed life: an event, or a (re)connected watch. */
  private readonly lastAlive: number[] = [];
  private readonly watches: WatchState[] = [];
  private stopped = false;

  constructor(kubeConfig: KubeConfig, resource: ResourceKind, options: ResourceInformerOptions = {}) {
    this.options = {
      namespaces: options.namespaces ?? [],
      resyncPeriodMs: options.resyncPeriodMs ?? 30_000,
      restartDelayMs: options.restartDelayMs ?? 500,
      onError: options.onError ?? (() => {}),
      listTimeoutMs: options.listTimeoutMs ?? 20_000,
      rewatchAfterMs: options.rewatchAfterMs ?? 60_000,
      restartGraceMs: options.restartGraceMs ?? 10_000,
      labelSelector: options.labelSelector,
    };
    const client = new CustomResourceClient(kubeConfig);
    const scopes = this.options.namespaces.length > 0 ? this.options.namespaces : [undefined];
    for (const namespace of scopes) {
      const path = resourcePath(resource, namespace);
      const list = async (): Promise<KubernetesListObject<KubernetesObject>> => {
        const listTimeoutMs = this.options.listTimeoutMs;
        const result = await withDeadline(client.list<KubernetesObject>(resource, namespace, this.options.labelSelector), listTimeoutMs, () => new Error(`list ${path}: no answer within ${listTimeoutMs} ms`));
        return { apiVersion: 'v1', kind: 'List', items: result.items, metadata: { resourceVersion: result.resourceVersion } };
      };
      const informer = makeInformer<KubernetesObject>(kubeConfig, path, list, this.options.labelSelector);
      const index = this.informers.length;
      const state: WatchState = { live: false, synced: false, failures: 0 };
      this.watches.push(state);
      const alive = (): void => {
        this.lastAlive[index] = Date.now();
      };
      alive();
      informer.on('add', (object) => (alive(), this.emit('add', object as T)));
      informer.on('update', (object) => (alive(), this.emit('update', object as T)));
      informer.on('delete', (object) => (alive(), this.emit('delete', object as T)));
      let failures = 0;
      informer.on('connect', () => {
        alive();
        failures = 0;
      });
      informer.on('error', (error) => {
        if (this.stopped) return;
        // The watchdog's own stop of a quiet watch aborts its request: that restart is under way.
        if (state.rewatchingSince !== undefined && (error as { name?: string } | undefined)?.name === 'AbortError') return;
        if (state.live) state.failedSince = Date.now();
        state.live = false;
        state.failures += 1;
        state.lastError = error instanceof Error ? error.message : String(error);
        this.options.onError(error);
        failures += 1;
        const delay = backoffDelay(failures - 1, { initialMs: this.options.restartDelayMs, maxMs: 30_000 });
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          if (!this.stopped) this.startWatch(index).catch((startError: unknown) => this.options.onError(startError));
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
    for (let i = 0; i < this.informers.length; i++) this.lastAlive[i] = Date.now();
    if (this.options.rewatchAfterMs > 0) {
      this.watchdogTimer = setInterval(() => this.rewatchQuiet(), Math.min(this.options.rewatchAfterMs, 30_000));
      this.watchdogTimer.unref();
    }
    await Promise.all(this.informers.map((_informer, index) => this.startWatch(index)));
    if (this.options.resyncPeriodMs > 0) {
      this.resyncTimer = setInterval(() => {
        for (const object of this.list()) this.emit('resync', object);
      }, this.options.resyncPeriodMs);
      this.resyncTimer.unref();
    }
  }

  /**
   * Whether the cache follows the API server now: false before the first list, and
   * when a watch that failed, or a quiet one the watchdog started again, is not back
   * within `restartGraceMs`. A cache that stopped following serves what it last saw
   * (`synced`): the core's metric and alert read `live`, its readiness `synced`.
   */
  liveness(now = Date.now()): WatchLiveness {
    const synced = this.watches.every((state) => state.synced);
    for (const state of this.watches) {
      if (!state.live && (state.failedSince === undefined || now - state.failedSince > this.options.restartGraceMs)) {
        return { live: false, synced, reason: state.lastError ? `watch failed: ${state.lastError}` : 'not listed yet' };
      }
      if (state.rewatchingSince !== undefined && now - state.rewatchingSince > this.options.restartGraceMs) {
        return { live: false, synced, reason: `a quiet watch restarted ${Math.round((now - state.rewatchingSince) / 1000)} s ago is not back` };
      }
    }
    return { live: true, synced };
  }

  /** Starts one namespace's informer; it is live once its list and watch are up with no failure meanwhile. */
  private async startWatch(index: number): Promise<void> {
    const state = this.watches[index]!;
    const failures = state.failures;
    await this.informers[index]!.start();
    if (state.failures === failures && !this.stopped) {
      state.live = state.synced = true;
      state.rewatchingSince = state.failedSince = undefined;
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    if (this.watchdogTimer) clearInterval(this.watchdogTimer);
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

  /**
   * Starts again every watch that has been quiet for too long. Stopping aborts its
   * request; starting watches on from the last resource version. A start that hangs
   * is not waited for: the next round tries again.
   */
  private rewatchQuiet(): void {
    if (this.stopped) return;
    const now = Date.now();
    this.informers.forEach((informer, index) => {
      if (now - (this.lastAlive[index] ?? now) < this.options.rewatchAfterMs) return;
      this.lastAlive[index] = now;
      this.watches[index]!.rewatchingSince ??= now;
      void (async () => {
        await informer.stop();
        if (!this.stopped) await this.startWatch(index);
      })().catch((error: unknown) => this.options.onError(error));
    });
  }

  private emit(event: InformerEvent, object: T): void {
    for (const handler of this.handlers) handler(event, object);
  }
}
