/**
 * The uhlp operator: under a Lease, it watches AppDefinitions and SandboxPools in its
 * namespaces and runs one reconciler per resource kind. Only the leader watches and
 * acts; a candidate that loses or gives up the lease stops both.
 */
import { CoreV1Api, type KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { defaultKubeConfig } from '../k8s/default-kube-config.js';
import type { Metrics } from '../metrics.js';
import {
  APP_DEFINITION,
  CustomResourceClient,
  SANDBOX_POOL,
  type AppDefinitionResource,
  type SandboxPoolResource,
} from '../k8s/custom-resources.js';
import { PodInformer } from '../k8s/pod-informer.js';
import { ResourceInformer } from '../k8s/resource-informer.js';
import { LABEL_APP, LABEL_ROLE, LABEL_SANDBOX_POOL, ROLE_SANDBOX } from '../sandbox/sandbox-labels.js';
import { AppDefinitionReconciler } from './app-definition-reconciler.js';
import { Controller, objectKey } from './controller.js';
import { LeaderElector } from './leader-election.js';
import { SandboxPoolReconciler } from './sandbox-pool-reconciler.js';
import type { SandboxPodsOptions } from './sandbox-pool-pods.js';

export interface OperatorLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface OperatorOptions {
  /** Cluster access. @defaultValue defaultKubeConfig(): $KUBECONFIG, ~/.kube/config, or in-cluster */
  kubeConfig?: KubeConfig;
  /** Namespaces to watch (`--namespace`, repeatable); all namespaces when empty. @defaultValue `[]` */
  namespaces?: string[];
  /** Namespace of the leader-election Lease. @defaultValue the first watched namespace, else `default` */
  leaseNamespace?: string;
  /** Name of the Lease; operators sharing it elect one leader. @defaultValue `uhlp-operator` */
  leaseName?: string;
  /** Holder identity of this operator; also the field manager of its writes. @defaultValue `<hostname>-<pid>-<random>` */
  identity?: string;
  /** See LeaderElectionOptions. @defaultValue `15000` */
  leaseDurationMs?: number;
  /** See LeaderElectionOptions. @defaultValue `10000` */
  renewDeadlineMs?: number;
  /** See LeaderElectionOptions. @defaultValue `2000` */
  retryPeriodMs?: number;
  /** Every cached object is reconciled again this often. @defaultValue `30000` */
  resyncPeriodMs?: number;
  /** Concurrent reconciles per resource kind. @defaultValue `2` */
  workers?: number;
  /** Where the operator reports leadership changes and failed reconciles. @defaultValue JSON lines on stderr */
  logger?: OperatorLogger;
  /** Metrics to record reconciles and leadership in (uhlp_operator_*). @defaultValue none recorded */
  metrics?: Metrics;
  /**
   * Keep each SandboxPool's warm sandbox pods (and its NetworkPolicy) in the pool's
   * namespace, which cores then claim (the pod driver). `uhlp operator` turns it on
   * with `--sandbox-pods`. @defaultValue undefined: SandboxPool status only, no pods
   */
  sandboxPods?: SandboxPodsOptions;
}

export interface RunningOperator {
  /** This operator's holder identity. */
  readonly identity: string;
  /** True while this operator holds the Lease and acts. */
  isLeader(): boolean;
  /** True once this operator has read or written its Lease: it reaches the API server with its rights. */
  reachedApiServer(): boolean;
  /** Stops acting, releases the Lease if held, and stops watching. */
  stop(): Promise<void>;
}

const stderrLogger: OperatorLogger = {
  info: (message, fields) => process.stderr.write(`${JSON.stringify({ level: 'info', component: 'operator', message, ...fields })}\n`),
  error: (message, fields) => process.stderr.write(`${JSON.stringify({ level: 'error', component: 'operator', message, ...fields })}\n`),
};

function errorText(error: unknown): string {
  const body = (error as { body?: unknown }).body;
  const text = error instanceof Error ? error.message : String(error);
  return body === undefined ? text : `${text} ${typeof body === 'string' ? body : JSON.stringify(body)}`.slice(0, 2000);
}

/** The controllers and caches of one term as leader. */
class Term {
  private readonly apps: ResourceInformer<AppDefinitionResource>;
  private readonly pools: ResourceInformer<SandboxPoolResource>;
  private readonly pods: PodInformer | undefined;
  private readonly appController: Controller;
  private readonly poolController: Controller;

  constructor(kubeConfig: KubeConfig, options: OperatorOptions, identity: string, logger: OperatorLogger) {
    const informerOptions = {
      namespaces: options.namespaces ?? [],
      resyncPeriodMs: options.resyncPeriodMs ?? 30_000,
      onError: (error: unknown) => logger.error('watch failed; restarting', { error: errorText(error) }),
    };
    this.apps = new ResourceInformer<AppDefinitionResource>(kubeConfig, APP_DEFINITION, informerOptions);
    this.pools = new ResourceInformer<SandboxPoolResource>(kubeConfig, SANDBOX_POOL, informerOptions);
    const client = new CustomResourceClient(kubeConfig, { fieldManager: identity });
    const onError = (name: string, key: string, error: unknown): void =>
      logger.error('reconcile failed; requeued', { controller: name, key, error: errorText(error) });
    const appReconciler = new AppDefinitionReconciler({ client, apps: this.apps, pools: this.pools });
    this.pods = options.sandboxPods
      ? new PodInformer(kubeConfig, { namespaces: informerOptions.namespaces, labelSelector: `${LABEL_ROLE}=${ROLE_SANDBOX}`, onError: informerOptions.onError })
      : undefined;
    const poolReconciler = new SandboxPoolReconciler({
      client,
      pools: this.pools,
      ...(this.pods && options.sandboxPods
        ? {
            pods: {
              core: kubeConfig.makeApiClient(CoreV1Api),
              networking: kubeConfig.makeApiClient(NetworkingV1Api),
              cache: this.pods,
              options: options.sandboxPods,
              fieldManager: identity,
            },
          }
        : {}),
    });
    const workers = options.workers ?? 2;
    const metrics = options.metrics;
    const onReconciled = (kind: string, outcome: 'ok' | 'error', seconds: number): void => {
      metrics?.operatorReconciles.inc({ kind, outcome });
      metrics?.operatorReconcileSeconds.observe({ kind }, seconds);
    };
    this.appController = new Controller((key) => appReconciler.reconcile(key), { name: 'appdefinition', workers, onError, onReconciled });
    this.poolController = new Controller((key) => poolReconciler.reconcile(key), { name: 'sandboxpool', workers, onError, onReconciled });

    this.apps.on((_event, app) => this.appController.queue.add(objectKey(app)));
    this.pools.on((event, pool) => {
      if (event !== 'delete') this.poolController.queue.add(objectKey(pool));
      // A pool changed or deleted by someone else sends its app back to converge it.
      const app = pool.metadata.labels?.[LABEL_APP];
      if (app && event !== 'resync') this.appController.queue.add(`${pool.metadata.namespace}/${app}`);
    });
    // A pod that became ready, was claimed, released, ended or deleted changes its pool's counts.
    this.pods?.on((_event, pod) => {
      const pool = pod.metadata?.labels?.[LABEL_SANDBOX_POOL];
      if (pool) this.poolController.queue.add(`${pod.metadata?.namespace ?? ''}/${pool}`);
    });
  }

  /** Sets uhlp_operator_queue_depth from both queues; registered for the term's life. */
  readonly collectQueueDepth = (metrics: Metrics): void => {
    metrics.operatorQueueDepth.set({ kind: 'appdefinition' }, this.appController.queue.length);
    metrics.operatorQueueDepth.set({ kind: 'sandboxpool' }, this.poolController.queue.length);
  };

  async start(): Promise<void> {
    await Promise.all([this.apps.start(), this.pools.start(), this.pods?.start()]);
    this.appController.start();
    this.poolController.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.appController.stop(), this.poolController.stop()]);
    await Promise.all([this.apps.stop(), this.pools.stop(), this.pods?.stop()]);
  }
}

