/**
 * The pod driver: each sandbox is a pod of its pool's runner image (sandbox-pod.ts)
 * in one namespace of a Kubernetes cluster, reached at its pod IP.
 *
 * Who owns what: the operator keeps each SandboxPool's warm pods (label
 * `uhlp.dev/sandbox-state=warm`), so warm capacity follows `spec.replicas` (kubectl
 * scale, an HPA) and exists before any core asks; this driver only *claims* them. A
 * claim is a merge patch of the pod's labels (`claimed`, `claimed-by=<instance>`)
 * carrying the resourceVersion the driver saw, so the API server refuses it (409)
 * when another core claimed or the operator deleted the pod first: two cores never
 * get one pod. With no warm pod ready, the driver creates one on demand, already
 * claimed (a pool miss), owned by the SandboxPool so that its deletion takes the pod
 * along. The pods a core holds are its alone until it lets go: an idle pod or one
 * of a clean shutdown goes back to `warm` (the operator then counts it), anything
 * else (recycled, crashed, timed out) is deleted and the operator makes a new one.
 *
 * `claimWarm` makes the same claim without the fallback, for a pool's claim-ahead
 * reserve (claim-reserve.ts), which `warmReplicas` bounds by the SandboxPool's
 * current spec.replicas (from a watch of the namespace's SandboxPools).
 *
 * A pod's death is read from its container status (pod-exit-cause.ts). A restarted
 * core adopts the pods claimed under its instance id (adopt), as the Docker driver
 * adopts its labelled containers.
 */
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import {
  ApiException,
  CoreV1Api,
  makeInformer,
  type Informer,
  type KubeConfig,
  type ObjectCache,
  type V1Pod,
} from '@kubernetes/client-node';
import { APP_API_VERSION } from '../apps/schema/app-definition-schema.js';
import { SANDBOX_POOL_KIND, type McpServerLaunchSpec } from '../apps/schema/sandbox-pool-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { UhlpError } from '../shared/errors.js';
import { CustomResourceClient, SANDBOX_POOL, type SandboxPoolResource } from '../k8s/custom-resources.js';
import { KeptAliveApi } from '../k8s/kept-alive-api.js';
import { ResourceInformer } from '../k8s/resource-informer.js';
import type { WarmClaimSource } from './claim-reserve.js';
import type { RunnerKind } from '../images/runner-files.js';
import type { Logger } from '../logger.js';
import { podExitCause } from './pod-exit-cause.js';
import { SandboxClient } from './sandbox-client.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import {
  ANNOTATION_CLAIMER_POD,
  LABEL_APP,
  LABEL_CLAIMED_BY,
  LABEL_CONFIG,
  LABEL_INSTANCE,
  LABEL_POOL,
  LABEL_ROLE,
  LABEL_SANDBOX_POOL,
  LABEL_SANDBOX_STATE,
  ROLE_SANDBOX,
} from './sandbox-labels.js';
import { POD_RUNNER_PORT, podConfigHash, sandboxPod, type OwnerRef, type PackageCacheVolume, type SandboxPodInput } from './sandbox-pod.js';

/**
 * How long a pod whose runner's connection dropped gets for its container's end to
 * be seen before the pod is deleted: the termination (a heap limit's status and
 * last lines) says why it went, a deleted pod says nothing.
 */
const CRASH_EXIT_GRACE_MS = 2000;

export interface PodDriverOptions {
  readonly logger: Logger;
  /** The core's instance id: claimed pods are labelled with it, and adopted by it. */
  readonly instanceId: string;
  readonly kubeConfig: KubeConfig;
  /**
   * The core's own pod, `<namespace>/<name>`, recorded on the pods it claims: once that
   * pod is gone the operator deletes them (the chart sets it). @defaultValue none (a core
   * outside the cluster; its claimed pods are its own to release)
   */
  readonly corePod?: string;
  /** The namespace of the SandboxPools and their pods. */
  readonly namespace: string;
  /** Image per runner for pools that name none. @defaultValue RUNNER_IMAGES (uhlp/jit-runner:latest, ...) */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  /** How long a pod created on demand may take to answer, ms. @defaultValue 60000 */
  readonly startTimeoutMs?: number;
  /** Share of the pool's memory limit given to the V8 heap. @defaultValue 0.5 */
  readonly heapShare?: number;
  /**
   * The MCP package cache as the core sees it (`root`, where it installs packages) and as
   * pods mount it (`volume`): runner: mcp pools need it. @defaultValue none: such pools are refused
   */
  readonly packageCache?: { readonly root: string; readonly volume: PackageCacheVolume };
}

