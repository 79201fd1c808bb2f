import { afterAll, beforeAll } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { PodDriver } from '../../src/sandbox/pod-driver.js';
import { pythonImages, testImages, uniqueInstanceId } from '../docker/docker-env.js';
import { createNamespace } from '../k8s/kube-env.js';
import { describeSandboxDriver } from '../sandbox/driver-suite.js';
import { importImages, requireNode } from './node-env.js';
import { POD_RUNNER_PROFILES } from './pod-runner-profiles.js';

const instanceId = uniqueInstanceId('pods');
let namespace: { name: string; remove: () => Promise<void> } | undefined;

beforeAll(async () => {
  const kubeConfig = await requireNode();
  namespace = await createNamespace(kubeConfig, 'uhlp-pod-suite');
}, 60_000);

for (const runner of POD_RUNNER_PROFILES) {
  describeSandboxDriver('pod', {
    makeDriver: async () => {
      const kubeConfig = await requireNode();
      const images = await testImages();
      const { jitRunner, llmOrchestrator } = images;
      const { pythonRunner } = pythonImages(images);
      await importImages([jitRunner.reference, llmOrchestrator.reference, pythonRunner.reference]);
      return new PodDriver({
        logger: silentLogger(),
        instanceId,
        kubeConfig,
        namespace: namespace!.name,
        images: { jit: jitRunner.reference, llm: llmOrchestrator.reference, python: pythonRunner.reference },
      });
    },
    runner,
    labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': 'suite', 'uhlp.dev/instance': instanceId },
    // The V8 heap gets half the pod's memory limit as in a container (a Python's data
    // segment three quarters), and a script that fills it stops on the heap limit
    // before the kernel's OOM kill.
    memoryExhaustionCause: 'heap-limit',
    // A pod is deleted through the API server and stopped by the kubelet; destroy waits
    // (up to 5 s) until its runner no longer answers, so it never answers after destroy.
    destroyWithinMs: 6000,
  });
}

afterAll(() => namespace?.remove());
