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
    const driver = createSandboxDriver(name, { logger: silentLogger(), instanceId: 'unit' });
    expect(driver).toBeInstanceOf(kind);
    expect(driver.name).toBe(name);
    await driver.close();
  });
});