interface PodHandle extends SandboxHandle {
  readonly name: string;
  /** The pod belongs to a SandboxPool: it can go back to warm instead of being deleted. */
  readonly pooled: boolean;
  destroyCause?: SandboxExitCause;
  resolveExited(cause: SandboxExitCause): void;
  /** Resolves `retiring`: the pod is being deleted by someone else and drains. */
  retire(): void;
  done: boolean;
}

type PodInformer = Informer<V1Pod> & ObjectCache<V1Pod>;

export class PodDriver implements SandboxDriver, WarmClaimSource {
  readonly name = 'pod';
  readonly isolation = 'container';
  private readonly api: CoreV1Api;
  private readonly keptAlive: KeptAliveApi;
  private readonly pools: CustomResourceClient;
  private readonly informer: PodInformer;
  private watching: Promise<void> | undefined;
  /** The namespace's SandboxPools, for their replicas (the claim-ahead bound); watched once a reserve asks. */
  private readonly sandboxPools: ResourceInformer<SandboxPoolResource>;
  private watchingPools: Promise<void> | undefined;
  private readonly live = new Map<string, PodHandle>();
  /** Each pool's config hash, by its spec (one object per pool): every claim reads it. */
  private readonly configHashes = new WeakMap<SandboxSpec, string>();
  /** Pods created on demand and not yet answering: their events wake the waiter. */
  private readonly waiters = new Map<string, () => void>();
  private closed = false;

  constructor(private readonly options: PodDriverOptions) {
    this.api = options.kubeConfig.makeApiClient(CoreV1Api);
    this.keptAlive = new KeptAliveApi(options.kubeConfig);
    this.pools = new CustomResourceClient(options.kubeConfig, { fieldManager: `uhlp-core-${options.instanceId}` });
    const selector = `${LABEL_ROLE}=${ROLE_SANDBOX}`;
    const namespace = options.namespace;
    this.informer = makeInformer<V1Pod>(
      options.kubeConfig,
      `/api/v1/namespaces/${namespace}/pods`,
      () => this.api.listNamespacedPod({ namespace, labelSelector: selector }),
      selector,
    ) as PodInformer;
    const onChange = (pod: V1Pod, deleted: boolean): void => {
      const name = pod.metadata?.name ?? '';
      this.waiters.get(name)?.();
      const handle = this.live.get(name);
      if (handle) this.observe(handle, pod, deleted);
    };
    this.informer.on('add', (pod) => onChange(pod, false));
    this.informer.on('update', (pod) => onChange(pod, false));
    this.informer.on('delete', (pod) => onChange(pod, true));
    this.sandboxPools = new ResourceInformer<SandboxPoolResource>(options.kubeConfig, SANDBOX_POOL, {
      namespaces: [namespace],
      resyncPeriodMs: 0,
      onError: (error) => options.logger.debug({ err: errorText(error) }, 'SandboxPool watch failed; restarting'),
    });
    this.informer.on('error', () => {
      // The watch broke (API server restart, dropped connection): start it again.
      if (this.closed) return;
      setTimeout(() => {
        if (!this.closed) this.informer.start().catch(() => undefined);
      }, 1000).unref();
    });
  }

