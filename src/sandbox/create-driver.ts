/**
 * The one place a driver name from the configuration becomes a driver, so that
 * `uhlp dev --driver docker` and the server's configuration select it the same way.
 */
import path from 'node:path';
import type { RunnerKind } from '../images/runner-files.js';
import type { Logger } from '../logger.js';
import { DockerDriver } from './docker-driver.js';
import { ProcessDriver } from './process-driver.js';
import { prepareProcessSandbox } from './process-sandbox.js';
import type { SandboxDriver } from './sandbox-driver.js';

export type SandboxDriverName = 'process' | 'docker';

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
  /** Image per runner for pools that name none (Docker only). @defaultValue uhlp/jit-runner:latest, uhlp/llm-orchestrator:latest */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
}

export async function createSandboxDriver(name: SandboxDriverName, options: CreateDriverOptions): Promise<SandboxDriver> {
  const workRoot = path.join(options.dataDir, 'work');
  switch (name) {
    case 'process': {
      const sandbox = await prepareProcessSandbox({
        stateDir: path.join(options.dataDir, 'runtime'),
        allowUnisolated: options.allowUnisolatedProcesses ?? false,
        ...(options.bwrapPath !== undefined ? { bwrapPath: options.bwrapPath } : {}),
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
  }
}
