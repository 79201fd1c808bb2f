/** Process drivers for tests, as the core makes them: a staged runner and a work root in a temporary data directory. */
import { mkdtempSync, rmSync } from 'node:fs';
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

/** A process driver whose temporary data directory (a staged runner of some 20 MB) goes with it when it closes. */
class TestProcessDriver extends ProcessDriver {
  constructor(
    options: ConstructorParameters<typeof ProcessDriver>[0],
    private readonly ownDataDir: string | undefined,
  ) {
    super(options);
  }

  override async close(): Promise<void> {
    await super.close();
    if (this.ownDataDir !== undefined) rmSync(this.ownDataDir, { recursive: true, force: true });
  }
}

export async function makeProcessDriver(options: TestProcessDriverOptions = {}): Promise<ProcessDriver> {
  const ownDataDir = options.dataDir === undefined ? mkdtempSync(path.join(os.tmpdir(), 'uhlp-pd-')) : undefined;
  const dataDir = options.dataDir ?? ownDataDir!;
  const isolation = options.isolation ?? 'namespaces';
  // The test's own PATH, as the core passes its host's (config.ts).
  const sandbox = await prepareProcessSandbox({ stateDir: path.join(dataDir, 'runtime'), prefer: isolation, allowUnisolated: isolation === 'none', ...(process.env.PATH !== undefined ? { hostPath: process.env.PATH } : {}) });
  return new TestProcessDriver({ logger: options.logger ?? silentLogger(), sandbox, workRoot: path.join(dataDir, 'work') }, ownDataDir);
}
