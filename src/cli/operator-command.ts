/**
 * `uhlp operator [--namespace NS]... [--lease-namespace NS] [--metrics-port N]`: runs the operator
 * against $KUBECONFIG, ~/.kube/config or the in-cluster service account, until
 * SIGINT/SIGTERM, when it releases its Lease so another operator takes over at once.
 * With `--uninstall` it stops the operators of the Lease instead and deletes what they
 * made (src/operator/release-uninstall.ts), then exits: the chart's pre-delete hook.
 */
import http from 'node:http';
import { loadOperatorEnv, parsePackageVolume, type OperatorEnv } from '../config.js';
import { UhlpError } from '../shared/errors.js';
import type { SandboxPodsOptions } from '../operator/sandbox-pool-pods.js';
import type { CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp } from './command-line.js';
import { EXIT_FAILURE, EXIT_OK } from './exit-codes.js';

const FLAGS = {
  namespace: { type: 'string', multiple: true, value: 'NS', help: 'A namespace whose AppDefinitions and SandboxPools it reconciles, repeatable (default all)' },
  'lease-namespace': { type: 'string', value: 'NS', help: 'Where its leader Lease is (default the first --namespace, else default)' },
  'metrics-port': { type: 'string', value: 'N', help: 'Serve /metrics, /healthz and /readyz on this port (default none)' },
  'sandbox-pods': { type: 'boolean', help: "Keep each SandboxPool's warm pods, which cores of the pod driver claim" },
  'jit-image': { type: 'string', value: 'REF', help: 'With --sandbox-pods: the jit-runner image (UHLP_IMAGE_JIT)' },
  'llm-image': { type: 'string', value: 'REF', help: 'With --sandbox-pods: the llm-orchestrator image (UHLP_IMAGE_LLM)' },
  'mcp-image': { type: 'string', value: 'REF', help: 'With --sandbox-pods: the mcp-host image of runner: mcp pools (UHLP_IMAGE_MCP)' },
  'mcp-package-volume': {
    type: 'string',
    value: 'pvc:NAME|hostPath:DIR',
    help: "With --sandbox-pods: the MCP package cache runner: mcp pods mount (the cores' UHLP_MCP_PACKAGE_VOLUME); none: no warm pods for them",
  },
  'core-selector': { type: 'string', value: 'k=v,...', help: "With --sandbox-pods: the labels of the cores' pods, which the pools' NetworkPolicy lets in" },
  'core-port': { type: 'string', value: 'N', help: "With --sandbox-pods: the cores' port the sandbox pods may reach" },
  uninstall: { type: 'boolean', help: "Stop the operators of the Lease and delete what they made, then exit (the chart's pre-delete hook)" },
} as const;

export const OPERATOR_COMMAND: CommandSpec<typeof FLAGS> = {
  name: 'operator',
  summary: 'The Kubernetes operator, leader-elected, against $KUBECONFIG, ~/.kube/config or the in-cluster service account',
  flags: FLAGS,
  examples: ['uhlp operator --namespace shop --metrics-port 9090', 'uhlp operator --namespace shop --sandbox-pods --core-selector app.kubernetes.io/name=uhlp-core'],
  notes: ['SIGINT/SIGTERM release the Lease, so another operator takes over at once (docs/kubernetes.md).'],
};

