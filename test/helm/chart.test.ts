/**
 * The Helm chart with the real helm (built from Go modules) and the real API server:
 * lint and template over the default values and over every option, a misspelt value
 * refused by the schema, install / upgrade / uninstall with every object accepted by
 * the server, releases beside and after one another, and the RBAC checked verb by verb
 * with `kubectl auth can-i --as`. Nothing here waits for pods (the images are not on any
 * node): uninstalls skip the pre-delete hook, whose Job needs the image; the helm
 * journey (test/cluster) runs it on the real node.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { renderCrdFiles } from '../../src/crds/crd-documents.js';
import { createNamespace, kubectl, loadKubeConfig, waitFor } from '../k8s/kube-env.js';
import { ALL_OPTIONS, CHART, helm, helmOk } from './helm-env.js';

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  rules?: unknown[];
}

function objects(manifest: string): K8sObject[] {
  return parseAllDocuments(manifest)
    .map((document) => document.toJS() as K8sObject | null)
    .filter((object): object is K8sObject => object !== null);
}

/** `kubectl auth can-i` as a service account: true when allowed. */
async function canI(serviceAccount: string, namespace: string, verb: string, resource: string, extra: string[] = []): Promise<boolean> {
  const answer = await kubectl(['auth', 'can-i', verb, resource, `--as=${serviceAccount}`, '-n', namespace, ...extra]).catch(
    (error: { stdout?: string }) => error.stdout ?? '',
  );
  return answer.trim() === 'yes';
}

/** One line of the RBAC table: who, what, where, and the answer it must get. */
interface Permission {
  readonly verb: string;
  readonly resource: string;
  /** `watched`, `lease` (the release namespace), `other` (a namespace the release does not serve). */
  readonly where: 'watched' | 'lease' | 'other';
  readonly allowed: boolean;
  readonly extra?: string[];
}

const APPS = 'appdefinitions.uhlp.dev';
const POOLS = 'sandboxpools.uhlp.dev';
const LEASES = 'leases.coordination.k8s.io';

// What the operator needs (src/operator: informers, reconcilers, leader election) and nothing more.
export const OPERATOR_PERMISSIONS: readonly Permission[] = [
  ...['get', 'list', 'watch', 'patch'].map((verb) => ({ verb, resource: APPS, where: 'watched' as const, allowed: true })),
  { verb: 'patch', resource: APPS, where: 'watched', allowed: true, extra: ['--subresource=status'] },
  { verb: 'update', resource: `${APPS}`, where: 'watched', allowed: true, extra: ['--subresource=finalizers'] },
  ...['get', 'list', 'watch', 'create', 'patch', 'delete'].map((verb) => ({ verb, resource: POOLS, where: 'watched' as const, allowed: true })),
  { verb: 'patch', resource: POOLS, where: 'watched', allowed: true, extra: ['--subresource=status'] },
  { verb: 'create', resource: LEASES, where: 'lease', allowed: true },
  { verb: 'get', resource: `${LEASES}/uhlp-operator`, where: 'lease', allowed: true },
  { verb: 'update', resource: `${LEASES}/uhlp-operator`, where: 'lease', allowed: true },
  // Refused: users own AppDefinitions; the operator writes only their finalizer and status.
  { verb: 'create', resource: APPS, where: 'watched', allowed: false },
  { verb: 'delete', resource: APPS, where: 'watched', allowed: false },
  { verb: 'update', resource: APPS, where: 'watched', allowed: false },
  { verb: 'update', resource: POOLS, where: 'watched', allowed: false },
  { verb: 'patch', resource: POOLS, where: 'watched', allowed: false, extra: ['--subresource=scale'] },
  { verb: 'get', resource: `${LEASES}/someone-else`, where: 'lease', allowed: false },
  { verb: 'delete', resource: `${LEASES}/uhlp-operator`, where: 'lease', allowed: false },
  { verb: 'get', resource: 'secrets', where: 'watched', allowed: false },
  { verb: 'list', resource: 'configmaps', where: 'watched', allowed: false },
  { verb: 'create', resource: 'pods', where: 'watched', allowed: false },
  { verb: 'create', resource: 'rolebindings.rbac.authorization.k8s.io', where: 'watched', allowed: false },
  { verb: 'list', resource: APPS, where: 'other', allowed: false },
  { verb: 'create', resource: POOLS, where: 'other', allowed: false },
];

