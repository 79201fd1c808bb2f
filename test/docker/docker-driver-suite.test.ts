import { afterAll } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import { describeSandboxDriver } from '../sandbox/driver-suite.js';
import { RUNNER_PROFILES } from '../sandbox/runner-profiles.js';
import { docker, pythonImages, sweep, testImages, uniqueInstanceId } from './docker-env.js';

const instanceId = uniqueInstanceId('suite');

for (const runner of RUNNER_PROFILES) {
  describeSandboxDriver('docker', {
    makeDriver: async () => {
      const images = await testImages();
      const { jitRunner, llmOrchestrator } = images;
      const { pythonRunner } = pythonImages(images);
      return new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: jitRunner.reference, llm: llmOrchestrator.reference, python: pythonRunner.reference } });
    },
    runner,
    labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    // The V8 heap gets half the container's memory (a Python's data segment three quarters),
    // so a script filling its heap hits the heap limit before the kernel's OOM killer.
    memoryExhaustionCause: 'heap-limit',
  });
}

afterAll(() => sweep(instanceId));
