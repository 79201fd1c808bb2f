/** Process drivers for tests, as the core makes them: a staged runner and a work root in a temporary data directory. */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { silentLogger, type Logger } from '../../src/logger.js';
import { ProcessDriver } from '../../src/sandbox/process-driver.js';
import { prepareProcessSandbox, type ProcessIsolation } from '../../src/sandbox/process-sandbox.js';

export interface TestProcessDriverOptions {
  /** `namespaces` (bubblewrap; fails when it cannot run here) or `none`. @defaultValue `namespaces` */
  readonly isolation?: ProcessIsolation;
  readonly logger?: Logger;
  readonly dataDir?: string;
}

export async function makeProcessDriver(options: TestProcessDriverOptions = {}): Promise<ProcessDriver> {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'uhlp-pd-'));
  const isolation = options.isolation ?? 'namespaces';
  // The test's own PATH, as the core passes its host's (config.ts).
  const sandbox = await prepareProcessSandbox({ stateDir: path.join(dataDir, 'runtime'), prefer: isolation, allowUnisolated: isolation === 'none', ...(process.env.PATH !== undefined ? { hostPath: process.env.PATH } : {}) });
  return new ProcessDriver({ logger: options.logger ?? silentLogger(), sandbox, workRoot: path.join(dataDir, 'work') });
}
