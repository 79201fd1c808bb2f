/**
 * The real single-node cluster that `scripts/k8s-node.sh up` starts (the control
 * plane of scripts/k8s-env.sh plus a kubelet, containerd and CNI on this machine).
 * Tests that need it fail, never skip, when it is not running.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadKubeConfig } from '../k8s/kube-env.js';

const run = promisify(execFile);
const NODE_SCRIPT = fileURLToPath(new URL('../../scripts/k8s-node.sh', import.meta.url));

/** The node's bridge address: pods reach the host (and its test servers) there. */
export const NODE_GATEWAY = `${(process.env.UHLP_K8S_NODE_SUBNET ?? '10.244.0.0/24').replace(/\.\d+\/\d+$/, '')}.1`;

/** The kubeconfig of a cluster whose node is Ready; throws (the test fails) when there is none. */
export async function requireNode(): Promise<KubeConfig> {
  try {
    await run(NODE_SCRIPT, ['env']);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new Error(`no Ready node (${stderr.trim()}); run \`scripts/k8s-node.sh up\` as root (scripts/test.sh does)`);
  }
  return loadKubeConfig();
}

/** Copies local Docker images into the node's containerd, where pods with `imagePullPolicy: Never` find them. */
export async function importImages(references: readonly string[]): Promise<void> {
  await run(NODE_SCRIPT, ['import', ...references], { maxBuffer: 1 << 20 });
}

export const REPO_ROOT = path.resolve(path.dirname(NODE_SCRIPT), '..');

/** ctr against the node's containerd (namespace k8s.io), e.g. to kill a container as the kernel would. */
export async function nodeCtr(args: readonly string[]): Promise<string> {
  const { stdout } = await run(NODE_SCRIPT, ['ctr', ...args], { maxBuffer: 1 << 20 });
  return stdout;
}

/**
 * Cuts the cluster's pods off the API server (`scripts/k8s-node.sh api-outage start`: their
 * relay drops every packet, open connections included), or ends that. The API server itself
 * runs on for everything else on this machine.
 */
export async function apiServerOutage(action: 'start' | 'stop'): Promise<void> {
  await run(NODE_SCRIPT, ['api-outage', action]);
}
