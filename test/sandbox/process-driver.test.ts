import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { RUNNER_NICENESS } from '../../src/sandbox/process-driver.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import { makeProcessDriver } from '../helpers/process-driver.js';
import { describeSandboxDriver, executeBody, makeSuiteDefinitions, suitePool } from './driver-suite.js';
import { PYTHON_SUITE_SCRIPT, RUNNER_PROFILES } from './runner-profiles.js';

for (const runner of RUNNER_PROFILES) {
  describeSandboxDriver('process (bubblewrap)', {
    makeDriver: () => makeProcessDriver({ isolation: 'namespaces' }),
    runner,
    memoryExhaustionCause: 'heap-limit',
  });

  describeSandboxDriver('process (unisolated)', {
    makeDriver: () => makeProcessDriver({ isolation: 'none' }),
    runner,
    memoryExhaustionCause: 'heap-limit',
  });
}

describe('process driver priority', () => {
  it.each([
    ['namespaces', 'jit'],
    ['none', 'jit'],
    ['namespaces', 'python'],
    ['none', 'python'],
  ] as const)('runs runners (%s, %s) at a lower CPU priority than the core, and the script sees it', async (isolation, runner) => {
    const driver = await makeProcessDriver({ isolation });
    try {
      const handle = await driver.create({ appId: 'suite', pool: suitePool({ runner }), definitionsRoot: makeSuiteDefinitions(), labels: {} });
      const client = new SandboxClient(handle.endpoint);
      const answer = await client.execute(executeBody('n-1', 'hello', 'x', runner === 'python' ? PYTHON_SUITE_SCRIPT : undefined), 'n-1', 3000);
      const { data } = JSON.parse(answer.body.toString()) as { data: { nice: number } };
      expect(data.nice).toBe(Math.min(19, os.getPriority() + RUNNER_NICENESS));
      client.close();
      await driver.destroy(handle, 'shutdown');
    } finally {
      await driver.close();
    }
  });
});