  create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxHandle> {
    if (this.closed) {
      return Promise.reject(new UhlpError('UHLP_SHUTTING_DOWN', 'the pod driver is closed', { app: spec.appId, pool: spec.pool.name }));
    }
    try {
      this.podInput(spec);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.claimOrCreate(spec, signal);
  }

  /** A warm pod of the pool, claimed; else a pod made for this claim. */
  private async claimOrCreate(spec: SandboxSpec, signal: AbortSignal | undefined): Promise<SandboxHandle> {
    const claimed = await this.claimWarm(spec);
    if (claimed) return claimed;
    this.options.logger.debug({ app: spec.appId, pool: spec.pool.name }, 'no warm sandbox pod to claim: creating one');
    return this.createOnDemand(spec, this.podInput(spec), signal);
  }

  /** A warm pod of the pool, claimed (the compare-and-swap of `claim`); undefined when none is left to claim. */
  async claimWarm(spec: SandboxSpec): Promise<SandboxHandle | undefined> {
    if (this.closed) return undefined;
    await this.watch();
    const hash = this.configHash(spec);
    const started = performance.now();
    let conflicts = 0;
    for (const pod of this.warmPods(spec, hash)) {
      const claimed = await this.claim(pod);
      if (claimed) {
        this.options.logger.debug({ app: spec.appId, pool: spec.pool.name, pod: claimed.metadata?.name, claimMs: Math.round((performance.now() - started) * 100) / 100, conflicts }, 'claimed a warm sandbox pod');
        return this.track(claimed, true);
      }
      conflicts += 1;
    }
    return undefined;
  }

  /** A claimed pod as the watch last saw it: not being deleted, and Ready (what a claim asks of a warm pod). */
  healthy(handle: SandboxHandle): boolean {
    const pod = this.informer.get(handle.id, this.options.namespace);
    return pod !== undefined && !pod.metadata?.deletionTimestamp && isReady(pod);
  }

  /**
   * The warm pods the pool's SandboxPool keeps now (spec.replicas, as `kubectl scale`
   * or an HPA set it); undefined while its watch has not listed it, or when the
   * operator made none (a claim-ahead reserve then stays empty). Starts the watch
   * on first use.
   */
  warmReplicas(spec: SandboxSpec): number | undefined {
    this.watchingPools ??= this.sandboxPools.start().catch((error: unknown) => {
      this.watchingPools = undefined;
      this.options.logger.warn({ err: errorText(error) }, 'cannot watch SandboxPools: no pods are claimed ahead');
    });
    const pool = this.sandboxPools.get(this.options.namespace, `${spec.appId}-${spec.pool.name}`);
    return pool?.metadata.deletionTimestamp ? 0 : pool?.spec.replicas;
  }

  /** Ready warm pods of the pool made with this configuration, in random order (cores claiming at once rarely collide). */
  private warmPods(spec: SandboxSpec, hash: string): V1Pod[] {
    const found = this.informer.list(this.options.namespace).filter((pod) => {
      const labels = pod.metadata?.labels ?? {};
      return (
        labels[LABEL_APP] === spec.appId &&
        labels[LABEL_POOL] === spec.pool.name &&
        labels[LABEL_SANDBOX_STATE] === 'warm' &&
        labels[LABEL_CONFIG] === hash &&
        !pod.metadata?.deletionTimestamp &&
        isReady(pod)
      );
    });
    for (let i = found.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [found[i], found[j]] = [found[j]!, found[i]!];
    }
    return found;
  }

  /**
   * The compare-and-swap: the claimed pod, or undefined when someone else changed it
   * first. Sent over a kept-alive connection: it is on the request's path.
   */
  private async claim(pod: V1Pod): Promise<V1Pod | undefined> {
    const { name, resourceVersion } = pod.metadata!;
    const body = {
      metadata: {
        resourceVersion,
        labels: { [LABEL_SANDBOX_STATE]: 'claimed', [LABEL_CLAIMED_BY]: this.options.instanceId, [LABEL_INSTANCE]: this.options.instanceId },
        ...(this.options.corePod ? { annotations: { [ANNOTATION_CLAIMER_POD]: this.options.corePod } } : {}),
      },
    };
    let answer;
    try {
      answer = await this.keptAlive.request('PATCH', this.podPath(name!), body, 'application/merge-patch+json');
    } catch (error) {
      throw sandboxUnavailable(`claiming pod ${name} failed: ${errorText(error)}`);
    }
    if (answer.status === 409 || answer.status === 404) return undefined;
    const claimed = answer.body as V1Pod | undefined;
    if (answer.status !== 200 || !claimed?.metadata?.name || !claimed.status?.podIP) {
      const message = (answer.body as { message?: unknown } | undefined)?.message;
      throw sandboxUnavailable(`claiming pod ${name} failed: HTTP ${answer.status}${typeof message === 'string' ? `: ${message}` : ''}`);
    }
    return claimed;
  }

  private async createOnDemand(spec: SandboxSpec, input: SandboxPodInput, signal: AbortSignal | undefined): Promise<SandboxHandle> {
    // A miss of a runner: mcp pool may be one because its SandboxPool did not exist yet when the pool
    // started (the operator makes it from the same AppDefinition meanwhile): the server is written now.
    if (spec.pool.runner === 'mcp') {
      void this.preparePool(spec).catch((error: unknown) => {
        this.options.logger.warn({ app: spec.appId, pool: spec.pool.name, err: errorText(error) }, "the MCP server of the pool's warm pods could not be written");
      });
    }
    const owner = await this.ownerOf(spec);
    const manifest = sandboxPod(input, {
      state: 'claimed',
      claimedBy: this.options.instanceId,
      ...(this.options.corePod ? { claimerPod: this.options.corePod } : {}),
      labels: { ...spec.labels, [LABEL_INSTANCE]: this.options.instanceId },
      ...(owner ? { owner } : {}),
    });
    let created: V1Pod;
    try {
      created = await this.api.createNamespacedPod({ namespace: this.options.namespace, body: manifest as V1Pod });
    } catch (error) {
      throw sandboxUnavailable(`cannot create a sandbox pod for ${spec.appId}/${spec.pool.name}: ${errorText(error)}`, spec);
    }
    const name = created.metadata!.name!;
    const timeoutMs = this.options.startTimeoutMs ?? 60_000;
    try {
      const running = await this.waitRunning(name, timeoutMs, signal);
      const handle = this.track(running, owner !== undefined);
      await this.waitAnswering(handle, timeoutMs, signal);
      return handle;
    } catch (error) {
      const live = this.live.get(name);
      if (live) await this.destroy(live, 'start-failed');
      else await this.deletePod(name).catch(() => undefined);
      throw error instanceof UhlpError ? error : sandboxUnavailable(`sandbox pod ${name} did not start: ${errorText(error)}`, spec);
    }
  }

  /** Waits until the pod has an IP and its runner container runs; fails when it ended or cannot start. */
  private async waitRunning(name: string, timeoutMs: number, signal: AbortSignal | undefined): Promise<V1Pod> {
    const deadline = Date.now() + timeoutMs;
    try {
      for (;;) {
        if (signal?.aborted) throw new Error('aborted');
        const pod = this.informer.get(name, this.options.namespace);
        if (pod) {
          const container = pod.status?.containerStatuses?.[0];
          if (container?.state?.terminated || pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
            throw new Error(`its runner ended: ${container?.state?.terminated?.reason ?? pod.status?.phase} (exit ${container?.state?.terminated?.exitCode ?? '?'})`);
          }
          const waiting = container?.state?.waiting;
          if (waiting && /ErrImageNeverPull|ErrImagePull|InvalidImageName|CreateContainerError|CreateContainerConfigError/.test(waiting.reason ?? '')) {
            throw new Error(`${waiting.reason}: ${waiting.message ?? ''}`);
          }
          if (pod.status?.podIP && container?.state?.running) return pod;
        }
        const left = deadline - Date.now();
        if (left <= 0) throw new Error(`not running within ${timeoutMs} ms`);
        // Woken by the pod's next event; the timeout covers a missed one.
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(left, 500));
          this.waiters.set(name, () => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    } finally {
      this.waiters.delete(name);
    }
  }

  /** Polls GET /healthz at the pod IP: the runner answers before the kubelet's readiness probe says so. */
  private async waitAnswering(handle: PodHandle, timeoutMs: number, signal: AbortSignal | undefined): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const client = new SandboxClient(handle.endpoint);
    try {
      for (;;) {
        if (signal?.aborted) throw new Error('aborted');
        if (handle.done) throw new Error('the pod ended during start');
        if (await client.probe(Math.max(1, Math.min(1000, deadline - Date.now())))) return;
        if (Date.now() >= deadline) throw new Error(`no answer to GET /healthz within ${timeoutMs} ms`);
        await delay(5);
      }
    } finally {
      client.close();
    }
  }

  async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    const pod = handle as PodHandle;
    pod.destroyCause ??= cause;
    if (cause === 'crash' && !pod.done) await Promise.race([pod.exited, delay(CRASH_EXIT_GRACE_MS, undefined, { ref: false })]);
    if (!pod.done && pod.pooled && (cause === 'idle' || cause === 'shutdown') && (await this.release(pod))) {
      this.finish(pod, pod.destroyCause);
      return;
    }
    // A pod is destroyed as the request it served ends (maxUses, a failure): its DELETE goes out once
    // that answer is written, a turn of the event loop later, not before it.
    await new Promise((resolve) => setImmediate(resolve));
    await this.deletePod(pod.name);
    // Deleted from the API at once; the kubelet stops the runner a moment later.
    // Wait for that, so a destroyed sandbox never answers again.
    const client = new SandboxClient(handle.endpoint);
    const deadline = Date.now() + 5000;
    try {
      while (Date.now() < deadline && (await client.probe(300))) await delay(50);
    } finally {
      client.close();
    }
    this.finish(pod, pod.destroyCause);
    await pod.exited;
  }

