/**
 * The values of the Helm chart (charts/uhlp), as one TypeBox schema: the single
 * source of both `values.schema.json` (every object closed with
 * `additionalProperties: false`, so a misspelt key fails `helm install`) and the
 * commented `values.yaml` (each key's description and default). `npm run generate`
 * writes both; CI regenerates and fails on a diff, as for the CRDs.
 *
 * Every key has a `default`; the defaults ARE the chart's values.yaml.
 */
import { Type, type TSchema, type TObject, type TProperties } from '@sinclair/typebox';
import { TRACE_SAMPLERS } from '../tracing/tracing-config.js';

/** A closed object: a key the schema does not name is an error. */
function section<P extends TProperties>(description: string, properties: P): TObject<P> {
  return Type.Object(properties, { description, additionalProperties: false });
}

function str(description: string, value: string, extra: Record<string, unknown> = {}): TSchema {
  return Type.String({ description, default: value, ...extra });
}

function bool(description: string, value: boolean): TSchema {
  return Type.Boolean({ description, default: value });
}

function int(description: string, value: number, minimum: number, maximum?: number): TSchema {
  return Type.Integer({ description, default: value, minimum, ...(maximum !== undefined ? { maximum } : {}) });
}

function oneOf(description: string, values: readonly string[], value: string): TSchema {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    { description, default: value },
  );
}

/** A string map (labels, annotations, node selectors); any keys, string values. */
function stringMap(description: string): TSchema {
  return Type.Record(Type.String(), Type.String(), { description, default: {} });
}

/** A Kubernetes object passed through as it is (resources, affinity, ...): the API server validates it. */
function passThrough(description: string, value: Record<string, unknown> = {}): TSchema {
  return Type.Object({}, { description, default: value, additionalProperties: true });
}

function passThroughList(description: string): TSchema {
  return Type.Array(Type.Object({}, { additionalProperties: true }), { description, default: [] });
}

const NAME = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const DURATION = '^[0-9]+(ms|s|m|h)$';

const TAG_DESCRIPTION =
  'Image tag; empty: the chart\'s appVersion, which `uhlp images build` tags every build with. A rebuild under the same version does not roll the pods (their reference is unchanged): give the hashed tag `uhlp images build` prints, and every rebuild rolls them.';

const image = (what: string, repository: string): TObject =>
  section(`The ${what} image. Built locally with \`uhlp images build\` and loaded into the nodes (\`uhlp images save\`); there is no registry.`, {
    repository: str('Image repository.', repository, { minLength: 1 }),
    tag: str(TAG_DESCRIPTION, '', { pattern: '^$|^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$' }),
    pullPolicy: oneOf('`Never` for images loaded into the node by hand; `IfNotPresent` once they are in a registry.', ['Always', 'IfNotPresent', 'Never'], 'IfNotPresent'),
  });

/**
 * Requests and limits of a container. Ephemeral storage is bounded too: logs and, for the
 * core, the emptyDir volumes count against it, and a pod past its limit is evicted
 * instead of filling the node's disk. No CPU limit: it throttles a latency-bound server
 * under bursts while the request already reserves its share (charts/README.md, waivers).
 */
const resources = (requests: Record<string, string>, limits: Record<string, string>): TSchema =>
  passThrough('Container resources (requests and limits).', { requests, limits });

const scheduling = {
  nodeSelector: stringMap('Node labels the pods must match.'),
  tolerations: passThroughList('Pod tolerations.'),
  affinity: passThrough('Pod affinity rules; empty: replicas prefer different nodes.'),
  podAnnotations: stringMap('Extra annotations of the pods.'),
  podLabels: stringMap('Extra labels of the pods.'),
};

const serviceAccount = (who: string): TObject =>
  section(`The ServiceAccount the ${who} runs as; its RBAC is made by the chart.`, {
    create: bool('Create the ServiceAccount.', true),
    name: str('Its name; empty gives `<fullname>-' + who + '`.', '', { pattern: `^$|${NAME}` }),
    annotations: stringMap('Annotations of the ServiceAccount (e.g. a cloud IAM role).'),
  });

