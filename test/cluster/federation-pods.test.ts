// MCP federation through `uhlp dev --driver pod` on the real one-node cluster: runner: mcp
// sandboxes are pods of the mcp-host image, each mounting its server's package from the
// package cache (a directory of the node here, hostPath) read-only. See the suite.
import { CoreV1Api } from '@kubernetes/client-node';
import { describeFederation } from '../helpers/federation-suite.js';
import { testImages } from '../docker/docker-env.js';
import { createNamespace, kubeconfigPath } from '../k8s/kube-env.js';
import { importImages, NODE_GATEWAY, nodeCtr, requireNode } from './node-env.js';

let namespace: { name: string; remove: () => Promise<void> } | undefined;
let pods: CoreV1Api | undefined;

describeFederation({
  driver: 'pod',
  scriptServers: false,
  async before({ port, packageCache }) {
    const kubeConfig = await requireNode();
    pods = kubeConfig.makeApiClient(CoreV1Api);
    namespace = await createNamespace(kubeConfig, 'uhlp-federation');
    const { jitRunner, llmOrchestrator, mcpHost } = await testImages();
    await importImages([jitRunner.reference, llmOrchestrator.reference, mcpHost.reference]);
    return {
      // Pods reach the core on the node's bridge address; the test reaches it on loopback.
      args: ['--host', '0.0.0.0', '--port', String(port)],
      env: {
        KUBECONFIG: kubeconfigPath(),
        UHLP_POD_NAMESPACE: namespace.name,
        UHLP_MCP_URL: `http://${NODE_GATEWAY}:${port}/mcp`,
        UHLP_IMAGE_JIT: jitRunner.reference,
        UHLP_IMAGE_LLM: llmOrchestrator.reference,
        UHLP_IMAGE_MCP: mcpHost.reference,
        // The core runs on the node: the cache it installs into is the pods' hostPath.
        UHLP_MCP_PACKAGE_VOLUME: `hostPath:${packageCache}`,
      },
    };
  },
  // server-everything's pod, once its mcp-host says a call is in flight, killed on the node as the kernel
  // would kill it: its runner's task gets SIGKILL.
  async killServer() {
    const list = await pods!.listNamespacedPod({ namespace: namespace!.name, labelSelector: 'uhlp.dev/app=fed,uhlp.dev/pool=everything' });
    let killed = 0;
    for (const pod of list.items) {
      const container = pod.status?.containerStatuses?.[0];
      if (!container?.state?.running || !container.containerID || !pod.status?.podIP) continue;
      const health = (await fetch(`http://${pod.status.podIP}:8080/healthz`).then((response) => response.json()).catch(() => undefined)) as { busy?: boolean } | undefined;
      if (health?.busy !== true) continue;
      await nodeCtr(['tasks', 'kill', '-s', 'SIGKILL', container.containerID.replace(/^containerd:\/\//, '')]);
      killed += 1;
    }
    return killed;
  },
  after: () => namespace?.remove() ?? Promise.resolve(),
});
