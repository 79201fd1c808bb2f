import { afterAll } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import { describeSandboxDriver } from '../sandbox/driver-suite.js';
import { docker, sweep, testImages, uniqueInstanceId } from './docker-env.js';

const instanceId = uniqueInstanceId('suite');

describeSandboxDriver('docker', {
  makeDriver: async () => {
    const { jitRunner } = await testImages();
    return new DockerDriver({ logger: silentLogger(), instanceId, docker, image: jitRunner.reference });
  },
  labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
  // The V8 heap gets half the container's memory, so a script filling its heap
  // hits the heap limit before the kernel's OOM killer.
  memoryExhaustionCause: 'heap-limit',
});

afterAll(() => sweep(instanceId));
