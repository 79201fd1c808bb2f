/**
 * The one place a driver name from the configuration becomes a driver and the
 * strategy its pools are kept with, so that `uhlp dev --driver docker` and the
 * server's configuration select them the same way.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { defaultKubeConfig } from '../k8s/default-kube-config.js';
import type { RunnerKind } from '../images/runner-files.js';
import type { Logger } from '../logger.js';
import { DockerDriver } from './docker-driver.js';
import { operatorWarmedPool, operatorWarmedPoolWith, type OperatorWarmedPoolSettings } from './operator-warmed-pool.js';
import { PodDriver, type PodDriverOptions } from './pod-driver.js';
import type { PoolStrategyFactory } from './pool-strategy.js';
import { ProcessDriver } from './process-driver.js';
import { prepareProcessSandbox } from './process-sandbox.js';
import type { SandboxDriver } from './sandbox-driver.js';
import { localWarmPool } from './warm-pool.js';

export type SandboxDriverName = 'process' | 'docker' | 'pod';

export interface CreateDriverOptions {
  readonly logger: Logger;
  /** The core's instance id; Docker labels and adopts containers by it. */
  readonly instanceId: string;
  /** The core's data directory: sandboxes' writable trees and the staged runner live under it. */
  readonly dataDir: string;
  /**
   * Run process sandboxes without namespaces where bubblewrap cannot run here
   * (Node's permission model only), saying so loudly. @defaultValue false: such a host refuses to start
   */
  readonly allowUnisolatedProcesses?: boolean;
  /** bubblewrap's executable. @defaultValue the first `bwrap` on PATH */
  readonly bwrapPath?: string;
  /** The host's PATH, for the process driver (bubblewrap's lookup, unisolated runners). @defaultValue `/usr/bin:/bin` */
  readonly hostPath?: string;
  /** Image per runner for pools that name none (Docker and pods). @defaultValue uhlp/jit-runner:latest, uhlp/llm-orchestrator:latest */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  /** Namespace of the pods the pod driver claims. @defaultValue the core's own (its service account's), else `default` */
  readonly podNamespace?: string;
  /** The core's own pod, `<namespace>/<name>`, recorded on the pods it claims (PodDriverOptions.corePod). @defaultValue none */
  readonly corePod?: string;
  /** The MCP package cache of runner: mcp pods (PodDriverOptions.packageCache). @defaultValue none */
  readonly packageCache?: PodDriverOptions['packageCache'];
  /** Cluster access of the pod driver. @defaultValue defaultKubeConfig(): $KUBECONFIG, ~/.kube/config, or in-cluster */
  readonly kubeConfig?: KubeConfig;
}

/** The namespace this process runs in, when it runs in a pod with a service account. */
function ownNamespace(): string | undefined {
  try {
    return readFileSync('/var/run/secrets/kubernetes.io/serviceaccount/namespace', 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

/**
 * How the pools of a driver are kept: the operator keeps warm pods for the pod
 * driver (the core claims them), the core keeps its own warm sandboxes otherwise.
 */
export function poolStrategyFor(name: SandboxDriverName, pods?: OperatorWarmedPoolSettings): PoolStrategyFactory {
  if (name !== 'pod') return localWarmPool;
  return pods ? operatorWarmedPoolWith(pods) : operatorWarmedPool;
}

export async function createSandboxDriver(name: SandboxDriverName, options: CreateDriverOptions): Promise<SandboxDriver> {
  const workRoot = path.join(options.dataDir, 'work');
  switch (name) {
    case 'process': {
      const sandbox = await prepareProcessSandbox({
        stateDir: path.join(options.dataDir, 'runtime'),
        allowUnisolated: options.allowUnisolatedProcesses ?? false,
        ...(options.bwrapPath !== undefined ? { bwrapPath: options.bwrapPath } : {}),
        ...(options.hostPath !== undefined ? { hostPath: options.hostPath } : {}),
      });
      if (sandbox.isolation === 'none') {
        options.logger.error(
          { driver: 'process', isolation: sandbox.isolation },
          `UNSAFE: process sandboxes are NOT isolated: ${sandbox.summary}. Scripts can reach the network and this machine's processes. Install bubblewrap, or use --driver docker.`,
        );
      } else {
        options.logger.info({ driver: 'process', isolation: sandbox.isolation }, `process sandboxes: ${sandbox.summary}`);
      }
      return new ProcessDriver({ logger: options.logger, sandbox, workRoot });
    }
    case 'docker':
      return new DockerDriver({ logger: options.logger, instanceId: options.instanceId, images: options.images, workRoot });
    case 'pod': {
      const kubeConfig = options.kubeConfig ?? defaultKubeConfig();
      const namespace = options.podNamespace ?? ownNamespace() ?? 'default';
      options.logger.info({ driver: 'pod', namespace }, 'sandboxes are pods claimed from the SandboxPools of this namespace');
      return new PodDriver({ logger: options.logger, instanceId: options.instanceId, kubeConfig, namespace, ...(options.images ? { images: options.images } : {}), ...(options.corePod ? { corePod: options.corePod } : {}), ...(options.packageCache ? { packageCache: options.packageCache } : {}) });
    }
  }
}
