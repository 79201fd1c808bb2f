import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../logger.js';
import { createSandboxDriver, poolStrategyFor } from './create-driver.js';
import { DockerDriver } from './docker-driver.js';
import { operatorWarmedPool } from './operator-warmed-pool.js';
import { ProcessDriver } from './process-driver.js';
import { localWarmPool } from './warm-pool.js';

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

  it.each([
    ['process', localWarmPool],
    ['docker', localWarmPool],
    ['pod', operatorWarmedPool],
  ] as const)('keeps the pools of the %s driver with its strategy', (name, strategy) => {
    expect(poolStrategyFor(name)).toBe(strategy);
  });
});