  /** Hands a healthy pod back to its pool as warm; false when it changed meanwhile (then it is deleted). */
  private async release(handle: PodHandle): Promise<boolean> {
    const pod = this.informer.get(handle.name, this.options.namespace);
    if (!pod || pod.metadata?.deletionTimestamp || !isReady(pod)) return false;
    const body = {
      metadata: {
        resourceVersion: pod.metadata?.resourceVersion,
        labels: { [LABEL_SANDBOX_STATE]: 'warm', [LABEL_CLAIMED_BY]: null, [LABEL_INSTANCE]: null },
        annotations: { [ANNOTATION_CLAIMER_POD]: null },
      },
    };
    const answer = await this.keptAlive.request('PATCH', this.podPath(handle.name), body, 'application/merge-patch+json').catch(() => undefined);
    return answer?.status === 200;
  }

  /**
   * A runner: mcp pool's server, written into its SandboxPool (`spec.mcpServer`) when it
   * differs: the operator cannot install packages, and makes the pool's warm pods from it.
   * Pools the operator did not make (no SandboxPool, a community server's) are left alone:
   * their pods are made on demand. Called when the pool starts, and again at each miss.
   */
  async preparePool(spec: SandboxSpec): Promise<void> {
    if (spec.pool.runner !== 'mcp') return;
    let mcpServer: McpServerLaunchSpec;
    try {
      mcpServer = this.mcpServerOf(spec);
    } catch (error) {
      this.options.logger.warn({ app: spec.appId, pool: spec.pool.name, err: error instanceof Error ? error.message : error }, 'runner: mcp pool the pods cannot run');
      return;
    }
    const name = `${spec.appId}-${spec.pool.name}`;
    const pool = await this.pools.get<SandboxPoolResource>(SANDBOX_POOL, this.options.namespace, name);
    if (pool === undefined || canonicalJson(pool.spec.mcpServer ?? null) === canonicalJson(mcpServer)) return;
    await this.pools.patch(SANDBOX_POOL, this.options.namespace, name, { spec: { mcpServer } });
    this.options.logger.info({ app: spec.appId, pool: spec.pool.name, packageKey: mcpServer.packageKey }, "wrote the MCP server of the pool's warm pods");
  }