const secretRef = (what: string, key: string): TObject =>
  section(`A key of an existing Secret holding ${what}; the chart never holds the value itself.`, {
    existingSecret: str('Name of the Secret in the release namespace; empty: none.', '', { pattern: `^$|${NAME}` }),
    secretKey: str('Key within the Secret.', key, { minLength: 1 }),
  });

const monitor = (kind: string): TObject =>
  section(`A prometheus-operator ${kind} for the core and the operator (needs the monitoring.coreos.com CRDs).`, {
    enabled: bool(`Create the ${kind}s.`, false),
    interval: str('Scrape interval.', '30s', { pattern: DURATION }),
    scrapeTimeout: str('Scrape timeout; below the interval.', '10s', { pattern: DURATION }),
    labels: stringMap('Extra labels, e.g. the `release` label your Prometheus selects monitors by.'),
  });

export const ChartValues = section('Values of the uhlp Helm chart.', {
  nameOverride: str('Replaces the chart name in object names.', '', { pattern: `^$|${NAME}` }),
  fullnameOverride: str('Replaces `<release>-<chart>` in object names.', '', { pattern: `^$|${NAME}` }),
  imagePullSecrets: passThroughList('Pull secrets of every pod, e.g. `[{name: regcred}]`.'),
  crds: section('The AppDefinition and SandboxPool CRDs, generated from the same schema as the core (`npm run generate`).', {
    enabled: bool(
      'Install and upgrade the CRDs with the chart, unless they exist and another release owns them (or kept them when it was uninstalled): those are left as they are, and this release installs beside them.',
      true,
    ),
    keep: bool('Keep the CRDs (and so every AppDefinition) on `helm uninstall`.', true),
    adopt: bool('Take over CRDs another release owns or kept, so that this release upgrades them; give `--take-ownership` to helm too.', false),
  }),
  rbac: section('Least-privilege RBAC for the operator and the core.', {
    clusterWide: bool(
      'Serve AppDefinitions of every namespace: ClusterRoles instead of Roles in `watchNamespaces`. The leader Lease stays in the release namespace.',
      false,
    ),
  }),
  watchNamespaces: Type.Array(Type.String({ pattern: NAME, maxLength: 63 }), {
    description: 'Namespaces whose AppDefinitions are served (ignored with `rbac.clusterWide`); empty: the release namespace.',
    default: [],
    uniqueItems: true,
  }),
  image: image('core and operator (one image, the `uhlp` entrypoint)', 'uhlp/uhlp'),
  operator: section('The operator: reconciles AppDefinitions into SandboxPools, under a leader Lease.', {
    replicaCount: int('Replicas; one leads, the others wait on the Lease.', 2, 1, 10),
    logLevel: oneOf('Log level.', ['info', 'debug'], 'info'),
    metricsPort: int('Port of /metrics, /healthz (liveness) and /readyz (readiness: it reached the API server).', 9090, 1024, 65535),
    podDisruptionBudget: section('Keeps an operator running through voluntary disruptions.', {
      enabled: bool('Create a PodDisruptionBudget.', true),
      minAvailable: int('Operators that must stay available.', 1, 0),
    }),
    serviceAccount: serviceAccount('operator'),
    uninstallHook: section(
      'Before `helm uninstall` deletes the release, a Job (`uhlp operator --uninstall`, as the operator\'s ServiceAccount) stops the operators through their Lease and deletes every SandboxPool and sandbox pod of the served namespaces, so that nothing runs on unmanaged. AppDefinitions stay; a release installed later serves them again.',
      {
        enabled: bool('Run it; off, pools and sandbox pods stay until their AppDefinitions are deleted.', true),
      },
    ),
    resources: resources({ cpu: '100m', memory: '128Mi', 'ephemeral-storage': '64Mi' }, { memory: '512Mi', 'ephemeral-storage': '256Mi' }),
    ...scheduling,
  }),
  core: section('The core: serves the apps of Ready AppDefinitions over HTTP.', {
    replicaCount: int('Replicas.', 1, 1, 100),
    logLevel: oneOf('Log level.', ['fatal', 'error', 'warn', 'info', 'debug', 'trace'], 'info'),
    port: int('Container port of app traffic, /healthz, /readyz and /metrics.', 8080, 1024, 65535),
    operator: section(
      'The operator listener (docs/security.md, "Listeners and audiences"): the console, /_uhlp/oracle and the queues\' operator actions, on an origin apps never answer on. On loopback by default: reach it with `kubectl port-forward` to `port`.',
      {
        host: str('Interface it listens on (`UHLP_OPERATOR_HOST`); `0.0.0.0` also adds the Service port `operator`, for an Ingress of its own.', '127.0.0.1', { minLength: 1 }),
        port: int('Its container port (`UHLP_OPERATOR_PORT`).', 8082, 1024, 65535),
        hosts: Type.Array(Type.String({ pattern: '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$' }), {
          description: 'Host names besides loopback ones and `localhost` that operator routes answer under (`UHLP_OPERATOR_HOSTS`), e.g. the host of an Ingress in front of the operator port; any other Host is refused (UHLP_HOST_NOT_ALLOWED).',
          default: [],
        }),
      },
    ),
    bodyLimitBytes: int('Largest request body accepted.', 1048576, 1, 1073741824),
    sandboxes: section('How the core runs sandboxes.', {
      driver: oneOf(
        'Sandbox driver. `pod`: a pod per sandbox, claimed from the warm pods the operator keeps for each SandboxPool (the operator runs with `--sandbox-pods`): the kernel and the cluster contain each one, and warm capacity follows `kubectl scale sandboxpool` or an HPA. `process`: child processes of the core, in its pod (see unsafeProcessSandboxes).',
        ['process', 'pod'],
        'pod',
      ),
      unsafeProcessSandboxes: bool(
        'Run process sandboxes without namespaces (bubblewrap cannot run in a pod): the pod is their only boundary. The core refuses to start with `process` unless this is true.',
        false,
      ),
      runnerImages: section('Runner images of sandbox pods (driver `pod`), loaded into the nodes like the others; pods never pull them (`imagePullPolicy: Never`). The core and the operator get the same references; a changed one replaces the warm pods.', {
        jit: str('The jit-runner image; empty: `uhlp/jit-runner:<appVersion>`.', ''),
        llm: str('The llm-orchestrator image; empty: `uhlp/llm-orchestrator:<appVersion>`.', ''),
        mcp: str('The mcp-host image of `runner: mcp` pools; empty: `uhlp/mcp-host:<appVersion>`.', ''),
      }),
      claimAhead: int(
        'Warm pods each core claims ahead per pool (driver `pod`), so a request that needs a new pod takes one already claimed and the claim\'s API-server write is off its path; at most the pool\'s minWarm and its SandboxPool\'s replicas. 0: claims only on demand.',
        2,
        0,
        16,
      ),
    }),
    ledger: section('The hash-chained turn ledger, under the data volume.', {
      mode: oneOf('`files` or `off`.', ['files', 'off'], 'files'),
      key: secretRef('the ledger HMAC key (at least 32 bytes; `openssl rand -hex 32`)', 'ledger-key'),
      durability: oneOf('When an answer leaves: `async` (the ledger follows), `sync` (its entries are written first), `fsync` (and flushed to disk).', ['async', 'sync', 'fsync'], 'async'),
    }),
    sources: section('Queues, cron, callbacks and triggers (docs/sources.md).', {
      key: secretRef(
        'the key that signs callback URLs and queue tokens (at least 32 bytes; `openssl rand -hex 32`). Every core of a release needs the same one: without it each core makes its own, and a URL or token one core gave is refused by the others',
        'sources-key',
      ),
      publicUrl: str('Base URL callback URLs are given under, e.g. `https://apps.example.com`; empty: the core\'s own URL.', '', { pattern: '^$|^https?://\\S+$' }),
    }),
    tracing: section('OpenTelemetry traces of every turn, exported over OTLP/HTTP (docs/observability.md); off while `endpoint` is empty.', {
      endpoint: str('OTLP/HTTP base URL (`OTEL_EXPORTER_OTLP_ENDPOINT`; traces go to `<endpoint>/v1/traces`), e.g. `http://otel-collector.observability:4318`; empty: no tracing.', '', { pattern: '^$|^https?://\\S+$' }),
      serviceName: str('`service.name` of the spans (`OTEL_SERVICE_NAME`).', 'uhlp-core', { minLength: 1 }),
      sampler: oneOf('`OTEL_TRACES_SAMPLER`: the parent-based ones follow a caller\'s sampled flag.', TRACE_SAMPLERS, 'parentbased_always_on'),
      samplerArg: str('Ratio of the `*traceidratio` samplers, 0 to 1 (`OTEL_TRACES_SAMPLER_ARG`).', '1', { pattern: '^(0(\\.[0-9]+)?|1(\\.0+)?)$' }),
      resourceAttributes: stringMap('More resource attributes (`OTEL_RESOURCE_ATTRIBUTES`), e.g. `{deployment.environment: prod}`.'),
      capturePrompts: bool('Model call spans carry the prompt and the answer (`UHLP_TRACE_CAPTURE_PROMPTS`): the app users\' data, in the tracing backend.', false),
    }),
    llm: section('The OpenAI-compatible server behind `core.llm.generate`; without `baseUrl` every LLM call fails (never a surprise bill).', {
      baseUrl: str('Base URL, e.g. `https://api.openai.com/v1`.', '', { pattern: '^$|^https?://\\S+$' }),
      model: str('Model used when a call names none.', ''),
      models: stringMap('Server model name of each model an app names, e.g. `{small: gpt-4o-mini}`.'),
      apiKey: secretRef('the bearer key of `baseUrl`', 'api-key'),
      stream: bool('Ask for streamed answers.', false),
      structuredOutput: oneOf('How response schemas reach the server.', ['json_schema', 'json_object', 'none'], 'json_schema'),
      timeoutMs: int('Time one attempt may take, ms.', 60000, 100, 600000),
      maxRetries: int('Retries of a 429, a 5xx or a connection error.', 3, 0, 10),
    }),
    git: section('How the Git sources of AppDefinitions are fetched.', {
      allowPrivate: Type.Array(Type.String({ minLength: 3 }), {
        description: '`host:port` pairs that may resolve to private addresses (an in-cluster Git server).',
        default: [],
      }),
      caBundle: section('A ConfigMap key holding the PEM CAs https sources are checked against, instead of the image\'s.', {
        configMap: str('ConfigMap name in the release namespace; empty: the image\'s CA bundle.', '', { pattern: `^$|${NAME}` }),
        key: str('Key within the ConfigMap.', 'ca.crt', { minLength: 1 }),
      }),
    }),
    mcp: section('MCP federation: servers whose tools apps may be granted through the core (docs/mcp.md).', {
      community: passThroughList(
        'Community MCP servers every app may be granted as community.<name>.<tool>: entries of the community file (name; stdio.package or http.url; timeoutMs, maxOutputBytes, pool). Empty: none.',
      ),
      allowPrivate: Type.Array(Type.String({ minLength: 3 }), {
        description: '`host:port` pairs remote MCP servers may resolve to although private (an in-cluster server).',
        default: [],
      }),
      secrets: str(
        'A Secret of the release namespace whose key `secrets.yaml` holds the values behind remote servers\' secretRefs, each under its owner: `{apps: {<appId>: {<secret>: {<key>: value}}}, community: {<secret>: {<key>: value}}}`; an app reaches only its own. Empty: none.',
        '',
        { pattern: `^$|${NAME}` },
      ),
      packageCache: section(
        'The cache of stdio servers\' npm packages (driver `pod`): the core installs into it (read-write, at /var/lib/uhlp-mcp-packages) and each `runner: mcp` pod mounts its package from it read-only (a subPath). Set one of the two; neither: runner: mcp pools are refused on pods and keep no warm pods.',
        {
          claimName: str('A PersistentVolumeClaim of the release namespace, ReadWriteMany in a cluster of several nodes (the cores write, sandbox pods on any node read). Empty: none.', '', { pattern: `^$|${NAME}` }),
          hostPath: str('A directory of the node instead (a one-node cluster: the core and the sandbox pods share its disk). Empty: none.', '', { pattern: '^$|^/\\S*$' }),
        },
      ),
    }),
    dataVolume: section('The core\'s data directory (revisions, ledgers): an emptyDir.', {
      sizeLimit: str('emptyDir size limit.', '2Gi', { pattern: '^[0-9]+(Ki|Mi|Gi|Ti)?$' }),
    }),
    extraEnv: passThroughList('Extra environment variables of the core container (`UHLP_*` settings the chart does not name).'),
    service: section('The Service in front of the core.', {
      type: oneOf('Service type.', ['ClusterIP', 'NodePort', 'LoadBalancer'], 'ClusterIP'),
      port: int('Service port.', 80, 1, 65535),
      annotations: stringMap('Service annotations.'),
    }),
    ingress: section('An Ingress to the core Service.', {
      enabled: bool('Create the Ingress.', false),
      className: str('IngressClass name; empty: the cluster default.', ''),
      annotations: stringMap('Ingress annotations.'),
      hosts: Type.Array(
        Type.Object(
          {
            host: Type.String({ minLength: 1, description: 'Host name.' }),
            paths: Type.Array(
              Type.Object(
                {
                  path: Type.String({ pattern: '^/', description: 'Path.' }),
                  pathType: Type.Union([Type.Literal('Prefix'), Type.Literal('Exact'), Type.Literal('ImplementationSpecific')], { description: 'Path type.' }),
                },
                { additionalProperties: false },
              ),
              { minItems: 1 },
            ),
          },
          { additionalProperties: false },
        ),
        { description: 'Hosts and paths routed to the core, e.g. `[{host: apps.example.com, paths: [{path: /, pathType: Prefix}]}]`; none: the Ingress sends every host and path to the core.', default: [] },
      ),
      tls: passThroughList('Ingress TLS entries, e.g. `[{hosts: [apps.example.com], secretName: apps-tls}]`.'),
    }),
    console: section('The web console at /_uhlp/console/ (docs/console.md), served on the operator listener (`core.operator`), never on the apps\' port.', {
      enabled: bool('Serve the console.', true),
      auth: section(
        'Who may use it beyond loopback (a port-forward is loopback): a key of an existing Secret holding a tokens file, one `<name> <role> <token>` a line, role `read` or `operator`. Empty: loopback only.',
        {
          existingSecret: str('Name of the Secret in the release namespace; empty: none.', '', { pattern: `^$|${NAME}` }),
          secretKey: str('Key within the Secret.', 'tokens', { minLength: 1 }),
        },
      ),
      sandbox: section("The origin app views are served from (MCP Apps' sandbox proxy): a port of its own on the core, a Service port, and behind an Ingress a host of its own.", {
        port: int('Container and Service port of the views\' origin.', 8081, 1, 65535),
        url: str('The views\' origin as browsers reach it, e.g. `https://views.example.com`; empty: the console\'s host name on `port`.', '', { pattern: '^$|^https?://[^\\s/?#]+$' }),
        ingressHost: str('With the Ingress on: a host name routed to the views\' origin (set `url` to match); empty: none.', ''),
      }),
      journalSize: int('Finished turns the requests page can show: each core keeps the last this many of each app, in memory and in its Redis list of the app; 0: none.', 1000, 0, 100000),
      traceUrlTemplate: str('A turn\'s trace link, `{traceId}` standing for its id, e.g. `http://jaeger:16686/trace/{traceId}`; empty: no link.', '', { pattern: '^$|^https?://\\S*\\{traceId\\}\\S*$' }),
    }),
    podDisruptionBudget: section('A PodDisruptionBudget for the core.', {
      enabled: bool('Create it.', false),
      minAvailable: int('Cores that must stay available.', 1, 0),
    }),
    serviceAccount: serviceAccount('core'),
    // The ephemeral-storage limit covers the data and tmp volumes (emptyDirs count against it) and the logs.
    resources: resources({ cpu: '100m', memory: '128Mi', 'ephemeral-storage': '256Mi' }, { memory: '512Mi', 'ephemeral-storage': '3Gi' }),
    ...scheduling,
  }),
  networkPolicy: section('NetworkPolicies of the core, the operator and its uninstall hook (bundled Redis has its own); they take effect where the CNI enforces them.', {
    enabled: bool('Create them.', true),
    apiServerPorts: Type.Array(Type.Integer({ minimum: 1, maximum: 65535 }), {
      description:
        'Ports the API server answers on behind the `kubernetes` Service, as policies see it after its translation (443 on most managed clusters, 6443 on kubeadm\'s): the operator\'s only egress.',
      default: [443, 6443],
      minItems: 1,
    }),
    coreFrom: passThroughList(
      'Who may reach the core\'s port (app traffic, scrapes), as NetworkPolicyPeers, e.g. `[{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: ingress-nginx}}}]`; none: everyone. Sandbox pods, which call the core back, are always let in.',
    ),
    coreEgress: Type.Array(Type.Object({}, { additionalProperties: true }), {
      description:
        'Egress rules of the core: open by default, since apps name Git remotes and LLM endpoints anywhere, beside Redis, DNS, the API server and sandbox pods. Narrow it to what your apps reach.',
      default: [{}],
    }),
    metricsFrom: passThroughList('Who may scrape the operator\'s /metrics, as NetworkPolicyPeers; none: everyone.'),
  }),
  redis: section('Runtime state (sessions, kv, idempotency, rate limits, budgets). Neither set: in memory, per core.', {
    external: section('An external Redis: `url`, `sentinel` (docs/runtime-state.md#sentinel) or `cluster` (docs/runtime-state.md#cluster).', {
      url: secretRef('the `redis://`, `rediss://`, `redis+sentinel://`, `rediss+sentinel://` or `redis+cluster://` URL (it may carry a password)', 'url'),
      sentinel: section('A master that Redis Sentinel watches, the URL made from these values (`url` unset).', {
        masterName: str('The name the sentinels monitor the master under; empty: not Sentinel.', '', { pattern: '^$|^[A-Za-z0-9._-]{1,128}$' }),
        sentinels: Type.Array(Type.String({ pattern: '^([A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$' }), {
          description: 'The sentinels, `host:port` each (26379 when left out), e.g. `[redis-sentinel-0.redis:26379, redis-sentinel-1.redis:26379]`.',
          default: [],
        }),
        db: int('The database number.', 0, 0, 65535),
        auth: secretRef('the password of the master and replicas, URL-safe or percent-encoded', 'password'),
        sentinelAuth: secretRef("the sentinels' own password, URL-safe or percent-encoded", 'password'),
        tls: bool('TLS to the sentinels and to the master and replicas they name (`rediss+sentinel://`).', false),
        servername: str("The name checked on the sentinels' and the master's certificates, when not the host dialled; empty: the host.", '', { pattern: '^$|^[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?$' }),
        ca: secretRef("the PEM certificates of the CAs the sentinels' and the master's certificates are checked against, instead of the image's trust store (with `tls`)", 'ca.crt'),
      }),
      cluster: section('A Redis Cluster, the `redis+cluster://` URL made from these values (`url` unset; docs/runtime-state.md#cluster).', {
        nodes: Type.Array(Type.String({ pattern: '^([A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+\\])(:[0-9]{1,5})?$' }), {
          description: 'Seed nodes, `host:port` each (6379 when left out); the core learns the others from them, e.g. `[redis-cluster-0.redis:6379, redis-cluster-1.redis:6379]`. Empty: not Cluster.',
          default: [],
        }),
        auth: secretRef('the password of every node, URL-safe or percent-encoded', 'password'),
        tls: bool('TLS to every node (`rediss+cluster://`; the CA from `ca`, else the container\'s trust store).', false),
        servername: str("The name checked on the nodes' certificates, when not the host dialled; empty: the host.", '', { pattern: '^$|^[A-Za-z0-9]([-A-Za-z0-9.]{0,251}[A-Za-z0-9])?$' }),
        ca: secretRef("the PEM certificates of the CAs the nodes' certificates are checked against, instead of the image's trust store (with `tls`)", 'ca.crt'),
      }),
    }),
    replicaAcks: int('Replicas a queue publish or ack, a once-only claim or answer, a cron fire or a lease waits for (`WAIT`; `UHLP_STATE_REPLICA_ACKS`): 1 keeps them through a crashed master, the number of replicas through a planned failover; 0: none.', 0, 0, 16),
    replicaAckTimeoutMs: int('How long such a write waits for them before it fails with 503 (`UHLP_STATE_REPLICA_ACK_TIMEOUT_MS`).', 1000, 10, 60000),
    bundled: section('A Redis from the chart (`uhlp/redis`, built like the other images from Debian\'s redis-server).', {
      enabled: bool('Run it; the core uses it.', false),
      image: image('Redis', 'uhlp/redis'),
      auth: secretRef('the Redis password (`requirepass`)', 'password'),
      persistence: section('Where Redis keeps its append-only file.', {
        enabled: bool('A PersistentVolumeClaim; otherwise an emptyDir (state lost with the pod).', false),
        size: str('Claim size.', '1Gi', { pattern: '^[0-9]+(Ki|Mi|Gi|Ti)?$' }),
        storageClass: str('StorageClass; empty: the cluster default.', ''),
      }),
      resources: resources({ cpu: '50m', memory: '64Mi', 'ephemeral-storage': '64Mi' }, { memory: '256Mi', 'ephemeral-storage': '2Gi' }),
      sentinel: section(
        'Replicas and Redis Sentinel for the bundled Redis: a master, `replicas` replicas and three sentinels, each its own pod; the core follows the master the sentinels name (`redis+sentinel://`, docs/runtime-state.md#sentinel). Set `redis.replicaAcks` to 1 so that a write the core acknowledged is on a replica before a crashed master loses it.',
        {
          enabled: bool('Run the replicas and the sentinels.', false),
          replicas: int('Replicas beside the master (each a data pod).', 2, 1, 8),
          masterName: str('The name the sentinels monitor the master under.', 'uhlp', { pattern: '^[A-Za-z0-9._-]{1,128}$' }),
          downAfterMs: int('A master that has not answered for this long is down for a sentinel (`down-after-milliseconds`): the failover starts after it.', 5000, 100, 600000),
          failoverTimeoutMs: int('`failover-timeout`: a failover that has not finished in this long is tried again, by another sentinel.', 60000, 1000, 3600000),
          resources: resources({ cpu: '20m', memory: '32Mi', 'ephemeral-storage': '16Mi' }, { memory: '64Mi', 'ephemeral-storage': '64Mi' }),
        },
      ),
      tls: section(
        "TLS only for the bundled Sentinel (with `sentinel.enabled`): the data pods and the sentinels listen with TLS alone (`port 0`, `tls-port`), replicas and sentinels reach the master with TLS (`tls-replication yes`), and the core connects with `rediss+sentinel://…?caFile=`. The certificate must name every pod: `*.<release>-uhlp-redis-headless.<namespace>.svc` and `*.<release>-uhlp-redis-sentinel-headless.<namespace>.svc` (docs/runtime-state.md#sentinel). Clients show no certificate of their own: the password (`auth`) is what admits them.",
        {
          enabled: bool('Listen and connect with TLS only.', false),
          existingSecret: str('The Secret in the release namespace holding the certificate, its key and the CA (a `kubernetes.io/tls` Secret with `ca.crt`, as cert-manager writes one).', '', { pattern: `^$|${NAME}` }),
          certKey: str('Key of the PEM certificate (chain) within the Secret.', 'tls.crt', { minLength: 1 }),
          keyKey: str('Key of the PEM private key within the Secret.', 'tls.key', { minLength: 1 }),
          caKey: str('Key of the PEM CA certificates within the Secret: what the pods and the core check each certificate against.', 'ca.crt', { minLength: 1 }),
        },
      ),
    }),
  }),
  metrics: section('Prometheus integration (the metrics are always served; see docs).', {
    serviceMonitor: monitor('ServiceMonitor'),
    podMonitor: monitor('PodMonitor'),
    prometheusRule: section('A PrometheusRule with the alerts of charts/uhlp/files/alert-rules.yaml.', {
      enabled: bool('Create it.', false),
      labels: stringMap('Extra labels, e.g. the `release` label your Prometheus selects rules by.'),
    }),
  }),
  dashboards: section('The Grafana dashboard (charts/uhlp/dashboards/uhlp.json) as a ConfigMap for Grafana\'s dashboard sidecar.', {
    enabled: bool('Create the ConfigMap.', false),
    label: str('Label the sidecar looks for.', 'grafana_dashboard', { minLength: 1 }),
    labelValue: str('Its value.', '1'),
    namespace: str('Namespace of the ConfigMap (where the sidecar looks); empty: the release namespace.', '', { pattern: `^$|${NAME}` }),
    annotations: stringMap('Annotations, e.g. `grafana_folder: uhlp`.'),
  }),
});
