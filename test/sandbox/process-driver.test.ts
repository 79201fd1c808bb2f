import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { ProcessDriver, RUNNER_NICENESS } from '../../src/sandbox/process-driver.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import { describeSandboxDriver, executeBody, makeSuiteDefinitions, suitePool } from './driver-suite.js';

describeSandboxDriver('process', {
  makeDriver: () => new ProcessDriver({ logger: silentLogger() }),
  memoryExhaustionCause: 'heap-limit',
});

describe('process driver priority', () => {
  it('runs runners at a lower CPU priority than the core, and the script sees it', async () => {
    const driver = new ProcessDriver({ logger: silentLogger() });
    try {
      const handle = await driver.create({ appId: 'suite', pool: suitePool(), definitionsRoot: makeSuiteDefinitions(), labels: {} });
      const client = new SandboxClient(handle.endpoint);
      const answer = await client.execute(executeBody('n-1', 'hello'), 'n-1', 3000);
      const { data } = JSON.parse(answer.body.toString()) as { data: { pid: number } };
      expect(os.getPriority(data.pid)).toBe(Math.min(19, os.getPriority() + RUNNER_NICENESS));
      client.close();
      await driver.destroy(handle, 'shutdown');
    } finally {
      await driver.close();
    }
  });
});
