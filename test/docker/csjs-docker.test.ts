import { afterAll } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import { describeCsjsRunner } from '../sandbox/csjs-suite.js';
import { docker, sweep, testImages, uniqueInstanceId } from './docker-env.js';

const instanceId = uniqueInstanceId('csjs');

describeCsjsRunner('docker', {
  makeDriver: async () => {
    const { csjsRunner } = await testImages();
    return new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { csjs: csjsRunner.reference } });
  },
  labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
});

afterAll(() => sweep(instanceId));
