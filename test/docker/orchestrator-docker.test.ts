import { afterAll } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import { describeOrchestrator } from '../sandbox/orchestrator-suite.js';
import { docker, sweep, testImages, uniqueInstanceId } from './docker-env.js';

const instanceId = uniqueInstanceId('orchestrator');

describeOrchestrator('docker', {
  makeDriver: async () => {
    const { llmOrchestrator } = await testImages();
    return new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { llm: llmOrchestrator.reference } });
  },
  labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
});

afterAll(() => sweep(instanceId));
