/**
 * The one place a driver name from the configuration becomes a driver, so that
 * `uhlp dev --driver docker` and the server's configuration select it the same way.
 */
import type { Logger } from '../logger.js';
import { DockerDriver } from './docker-driver.js';
import { ProcessDriver } from './process-driver.js';
import type { SandboxDriver } from './sandbox-driver.js';

export type SandboxDriverName = 'process' | 'docker';

export interface CreateDriverOptions {
  readonly logger: Logger;
  /** The core's instance id; Docker labels and adopts containers by it. */
  readonly instanceId: string;
  /** Image for pools that name none (Docker only). @defaultValue uhlp/jit-runner:latest */
  readonly image?: string;
}

export function createSandboxDriver(name: SandboxDriverName, options: CreateDriverOptions): SandboxDriver {
  switch (name) {
    case 'process':
      return new ProcessDriver({ logger: options.logger });
    case 'docker':
      return new DockerDriver({ logger: options.logger, instanceId: options.instanceId, image: options.image });
  }
}
