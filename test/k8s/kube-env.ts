/**
 * Access to the real API server that `scripts/k8s-env.sh up` starts. Tests fail, never
 * skip, when it is absent. Each test file works in namespaces of its own.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, CoreV1Api, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { renderCrdFiles } from '../../src/crds/crd-documents.js';
import { CRDS_DIR } from '../../src/crds/generate-crds.js';
import { APP_DEFINITION, CustomResourceClient, type AppDefinitionResource } from '../../src/k8s/custom-resources.js';
import { waitForValue } from '../helpers/wait-for.js';

/** The kubeconfig path: $KUBECONFIG, else the one `scripts/k8s-env.sh up` writes. */
export function kubeconfigPath(): string {
  const fromEnv = process.env.KUBECONFIG;
  const runDir = process.env.UHLP_K8S_RUN_DIR ?? join(homedir(), '.cache/uhlp/k8s/run');
  const path = fromEnv && fromEnv !== '' ? fromEnv : join(runDir, 'kubeconfig');
  if (!existsSync(path)) {
    throw new Error(`no kubeconfig at ${path}: run \`scripts/k8s-env.sh up\` and export the KUBECONFIG it prints`);
  }
  return path;
}

export function loadKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(readFileSync(kubeconfigPath(), 'utf8'));
  return kubeConfig;
}

/** test/helpers/wait-for.ts's waitForValue with the cluster tests' argument order and pace: the API server is polled every 100 ms, for 20 s. */
export function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 20_000): Promise<T> {
  return waitForValue(check, { what, timeoutMs, intervalMs: 100 });
}

/**
 * Applies crds/ with kubectl, as a user installs them, and waits until the server
 * reports them Established. (The client's typed CRD model drops `enum` and `default`
 * when it serializes a schema, so it cannot be used to install one.)
 */
export async function installCrds(kubeConfig: KubeConfig): Promise<V1CustomResourceDefinition[]> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  await kubectl(['apply', '--server-side', '--force-conflicts', '-f', CRDS_DIR]);
  const names = [...renderCrdFiles().values()].map((text) => (parse(text) as V1CustomResourceDefinition).metadata!.name!);
  return Promise.all(
    names.map((name) =>
      waitFor(`CRD ${name} Established`, async () => {
        const crd = await api.readCustomResourceDefinition({ name });
        const established = crd.status?.conditions?.find((condition) => condition.type === 'Established');
        return established?.status === 'True' ? crd : undefined;
      }),
    ),
  );
}

/** A fresh namespace named `<prefix>-<random>`; the returned function deletes it. */
export async function createNamespace(kubeConfig: KubeConfig, prefix: string): Promise<{ name: string; remove: () => Promise<void> }> {
  const api = kubeConfig.makeApiClient(CoreV1Api);
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await api.createNamespace({ body: { metadata: { name } } });
  return {
    name,
    remove: async () => {
      await api.deleteNamespace({ name }).catch(() => undefined);
    },
  };
}

/** Runs the kubectl that `scripts/k8s-env.sh up` built (linked beside the kubeconfig). */
export async function kubectl(args: string[]): Promise<string> {
  const config = kubeconfigPath();
  const binary = process.env.UHLP_KUBECTL ?? join(dirname(config), 'kubectl');
  if (!existsSync(binary)) throw new Error(`no kubectl at ${binary}: run \`scripts/k8s-env.sh up\` (it builds one)`);
  const { stdout } = await promisify(execFile)(binary, ['--kubeconfig', config, ...args]);
  return stdout;
}

/**
 * Deletes every AppDefinition of a namespace and waits until they are gone (their
 * pools go with them: owner references).
 */
export async function removeApps(kubeConfig: KubeConfig, namespace: string): Promise<void> {
  const client = new CustomResourceClient(kubeConfig);
  for (const app of (await client.list<AppDefinitionResource>(APP_DEFINITION, namespace)).items) {
    await client.delete(APP_DEFINITION, namespace, app.metadata.name);
  }
  await waitFor(`AppDefinitions of ${namespace} to be gone`, async () => (await client.list(APP_DEFINITION, namespace)).items.length === 0);
}