export async function operatorCommand(argv: string[]): Promise<number> {
  const line = parseCommandLine(OPERATOR_COMMAND, argv);
  if (line.help !== undefined) return printHelp(line.help);
  const { values } = line;
  const env = loadOperatorEnv();
  // The Kubernetes client and the operator load once the command line is read: --help answers at once.
  const [{ defaultKubeConfig }, { createLogger }, { createMetrics }, { uninstallRelease }, { runOperator }] = await Promise.all([
    import('../k8s/default-kube-config.js'),
    import('../logger.js'),
    import('../metrics.js'),
    import('../operator/release-uninstall.js'),
    import('../operator/run-operator.js'),
  ]);
  const logger = createLogger(env.debug ? 'debug' : 'info');
  const metrics = createMetrics({ operator: true });
  const metricsPort = values['metrics-port'];
  if (metricsPort !== undefined && !/^\d{1,5}$/.test(metricsPort)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--metrics-port must be a port number, got "${metricsPort}"`, { name: '--metrics-port' });
  }
  const leaseNamespace = values['lease-namespace'];
  // The Helm chart keeps the Lease in the release namespace, apart from the namespaces it serves.
  if (leaseNamespace !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(leaseNamespace)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--lease-namespace must be a namespace name, got "${leaseNamespace}"`, { name: '--lease-namespace' });
  }
  if (values.uninstall) {
    const namespaces = values.namespace ?? [];
    await uninstallRelease({
      kubeConfig: defaultKubeConfig(),
      namespaces,
      leaseNamespace: leaseNamespace ?? namespaces[0] ?? 'default',
      sandboxPods: values['sandbox-pods'] === true,
      log: (message, fields) => logger.info(fields ?? {}, message),
    });
    return EXIT_OK;
  }
  const operator = await runOperator({
    namespaces: values.namespace ?? [],
    ...(leaseNamespace !== undefined ? { leaseNamespace } : {}),
    ...(values['sandbox-pods'] ? { sandboxPods: sandboxPodsOptions(values, env.images) } : {}),
    metrics,
    logger: { info: (message, fields) => logger.info(fields ?? {}, message), error: (message, fields) => logger.error(fields ?? {}, message) },
  });
  const server = metricsPort === undefined ? undefined : http.createServer((req, res) => {
    if (req.url === '/metrics') {
      void metrics.registry.metrics().then((body) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body));
    } else if (req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'ok', leader: operator.isLeader() }));
    } else if (req.url === '/readyz') {
      // Ready once the operator has reached the API server with its rights (it read or wrote its
      // Lease): a rollout whose operators cannot (a NetworkPolicy, RBAC) stops at the first pod.
      const ready = operator.reachedApiServer();
      res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ready ? 'ready' : 'not-ready', leader: operator.isLeader() }));
    } else {
      res.writeHead(404).end();
    }
  });
  server?.listen(Number(metricsPort));
  logger.info({ identity: operator.identity, namespaces: values.namespace ?? 'all' }, 'operator running');

  return new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      logger.info({ signal }, 'operator stopping');
      server?.close();
      operator.stop().then(
        () => resolve(EXIT_OK),
        () => resolve(EXIT_FAILURE),
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/**
 * The warm-pod settings of `--sandbox-pods`: runner images (they must be the cores'
 * images too, or cores never claim the pods; UHLP_IMAGE_JIT / UHLP_IMAGE_LLM as for
 * the core) and where the core's pods are, for the pools' NetworkPolicy.
 */
function sandboxPodsOptions(
  values: { 'jit-image'?: string; 'llm-image'?: string; 'mcp-image'?: string; 'mcp-package-volume'?: string; 'core-selector'?: string; 'core-port'?: string },
  images: OperatorEnv['images'],
): SandboxPodsOptions {
  const jit = values['jit-image'] ?? images.jit;
  const llm = values['llm-image'] ?? images.llm;
  const mcp = values['mcp-image'] ?? images.mcp;
  // runner: mcp pods mount the package cache the cores install into: the cores' UHLP_MCP_PACKAGE_VOLUME.
  const volume = values['mcp-package-volume'];
  const packageCache = volume === undefined ? undefined : parsePackageVolume(volume);
  if (volume !== undefined && packageCache === undefined) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `--mcp-package-volume must be pvc:<claim name> or hostPath:<absolute directory>, got "${volume}"`, { name: '--mcp-package-volume' });
  }
  const core: { selector?: Record<string, string>; port?: number } = {};
  const selector = values['core-selector'];
  if (selector !== undefined) {
    const pairs = selector.split(',').map((pair) => pair.trim().split('='));
    if (pairs.some((pair) => pair.length !== 2 || !pair[0] || !pair[1])) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `--core-selector must be comma-separated key=value pairs, got "${selector}"`, { name: '--core-selector' });
    }
    core.selector = Object.fromEntries(pairs);
  }
  const port = values['core-port'];
  if (port !== undefined) {
    if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `--core-port must be a port number, got "${port}"`, { name: '--core-port' });
    }
    core.port = Number(port);
  }
  return { images: { ...(jit ? { jit } : {}), ...(llm ? { llm } : {}), ...(mcp ? { mcp } : {}) }, core, ...(packageCache ? { packageCache } : {}) };
}