/** Starts competing for the Lease; the returned handle stops the operator. */
export async function runOperator(options: OperatorOptions = {}): Promise<RunningOperator> {
  const kubeConfig = options.kubeConfig ?? defaultKubeConfig();
  const logger = options.logger ?? stderrLogger;
  const namespaces = options.namespaces ?? [];
  let term: Term | undefined;
  const collectQueueDepth = (): void => {
    if (term && options.metrics) term.collectQueueDepth(options.metrics);
  };
  options.metrics?.operatorQueueCollectors.add(collectQueueDepth);
  const elector: LeaderElector = new LeaderElector(kubeConfig, {
    namespace: options.leaseNamespace ?? namespaces[0] ?? 'default',
    name: options.leaseName,
    identity: options.identity,
    leaseDurationMs: options.leaseDurationMs,
    renewDeadlineMs: options.renewDeadlineMs,
    retryPeriodMs: options.retryPeriodMs,
    onStartedLeading: async () => {
      logger.info('leading; watching and reconciling', { identity: elector.identity, namespaces: namespaces.length > 0 ? namespaces : 'all' });
      options.metrics?.operatorLeader.set(1);
      term = new Term(kubeConfig, options, elector.identity, logger);
      await term.start();
    },
    onStoppedLeading: async () => {
      logger.info('stopped leading', { identity: elector.identity });
      options.metrics?.operatorLeader.set(0);
      await term?.stop();
      term = undefined;
      // A follower has no queues: its depth is 0, not the last leader term's.
      options.metrics?.operatorQueueDepth.reset();
    },
    onError: (error) => logger.error('lease update failed', { identity: elector.identity, error: errorText(error) }),
  });
  elector.start();
  return {
    identity: elector.identity,
    isLeader: () => elector.isLeader,
    reachedApiServer: () => elector.reachedApiServer,
    stop: async () => {
      await elector.stop();
      options.metrics?.operatorQueueCollectors.delete(collectQueueDepth);
    },
  };
}