export const CORE_PERMISSIONS: readonly Permission[] = [
  ...['get', 'list', 'watch'].map((verb) => ({ verb, resource: APPS, where: 'watched' as const, allowed: true })),
  { verb: 'patch', resource: APPS, where: 'watched', allowed: false },
  { verb: 'patch', resource: APPS, where: 'watched', allowed: false, extra: ['--subresource=status'] },
  { verb: 'list', resource: POOLS, where: 'watched', allowed: false },
  // An app's secretRefs name Secrets of its own namespace: the core reads each by name, and learns of no other.
  { verb: 'get', resource: 'secrets', where: 'watched', allowed: true },
  { verb: 'list', resource: 'secrets', where: 'watched', allowed: false },
  { verb: 'watch', resource: 'secrets', where: 'watched', allowed: false },
  { verb: 'get', resource: 'secrets', where: 'other', allowed: false },
  { verb: 'create', resource: 'pods', where: 'watched', allowed: false },
  { verb: 'create', resource: LEASES, where: 'lease', allowed: false },
  { verb: 'list', resource: APPS, where: 'other', allowed: false },
];

async function checkPermissions(serviceAccount: string, table: readonly Permission[], namespaces: Record<Permission['where'], string>): Promise<void> {
  const answers = await Promise.all(table.map((row) => canI(serviceAccount, namespaces[row.where], row.verb, row.resource, row.extra)));
  const actual = table.map((row, index) => ({ ...row, allowed: answers[index] }));
  expect(actual).toEqual(table.map((row) => ({ ...row })));
}

