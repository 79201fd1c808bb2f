import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logger.js';
import { createSandboxDriver } from './create-driver.js';
import { DockerDriver } from './docker-driver.js';
import { ProcessDriver } from './process-driver.js';

describe('createSandboxDriver', () => {
  it.each([
    ['process', ProcessDriver],
    ['docker', DockerDriver],
  ] as const)('makes the %s driver', async (name, kind) => {
    // Unisolated processes accepted: unit tests run wherever bubblewrap does not.
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-cd-'));
    const driver = await createSandboxDriver(name, { logger: silentLogger(), instanceId: 'unit', dataDir, allowUnisolatedProcesses: true });
    expect(driver).toBeInstanceOf(kind);
    expect(driver.name).toBe(name);
    await driver.close();
  });
});