  async adopt(appId: string, poolName: string, spec?: SandboxSpec): Promise<SandboxHandle[]> {
    await this.watch();
    let hash: string | undefined;
    try {
      hash = spec ? this.configHash(spec) : undefined;
    } catch {
      return []; // a pool the pods cannot run: its first create says why
    }
    const adopted: SandboxHandle[] = [];
    for (const pod of this.informer.list(this.options.namespace)) {
      const labels = pod.metadata?.labels ?? {};
      const name = pod.metadata?.name ?? '';
      if (labels[LABEL_CLAIMED_BY] !== this.options.instanceId || labels[LABEL_APP] !== appId || labels[LABEL_POOL] !== poolName) continue;
      if (this.live.has(name) || pod.metadata?.deletionTimestamp) continue;
      const current = hash === undefined || labels[LABEL_CONFIG] === hash;
      const endpoint = pod.status?.podIP ? { kind: 'tcp' as const, host: pod.status.podIP, port: POD_RUNNER_PORT } : undefined;
      const client = endpoint && current ? new SandboxClient(endpoint) : undefined;
      const answers = client ? await client.probe(2000) : false;
      client?.close();
      if (!answers) {
        this.options.logger.info({ pod: name, current }, 'deleting unusable claimed sandbox pod');
        await this.deletePod(name).catch(() => undefined);
        continue;
      }
      adopted.push(this.track(pod, labels[LABEL_SANDBOX_POOL] !== undefined));
    }
    if (adopted.length > 0) this.options.logger.info({ app: appId, pool: poolName, count: adopted.length }, 'adopted sandbox pods');
    return adopted;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.live.values()].map((handle) => this.destroy(handle, 'shutdown').catch(() => undefined)));
    if (this.watching) await this.informer.stop();
    if (this.watchingPools) await this.sandboxPools.stop();
    this.keptAlive.close();
  }

  /** Starts the pod watch once; every claim reads warm pods from its cache. */
  private watch(): Promise<void> {
    this.watching ??= this.informer.start().catch((error: unknown) => {
      this.watching = undefined;
      throw sandboxUnavailable(`cannot watch pods in namespace ${this.options.namespace}: ${errorText(error)}`);
    });
    return this.watching;
  }

  /** The config hash of the pool's pods (podConfigHash), worked out once per spec; a pool the pods cannot run throws, each time. */
  private configHash(spec: SandboxSpec): string {
    let hash = this.configHashes.get(spec);
    if (hash === undefined) this.configHashes.set(spec, (hash = podConfigHash(this.podInput(spec))));
    return hash;
  }

  /** The pod's input; a runner: mcp pool the pods cannot run is refused here, with the reason. */
  private podInput(spec: SandboxSpec): SandboxPodInput {
    const mcpServer = spec.pool.runner === 'mcp' ? this.mcpServerOf(spec) : undefined;
    return {
      namespace: this.options.namespace,
      appId: spec.appId,
      pool: spec.pool,
      ...(this.options.images ? { images: this.options.images } : {}),
      ...(this.options.heapShare !== undefined ? { heapShare: this.options.heapShare } : {}),
      ...(mcpServer !== undefined ? { mcpServer, packageCache: this.options.packageCache!.volume } : {}),
    };
  }

  /** The server of a runner: mcp pool as its pods start it: its package as a directory of the cache volume. */
  private mcpServerOf(spec: SandboxSpec): McpServerLaunchSpec {
    const launch = spec.mcpServer;
    const refuse = (why: string): UhlpError =>
      new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `pool ${spec.pool.name} has runner: mcp: ${why}`, { app: spec.appId, pool: spec.pool.name });
    if (launch === undefined) throw refuse('no MCP server names it');
    // A script server starts with its sandbox, from the app's files, which a pod does not have: the other runners
    // get their scripts along with an execution (script-push.ts), an mcp-host gets none, and it has no MCP token
    // to read them with.
    if (launch.packageDir === undefined) throw refuse('a script server of the app runs on the process and Docker drivers only; the pod driver runs npm package servers');
    const cache = this.options.packageCache;
    if (cache === undefined) throw refuse('no MCP package cache volume is configured for pods (UHLP_MCP_PACKAGE_VOLUME)');
    const packageKey = path.relative(cache.root, launch.packageDir);
    if (!/^[0-9a-f]{16,128}$/.test(packageKey)) throw refuse(`its package ${launch.packageDir} is not an entry of the package cache ${cache.root}`);
    return { packageKey, entry: launch.entry, args: [...launch.args], env: [...(launch.env ?? [])] };
  }

  /** The pool's SandboxPool as an owner, when the operator made one (`<app>-<pool>`). */
  private async ownerOf(spec: SandboxSpec): Promise<OwnerRef | undefined> {
    const name = `${spec.appId}-${spec.pool.name}`;
    const pool = await this.pools.get<SandboxPoolResource>(SANDBOX_POOL, this.options.namespace, name).catch(() => undefined);
    if (!pool?.metadata.uid) return undefined;
    return { apiVersion: APP_API_VERSION, kind: SANDBOX_POOL_KIND, name, uid: pool.metadata.uid };
  }

  private track(pod: V1Pod, pooled: boolean): PodHandle {
    const name = pod.metadata!.name!;
    let resolveExited!: (cause: SandboxExitCause) => void;
    const exited = new Promise<SandboxExitCause>((resolve) => (resolveExited = resolve));
    let retire!: () => void;
    const retiring = new Promise<void>((resolve) => (retire = resolve));
    const handle: PodHandle = {
      id: name,
      name,
      pooled,
      endpoint: { kind: 'tcp', host: pod.status!.podIP!, port: POD_RUNNER_PORT },
      exited,
      resolveExited,
      retiring,
      retire,
      done: false,
    };
    this.live.set(name, handle);
    return handle;
  }

  /** Reads a pod event of a held sandbox: a runner that ended, or a pod being deleted, ends the sandbox. */
  private observe(handle: PodHandle, pod: V1Pod, deleted: boolean): void {
    if (handle.done) return;
    const status = pod.status?.containerStatuses?.[0];
    const terminated = status?.state?.terminated ?? undefined;
    if (terminated || pod.status?.phase === 'Failed' || pod.status?.phase === 'Succeeded') {
      const cause = podExitCause(terminated, handle.destroyCause);
      if (cause !== handle.destroyCause) {
        this.options.logger.warn({ sandbox: handle.name, cause, exitCode: terminated?.exitCode, reason: terminated?.reason }, 'sandbox pod exited');
      }
      this.finish(handle, cause);
    } else if (deleted) {
      this.finish(handle, handle.destroyCause ?? 'crash');
    } else if (pod.metadata?.deletionTimestamp) {
      // Deleted by someone else (kubectl, the operator, a node drain): the runner
      // finishes what it runs (--drain-on-sigterm) but takes nothing new, so the pool
      // stops giving it work and lets its executions answer; the container's end ends it.
      handle.retire();
    }
  }

  private finish(handle: PodHandle, cause: SandboxExitCause): void {
    if (handle.done) return;
    handle.done = true;
    this.live.delete(handle.name);
    handle.resolveExited(cause);
  }

  /** Deletes a pod at once, over the kept-alive connection: a recycled pod is deleted as its request answers. */
  private async deletePod(name: string): Promise<void> {
    const answer = await this.keptAlive.request('DELETE', this.podPath(name), { apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 0 });
    if (answer.status !== 200 && answer.status !== 202 && answer.status !== 404) {
      const message = (answer.body as { message?: unknown } | undefined)?.message;
      throw new Error(`deleting pod ${name}: HTTP ${answer.status}${typeof message === 'string' ? `: ${message}` : ''}`);
    }
  }

  private podPath(name: string): string {
    return `/api/v1/namespaces/${encodeURIComponent(this.options.namespace)}/pods/${encodeURIComponent(name)}`;
  }
}

function isReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && !!pod.status.podIP && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

function errorText(error: unknown): string {
  if (error instanceof ApiException) {
    const body = typeof error.body === 'string' ? error.body : JSON.stringify(error.body);
    const message = /"message":"([^"]*)"/.exec(body ?? '')?.[1];
    return `HTTP ${error.code}${message ? `: ${message}` : ''}`;
  }
  return error instanceof Error ? error.message : String(error);
}

function sandboxUnavailable(message: string, spec?: SandboxSpec): UhlpError {
  return new UhlpError('UHLP_SANDBOX_UNAVAILABLE', message, spec ? { app: spec.appId, pool: spec.pool.name } : {});
}
