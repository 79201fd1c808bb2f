/**
 * The Secrets an app served from Kubernetes may name: those of its own
 * namespace, and no other. An AppDefinition's remote MCP servers' `secretRef`s
 * are read from the AppDefinition's namespace when the app is loaded (the core's
 * Role grants `get` on Secrets in the namespaces it serves, nothing cluster-wide),
 * so an app can never name a Secret of another namespace, whoever wrote it.
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import type { SecretValue } from '../../secrets/secret-store.js';

/** One Secret's data, decoded: value by key, each with the Secret's resourceVersion as its version. */
export type SecretData = ReadonlyMap<string, SecretValue>;

export class NamespaceSecrets {
  private readonly api: CoreV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.api = kubeConfig.makeApiClient(CoreV1Api);
  }

  /**
   * The named Secrets of `namespace`, decoded; one that does not exist is absent
   * from the answer (the app's definition then names a secret it does not have).
   */
  async read(namespace: string, names: Iterable<string>): Promise<ReadonlyMap<string, SecretData>> {
    const found = new Map<string, SecretData>();
    for (const name of new Set(names)) {
      const secret = await this.api.readNamespacedSecret({ name, namespace }).catch((error: unknown) => {
        if ((error as { code?: unknown }).code === 404) return undefined;
        throw error;
      });
      if (secret === undefined) continue;
      const version = secret.metadata?.resourceVersion ?? '0';
      const data = new Map<string, SecretValue>();
      for (const [key, value] of Object.entries(secret.data ?? {})) data.set(key, { value: Buffer.from(value, 'base64').toString('utf8'), version });
      for (const [key, value] of Object.entries(secret.stringData ?? {})) data.set(key, { value, version });
      found.set(name, data);
    }
    return found;
  }
}

export { secretNamesOf } from '../../secrets/secret-references.js';