describe('helm lint and template', () => {
  it('lints the chart over the default values and over every option', async () => {
    expect(await helmOk(['lint', '--strict', CHART])).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    expect(await helmOk(['lint', '--strict', CHART, '-f', ALL_OPTIONS])).toMatch(/0 chart\(s\) failed/);
  });

  it('renders the default values: namespaced RBAC, the generated CRDs, hardened workloads', async () => {
    const rendered = objects(await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system']));
    const kinds = rendered.map((object) => `${object.kind}/${object.metadata.name}`).sort();
    expect(kinds).toEqual(
      [
        'ConfigMap/rel-uhlp-core',
        'CustomResourceDefinition/appdefinitions.uhlp.dev',
        'CustomResourceDefinition/sandboxpools.uhlp.dev',
        'Deployment/rel-uhlp-core',
        'Deployment/rel-uhlp-operator',
        'Job/rel-uhlp-uninstall',
        'NetworkPolicy/rel-uhlp-core',
        'NetworkPolicy/rel-uhlp-operator',
        'PodDisruptionBudget/rel-uhlp-operator',
        'Role/rel-uhlp-core',
        'Role/rel-uhlp-operator',
        'Role/rel-uhlp-operator-lease',
        'RoleBinding/rel-uhlp-core',
        'RoleBinding/rel-uhlp-operator',
        'RoleBinding/rel-uhlp-operator-lease',
        'Service/rel-uhlp-core',
        'Service/rel-uhlp-operator-metrics',
        'ServiceAccount/rel-uhlp-core',
        'ServiceAccount/rel-uhlp-operator',
      ].sort(),
    );
    // The chart's CRDs are the generated documents, with the chart's labels and the keep policy added.
    const generated = new Map([...renderCrdFiles().values()].map((text) => objects(text)[0]!).map((crd) => [crd.metadata.name, crd]));
    for (const crd of rendered.filter((object) => object.kind === 'CustomResourceDefinition')) {
      expect(crd.spec).toEqual(generated.get(crd.metadata.name)!.spec);
      expect(crd.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
      expect(crd.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('Helm');
    }
    for (const deployment of rendered.filter((object) => object.kind === 'Deployment' || object.kind === 'Job')) {
      const pod = (deployment.spec as { template: { spec: Record<string, any> } }).template.spec;
      expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } });
      for (const container of pod.containers) {
        expect(container.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
      }
    }
    const operator = rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'rel-uhlp-operator')!;
    expect((operator.spec as { replicas: number }).replicas).toBe(2);
    // The default driver is `pod`: the operator keeps the warm sandbox pods, of the appVersion's runner images.
    expect((operator.spec as any).template.spec.containers[0].args).toEqual([
      'operator', '--metrics-port', '9090', '--lease-namespace', 'uhlp-system', '--namespace', 'uhlp-system',
      '--sandbox-pods', '--jit-image', 'uhlp/jit-runner:0.1.0', '--llm-image', 'uhlp/llm-orchestrator:0.1.0', '--mcp-image', 'uhlp/mcp-host:0.1.0',
      '--core-selector', 'app.kubernetes.io/name=uhlp,app.kubernetes.io/instance=rel,app.kubernetes.io/component=core', '--core-port', '8080',
    ]);
    expect((operator.spec as any).template.spec.containers[0].image).toBe('uhlp/uhlp:0.1.0');
    const settings = rendered.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'rel-uhlp-core')!;
    expect(settings.data).toMatchObject({ UHLP_DRIVER: 'pod', UHLP_IMAGE_JIT: 'uhlp/jit-runner:0.1.0', UHLP_IMAGE_LLM: 'uhlp/llm-orchestrator:0.1.0', UHLP_POD_CLAIM_AHEAD: '2' });
    const fewer = objects(await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', '--set', 'core.sandboxes.claimAhead=0']));
    expect(fewer.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'rel-uhlp-core')!.data).toMatchObject({ UHLP_POD_CLAIM_AHEAD: '0' });
    // The uninstall hook: the operator's rights, its namespaces, and the pods of the pod driver.
    const hook = rendered.find((object) => object.kind === 'Job')!;
    expect(hook.metadata.annotations).toMatchObject({ 'helm.sh/hook': 'pre-delete' });
    expect((hook.spec as any).template.spec.serviceAccountName).toBe('rel-uhlp-operator');
    expect((hook.spec as any).template.spec.containers[0].args).toEqual(['operator', '--uninstall', '--lease-namespace', 'uhlp-system', '--namespace', 'uhlp-system', '--sandbox-pods']);
  });

  it("renders the MCP package cache: the core's read-write mount and settings, the operator's flag; a hostPath on a one-node cluster", async () => {
    for (const [value, volume, source] of [
      ['core.mcp.packageCache.claimName=mcp-packages', 'pvc:mcp-packages', { persistentVolumeClaim: { claimName: 'mcp-packages' } }],
      ['core.mcp.packageCache.hostPath=/var/lib/uhlp/mcp', 'hostPath:/var/lib/uhlp/mcp', { hostPath: { path: '/var/lib/uhlp/mcp', type: 'DirectoryOrCreate' } }],
    ] as const) {
      const rendered = objects(await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', '--set', value]));
      const settings = rendered.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'rel-uhlp-core')!;
      expect(settings.data).toMatchObject({ UHLP_MCP_PACKAGE_CACHE: '/var/lib/uhlp-mcp-packages', UHLP_MCP_PACKAGE_VOLUME: volume, UHLP_IMAGE_MCP: 'uhlp/mcp-host:0.1.0' });
      const core = (rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'rel-uhlp-core')!.spec as any).template.spec;
      expect(core.volumes).toContainEqual({ name: 'mcp-packages', ...source });
      expect(core.containers[0].volumeMounts).toContainEqual({ name: 'mcp-packages', mountPath: '/var/lib/uhlp-mcp-packages' });
      const operator = (rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'rel-uhlp-operator')!.spec as any).template.spec;
      expect(operator.containers[0].args.join(' ')).toContain(`--mcp-package-volume ${volume}`);
    }
    // None by default: runner: mcp pools are refused on pods, and keep no warm pods.
    const plain = objects(await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system']));
    expect(plain.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'rel-uhlp-core')!.data).not.toHaveProperty('UHLP_MCP_PACKAGE_VOLUME');
  });

  it('renders every option', async () => {
    const rendered = objects(await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', '-f', ALL_OPTIONS]));
    const kinds = new Set(rendered.map((object) => object.kind));
    for (const kind of ['ClusterRole', 'ClusterRoleBinding', 'Ingress', 'StatefulSet', 'NetworkPolicy', 'ServiceMonitor', 'PodMonitor', 'PrometheusRule']) expect(kinds).toContain(kind);
    const dashboard = rendered.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'all-options-dashboard')!;
    expect(dashboard.metadata.labels?.grafana_dashboard).toBe('1');
    expect(JSON.parse(dashboard.data!['uhlp.json']!)).toMatchObject({ uid: 'uhlp-overview', title: 'uhlp' });
    const core = rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'all-options-core')!;
    const env = (core.spec as any).template.spec.containers[0].env as Array<{ name: string; value?: string; valueFrom?: unknown }>;
    // Secrets are referenced, never copied into the chart's objects.
    expect(env.find((e) => e.name === 'UHLP_LLM_API_KEY')).toEqual({ name: 'UHLP_LLM_API_KEY', valueFrom: { secretKeyRef: { name: 'uhlp-llm', key: 'token' } } });
    // The bundled Redis with its sentinels: the core asks them for the master.
    const sentinelHosts = [0, 1, 2].map((i) => `all-options-redis-sentinel-${i}.all-options-redis-sentinel-headless.uhlp-system.svc:26379`).join(',');
    expect(env.find((e) => e.name === 'UHLP_STATE')?.value).toBe(`redis+sentinel://:$(UHLP_REDIS_PASSWORD)@${sentinelHosts}/uhlp/0`);
    expect(env.find((e) => e.name === 'UHLP_LEDGER_KEY_FILE')?.value).toBe('/etc/uhlp/ledger-key/key');
    // One sources key for every core of the release, so a callback URL one core gave works on all.
    expect(env.find((e) => e.name === 'UHLP_SOURCES_KEY')).toEqual({ name: 'UHLP_SOURCES_KEY', valueFrom: { secretKeyRef: { name: 'uhlp-sources', key: 'key' } } });
    const settings = rendered.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'all-options-core')!;
    expect(settings.data).toMatchObject({ UHLP_PUBLIC_URL: 'https://apps.example.com', UHLP_LEDGER_DURABILITY: 'sync' });
  });

  it('renders an Ingress with no hosts as a default backend to the core, which the API server accepts', async () => {
    const manifest = await helmOk(['template', 'rel', CHART, '-n', 'default', '--set', 'core.ingress.enabled=true', '--show-only', 'templates/core-ingress.yaml']);
    const [ingress] = objects(manifest);
    expect(ingress!.spec).toEqual({ defaultBackend: { service: { name: 'rel-uhlp-core', port: { name: 'http' } } } });
    const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-ingress-'));
    try {
      writeFileSync(path.join(dir, 'ingress.yaml'), manifest);
      expect(await kubectl(['apply', '--dry-run=server', '-n', 'default', '-f', path.join(dir, 'ingress.yaml')])).toMatch(/ingress.networking.k8s.io\/rel-uhlp-core created \(server dry run\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reaches the console through the Service and the Ingress: the views\' origin on a port and a host of its own, the tokens Secret mounted', async () => {
    const values = [
      '--set', 'core.ingress.enabled=true',
      '--set', 'core.ingress.hosts[0].host=apps.example.com',
      '--set', 'core.ingress.hosts[0].paths[0].path=/',
      '--set', 'core.ingress.hosts[0].paths[0].pathType=Prefix',
      '--set', 'core.console.auth.existingSecret=console-tokens',
      '--set', 'core.console.sandbox.url=https://views.example.com',
      '--set', 'core.console.sandbox.ingressHost=views.example.com',
      '--set', 'core.console.traceUrlTemplate=http://jaeger:16686/trace/{traceId}',
    ];
    const rendered = objects(await helmOk(['template', 'rel', CHART, '-n', 'default', ...values]));
    const service = rendered.find((object) => object.kind === 'Service' && object.metadata.name === 'rel-uhlp-core')!;
    expect((service.spec as any).ports).toEqual([
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      { name: 'views', port: 8081, targetPort: 'views', protocol: 'TCP' },
    ]);
    const deployment = rendered.find((object) => object.kind === 'Deployment' && object.metadata.name === 'rel-uhlp-core')!;
    const pod = (deployment.spec as any).template.spec;
    const container = pod.containers[0];
    expect(container.ports).toContainEqual({ name: 'views', containerPort: 8081, protocol: 'TCP' });
    expect(container.volumeMounts).toContainEqual({ name: 'console-tokens', mountPath: '/etc/uhlp/console', readOnly: true });
    expect(pod.volumes).toContainEqual({ name: 'console-tokens', secret: { secretName: 'console-tokens', items: [{ key: 'tokens', path: 'tokens' }] } });
    const settings = rendered.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'rel-uhlp-core')!;
    expect(settings.data).toMatchObject({ UHLP_CONSOLE: 'on', UHLP_CONSOLE_SANDBOX_PORT: '8081', UHLP_CONSOLE_SANDBOX_URL: 'https://views.example.com', UHLP_CONSOLE_TOKENS_FILE: '/etc/uhlp/console/tokens', UHLP_TURN_JOURNAL_SIZE: '1000', UHLP_TRACE_URL_TEMPLATE: 'http://jaeger:16686/trace/{traceId}' });
    // The console itself is on the operator listener, on the pod's loopback: no Service port, no Ingress rule reaches it.
    expect(settings.data).toMatchObject({ UHLP_OPERATOR_HOST: '127.0.0.1', UHLP_OPERATOR_PORT: '8082' });
    expect(settings.data).not.toHaveProperty('UHLP_OPERATOR_HOSTS');
    expect(container.ports).toContainEqual({ name: 'operator', containerPort: 8082, protocol: 'TCP' });
    const ingress = rendered.find((object) => object.kind === 'Ingress')!;
    expect((ingress.spec as any).rules).toEqual([
      { host: 'apps.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'rel-uhlp-core', port: { name: 'http' } } } }] } },
      { host: 'views.example.com', http: { paths: [{ path: '/sandbox/', pathType: 'Prefix', backend: { service: { name: 'rel-uhlp-core', port: { name: 'views' } } } }] } },
    ]);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-console-ingress-'));
    try {
      writeFileSync(path.join(dir, 'ingress.yaml'), await helmOk(['template', 'rel', CHART, '-n', 'default', ...values, '--show-only', 'templates/core-ingress.yaml']));
      expect(await kubectl(['apply', '--dry-run=server', '-n', 'default', '-f', path.join(dir, 'ingress.yaml')])).toMatch(/created \(server dry run\)/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a misspelt value, and a value of the wrong kind, naming it', async () => {
    const typo = await helm(['template', 'rel', CHART, '--set', 'core.replicas=2']);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toMatch(/additional properties 'replicas' not allowed/);
    const kind = await helm(['template', 'rel', CHART, '--set', 'operator.replicaCount=many']);
    expect(kind.code).not.toBe(0);
    expect(kind.stderr).toMatch(/operator\/replicaCount/);
    const both = await helm(['template', 'rel', CHART, '--set', 'redis.bundled.enabled=true', '--set', 'redis.external.url.existingSecret=x']);
    expect(both.stderr).toMatch(/exclusive/);
    const range = await helm(['template', 'rel', CHART, '--set', 'core.sandboxes.claimAhead=17']);
    expect(range.code).not.toBe(0);
    expect(range.stderr).toMatch(/claimAhead/);
  });
});

describe('helm install, upgrade and uninstall on the real API server', () => {
  let kubeConfig: KubeConfig;
  const spaces: Array<{ name: string; remove: () => Promise<void> }> = [];
  const release = `t${randomBytes(3).toString('hex')}`;
  let ns: string;
  let extra: string;
  let other: string;

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    for (const prefix of ['uhlp-helm', 'uhlp-helm-extra', 'uhlp-helm-other']) spaces.push(await createNamespace(kubeConfig, prefix));
    [ns, extra, other] = spaces.map((space) => space.name) as [string, string, string];
  });
  afterAll(async () => {
    await helm(['uninstall', release, '-n', ns, '--no-hooks']);
    for (const space of spaces) await space.remove();
  });

  const instanceObjects = async (namespace: string): Promise<string[]> =>
    (await kubectl(['get', 'deploy,svc,sa,role,rolebinding,pdb,cm,statefulset', '-n', namespace, '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']))
      .trim()
      .split('\n')
      .filter(Boolean)
      .sort();

  it('installs: every object accepted by the server, the CRDs installed or left to their owner', async () => {
    const owner = async (): Promise<string | undefined> => {
      const found = await kubectl(['get', 'crd', 'appdefinitions.uhlp.dev', '-o', 'json', '--ignore-not-found']);
      return found.trim() === '' ? undefined : ((JSON.parse(found) as K8sObject).metadata.annotations?.['meta.helm.sh/release-name'] ?? 'not helm');
    };
    const before = await owner();
    // No --take-ownership: CRDs applied by other suites, or kept by an earlier release, are left as they are.
    await helmOk(['install', release, CHART, '-n', ns, '--set', 'core.sandboxes.driver=process,core.sandboxes.unsafeProcessSandboxes=true']);
    expect(await instanceObjects(ns)).toEqual(
      [
        `configmap/${release}-uhlp-core`,
        `deployment.apps/${release}-uhlp-core`,
        `deployment.apps/${release}-uhlp-operator`,
        `poddisruptionbudget.policy/${release}-uhlp-operator`,
        `role.rbac.authorization.k8s.io/${release}-uhlp-core`,
        `role.rbac.authorization.k8s.io/${release}-uhlp-operator`,
        `role.rbac.authorization.k8s.io/${release}-uhlp-operator-lease`,
        `rolebinding.rbac.authorization.k8s.io/${release}-uhlp-core`,
        `rolebinding.rbac.authorization.k8s.io/${release}-uhlp-operator`,
        `rolebinding.rbac.authorization.k8s.io/${release}-uhlp-operator-lease`,
        `service/${release}-uhlp-core`,
        `service/${release}-uhlp-operator-metrics`,
        `serviceaccount/${release}-uhlp-core`,
        `serviceaccount/${release}-uhlp-operator`,
      ].sort(),
    );
    const manifest = objects(await helmOk(['get', 'manifest', release, '-n', ns]));
    const ownsCrds = manifest.some((object) => object.kind === 'CustomResourceDefinition');
    if (before === undefined) {
      expect(ownsCrds).toBe(true);
      expect(await owner()).toBe(release);
    } else {
      expect(ownsCrds).toBe(false);
      expect(await owner()).toBe(before);
    }
  });

  it('gives the operator exactly the rights it needs, and the core only reads AppDefinitions and, by name, the Secrets of their namespaces', async () => {
    const where = { watched: ns, lease: ns, other };
    await checkPermissions(`system:serviceaccount:${ns}:${release}-uhlp-operator`, OPERATOR_PERMISSIONS, where);
    await checkPermissions(`system:serviceaccount:${ns}:${release}-uhlp-core`, CORE_PERMISSIONS, where);
  });

  it('upgrades with changed values: more operators, a second watched namespace, new core settings', async () => {
    const before = JSON.parse(await kubectl(['get', 'deploy', `${release}-uhlp-core`, '-n', ns, '-o', 'json'])) as any;
    await helmOk([
      'upgrade', release, CHART, '-n', ns,
      '--set', 'core.sandboxes.driver=process,core.sandboxes.unsafeProcessSandboxes=true',
      '--set', 'operator.replicaCount=3',
      '--set', `watchNamespaces={${ns},${extra}}`,
      '--set', 'core.logLevel=debug',
    ]);
    const operator = JSON.parse(await kubectl(['get', 'deploy', `${release}-uhlp-operator`, '-n', ns, '-o', 'json'])) as any;
    expect(operator.spec.replicas).toBe(3);
    expect(operator.spec.template.spec.containers[0].args).toEqual(['operator', '--metrics-port', '9090', '--lease-namespace', ns, '--namespace', ns, '--namespace', extra]);
    const settings = JSON.parse(await kubectl(['get', 'cm', `${release}-uhlp-core`, '-n', ns, '-o', 'json'])) as K8sObject;
    expect(settings.data?.UHLP_LOG_LEVEL).toBe('debug');
    const after = JSON.parse(await kubectl(['get', 'deploy', `${release}-uhlp-core`, '-n', ns, '-o', 'json'])) as any;
    // The settings checksum rolls the cores.
    expect(after.spec.template.metadata.annotations['checksum/config']).not.toBe(before.spec.template.metadata.annotations['checksum/config']);
    expect(await instanceObjects(extra)).toEqual(
      [
        `role.rbac.authorization.k8s.io/${release}-uhlp-core`,
        `role.rbac.authorization.k8s.io/${release}-uhlp-operator`,
        `rolebinding.rbac.authorization.k8s.io/${release}-uhlp-core`,
        `rolebinding.rbac.authorization.k8s.io/${release}-uhlp-operator`,
      ].sort(),
    );
    await checkPermissions(`system:serviceaccount:${ns}:${release}-uhlp-operator`, OPERATOR_PERMISSIONS, { watched: extra, lease: ns, other });
  });

  it('installs a second release beside it in another namespace, without --take-ownership', async () => {
    const second = `${release}b`;
    await helmOk(['install', second, CHART, '-n', extra, '--set', 'core.sandboxes.driver=process,core.sandboxes.unsafeProcessSandboxes=true']);
    try {
      // The CRDs were the first's (or another's): the second leaves them, and serves its own namespace.
      expect(objects(await helmOk(['get', 'manifest', second, '-n', extra])).filter((object) => object.kind === 'CustomResourceDefinition')).toEqual([]);
      expect(await canI(`system:serviceaccount:${extra}:${second}-uhlp-operator`, extra, 'list', APPS)).toBe(true);
    } finally {
      await helmOk(['uninstall', second, '-n', extra, '--wait', '--no-hooks']);
    }
  });

  it('takes the CRDs over with crds.adopt and --take-ownership, and keeps them on uninstall', async () => {
    const adopter = `${release}c`;
    await helmOk(['install', adopter, CHART, '-n', other, '--take-ownership', '--set', 'crds.adopt=true,core.sandboxes.driver=process,core.sandboxes.unsafeProcessSandboxes=true']);
    try {
      expect(objects(await helmOk(['get', 'manifest', adopter, '-n', other])).filter((object) => object.kind === 'CustomResourceDefinition').length).toBe(2);
      const crd = JSON.parse(await kubectl(['get', 'crd', 'appdefinitions.uhlp.dev', '-o', 'json'])) as K8sObject;
      expect(crd.metadata.annotations).toMatchObject({ 'meta.helm.sh/release-name': adopter, 'meta.helm.sh/release-namespace': other, 'helm.sh/resource-policy': 'keep' });
    } finally {
      await helmOk(['uninstall', adopter, '-n', other, '--wait', '--no-hooks']);
    }
    expect(JSON.parse(await kubectl(['get', 'crd', 'appdefinitions.uhlp.dev', '-o', 'json'])).metadata.name).toBe('appdefinitions.uhlp.dev');
  });

  it('uninstalls: nothing of the release is left, the CRDs are kept', async () => {
    await helmOk(['uninstall', release, '-n', ns, '--wait', '--no-hooks']);
    await waitFor('the release objects to be gone', async () => (await instanceObjects(ns)).length === 0 && (await instanceObjects(extra)).length === 0);
    expect(JSON.parse(await kubectl(['get', 'crd', 'appdefinitions.uhlp.dev', '-o', 'json'])).metadata.name).toBe('appdefinitions.uhlp.dev');
  });
});

describe('helm install with every option on the real API server', () => {
  let kubeConfig: KubeConfig;
  let space: { name: string; remove: () => Promise<void> };
  const release = `a${randomBytes(3).toString('hex')}`;
  const createdCrds: string[] = [];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-helm-'));

  beforeAll(async () => {
    kubeConfig = loadKubeConfig();
    space = await createNamespace(kubeConfig, 'uhlp-helm-all');
    // The API server has no prometheus-operator: its kinds are declared here, open (no schema), so
    // that the monitors and the rule are accepted; their contents are checked by the template test
    // and, for the rules, by promtool in dashboard-prometheus.test.ts.
    for (const [plural, kind] of [['servicemonitors', 'ServiceMonitor'], ['podmonitors', 'PodMonitor'], ['prometheusrules', 'PrometheusRule']] as const) {
      const name = `${plural}.monitoring.coreos.com`;
      const exists = await kubectl(['get', 'crd', name, '-o', 'name']).then(() => true, () => false);
      if (exists) continue;
      const file = path.join(dir, `${plural}.json`);
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'apiextensions.k8s.io/v1',
          kind: 'CustomResourceDefinition',
          metadata: { name },
          spec: {
            group: 'monitoring.coreos.com',
            scope: 'Namespaced',
            names: { plural, kind, singular: kind.toLowerCase(), listKind: `${kind}List` },
            versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
          },
        }),
      );
      await kubectl(['apply', '-f', file]);
      createdCrds.push(name);
    }
    for (const name of createdCrds) await kubectl(['wait', '--for=condition=Established', `crd/${name}`, '--timeout=30s']);
  });
  afterAll(async () => {
    await helm(['uninstall', release, '-n', space.name, '--no-hooks']);
    for (const name of createdCrds) await kubectl(['delete', 'crd', name, '--wait=false']).catch(() => undefined);
    await space?.remove();
    rmSync(dir, { recursive: true, force: true });
  });

  it('installs every option, serves every namespace with cluster-wide RBAC, and uninstalls cleanly', async () => {
    await helmOk(['install', release, CHART, '-n', space.name, '-f', ALL_OPTIONS]);
    const listed = (await kubectl(['get', 'ingress,statefulset,networkpolicy,servicemonitor,podmonitor,prometheusrule,pdb', '-n', space.name, '-o', 'name'])).trim().split('\n').sort();
    expect(listed).toEqual(
      [
        'ingress.networking.k8s.io/all-options-core',
        'networkpolicy.networking.k8s.io/all-options-core',
        'networkpolicy.networking.k8s.io/all-options-operator',
        'networkpolicy.networking.k8s.io/all-options-redis',
        'networkpolicy.networking.k8s.io/all-options-redis-sentinel',
        'poddisruptionbudget.policy/all-options-core',
        'poddisruptionbudget.policy/all-options-operator',
        'podmonitor.monitoring.coreos.com/all-options-core',
        'podmonitor.monitoring.coreos.com/all-options-operator',
        'prometheusrule.monitoring.coreos.com/all-options',
        'servicemonitor.monitoring.coreos.com/all-options-core',
        'servicemonitor.monitoring.coreos.com/all-options-operator',
        'statefulset.apps/all-options-redis',
        'statefulset.apps/all-options-redis-sentinel',
      ].sort(),
    );
    const operator = `system:serviceaccount:${space.name}:uhlp-operator-sa`;
    // Cluster-wide: any namespace, still only what it needs.
    expect(await canI(operator, 'default', 'list', APPS)).toBe(true);
    expect(await canI(operator, 'default', 'create', POOLS)).toBe(true);
    expect(await canI(operator, 'default', 'get', 'secrets')).toBe(false);
    expect(await canI(operator, 'default', 'create', LEASES)).toBe(false);
    expect(await canI(`system:serviceaccount:${space.name}:uhlp-core-sa`, 'default', 'watch', APPS)).toBe(true);
    expect(await canI(`system:serviceaccount:${space.name}:uhlp-core-sa`, 'default', 'patch', APPS)).toBe(false);
    expect(await canI(`system:serviceaccount:${space.name}:uhlp-core-sa`, 'default', 'list', 'secrets')).toBe(false);

    await helmOk(['uninstall', release, '-n', space.name, '--wait', '--no-hooks']);
    const clusterRoles = await kubectl(['get', 'clusterrole', '-l', `app.kubernetes.io/instance=${release}`, '-o', 'name']);
    expect(clusterRoles.trim()).toBe('');
  });
});
