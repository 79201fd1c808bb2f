/** Cluster access as every Kubernetes client of the project finds it: $KUBECONFIG, ~/.kube/config, or the in-cluster service account. */
import { KubeConfig } from '@kubernetes/client-node';

export function defaultKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  return kubeConfig;
}
