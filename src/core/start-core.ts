/**
 * Wires the core from its configuration (embedded defaults: process driver,
 * definitions from a local Git repository), loads the apps, warms the pools and
 * listens. `close()` stops taking requests, lets in-flight ones finish, then
 * destroys every sandbox.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { CoreConfig } from '../config.js';
import { openDefinitionsRepo } from '../apps/git/definitions-repo.js';
import { REVISIONS_DIR } from '../apps/revision-paths.js';
import { createLlmProvider } from '../llm/create-llm-provider.js';
import { createAppLlmProviders } from '../llm/app-llm-providers.js';
import { createLogger, type Logger } from '../logger.js';
import { createCoreMcpServer, type CoreMcpServer } from '../mcp/core-mcp-server.js';
import { McpFederation } from '../mcp/federation/mcp-federation.js';
import { PackageCache } from '../mcp/federation/package-cache.js';
import { watchSecretFile } from '../secrets/watched-secret-file.js';
import { SecretScrubber } from '../secrets/secret-scrubber.js';
import type { SecretStore } from '../secrets/secret-store.js';
import { NamespaceSecrets } from '../apps/kubernetes/namespace-secrets.js';
import { checkCommunitySecrets, loadCommunityServers } from '../mcp/federation/community-servers.js';
import { mcpBodyLimitBytes } from '../mcp/mcp-limits.js';
import { spawnStdBodyChild, waitForStdBody, type StdBodyChild } from '../mcp/std-body-child.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { redisMetricsObserver } from './redis-metrics.js';
import { ApplicationRegistry } from '../apps/application-registry.js';
import { createSandboxDriver, poolStrategyFor } from '../sandbox/create-driver.js';
import { SandboxManager } from '../sandbox/sandbox-manager.js';
import { newSpineSecret, spineSecretPath } from '../spine/spine-secret.js';
import { createSpineServer, type SpineServer } from '../spine/spine-server.js';
import { defaultKubeConfig } from '../k8s/default-kube-config.js';
import { loopbackUrl } from '../net/loopback-url.js';
import { listenError } from './listen-error.js';
import { UhlpError } from '../shared/errors.js';
import { HeadWatcher } from '../apps/git/head-watcher.js';
import { GitDefinitionStore } from '../apps/git/definition-store.js';
import { withDeadline } from '../shared/deadline.js';
import { KubernetesAppSource } from '../apps/kubernetes/kubernetes-app-source.js';
import { IngressServer } from '../sources/http/ingress-server.js';
import { McpSocketServer } from '../mcp/mcp-socket-server.js';
import { TurnKeeper } from '../turns/turn-keeper.js';
import { TurnLedgerThread } from '../ledger/turn-ledger-thread.js';
import { retentionPolicy } from '../ledger/app-retention.js';
import { scheduleRetention, type RetentionSchedule } from '../ledger/retention-schedule.js';
import { createRuntimeStore } from '../state/create-runtime-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { GitPromotions } from '../oracle/git-promotion.js';
import { OptimizationOracle } from '../oracle/optimization-oracle.js';
import { buildCore } from './build-core.js';
import { createDeliveryStore } from '../state/create-delivery-store.js';
import { RedisRuntimeStore } from '../state/redis-runtime-store.js';
import { guaranteeFindings } from '../state/redis-guarantees.js';
import { isRedisUrl, parseRedisUrl } from '../state/redis-url.js';
import { DEFAULT_TURN_JOURNAL_TTL_MS } from '../state/redis-turn-journal-store.js';
import { TurnJournal } from '../turns/turn-journal.js';
import type { DeliveryStore } from '../state/delivery-store.js';
import { DeliverySources } from '../sources/delivery-sources.js';
import { loadSourcesKey } from '../sources/signed-token.js';
import { codeqOnQueues } from '../functions/codeq-on-queues.js';
import { RefCachingFunctionStore } from '../functions/ref-caching-function-store.js';
import { localEmbedder, openAiEmbedder } from '../llm/embedder.js';
import { RunService } from '../workflow-runs/run-service.js';
import { WorkflowCatalog } from '../workflow-runs/workflow-catalog.js';
import { WorkflowRuns } from '../workflow-runs/workflow-runs.js';
import { createRunIndex } from '../workflow-runs/create-run-index.js';
import { loadConsoleAssets } from '../console/console-assets.js';
import { SandboxOrigin } from '../console/sandbox-origin.js';
import { OperatorServer } from './operator-server.js';
import type { AudienceRoute, RouteAudiences } from './route-audience.js';
import { PACKAGE_VERSION } from '../images/build-images.js';
import { startTracing } from '../tracing/start-tracing.js';

export interface RunningCore {
  readonly app: FastifyInstance;
  /** Base URL clients use, e.g. http://127.0.0.1:8080 */
  readonly url: string;
  /** Base URL of the operator listener (the console, /_uhlp/oracle, /_uhlp/dev, the queues' operator actions), e.g. http://127.0.0.1:8081 */
  readonly operatorUrl: string;
  readonly registry: ApplicationRegistry;
  readonly sandboxes: SandboxManager;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** The endpoint spine endpoint hosts (std-body, chat clients) register on. */
  readonly spine: SpineServer;
  readonly store: RuntimeStore;
  /** Queues, cron, callbacks and internal triggers. */
  readonly sources: DeliverySources;
  /** The MCP server at /mcp: tokens, tools, capabilities. */
  readonly mcp: CoreMcpServer;
  /** The optimization oracle; undefined when it is off (UHLP_ORACLE=off). */
  readonly oracle: OptimizationOracle | undefined;
  /** The console's page (`<operatorUrl>/_uhlp/console/`), and the views' sandbox origin; undefined when the console is off. */
  readonly console: { readonly url: string; readonly sandboxUrl: string } | undefined;
  /** The pid of the std-body host when it runs as the core's child (`stdBodyChild`). */
  readonly stdBodyPid: number | undefined;
  /** Every route of fastify's with its audience (route-audience.ts): the route inventory. */
  routes(): readonly AudienceRoute[];
  /** Resolves when every pool holds minWarm sandboxes, or rejects after `timeoutMs`. */
  whenReady(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export interface StartCoreOptions {
  /** Use this logger instead of one made from config.logLevel. */
  logger?: Logger;
  /** Called when a client asks the core to exit over its spine socket (`uhlp stop`). */
  onExitRequest?: () => void;
  /**
   * Run the std-body endpoint host as a child of the core and wait (bounded) for
   * its routes, as `uhlp dev` does. Off when the host runs as its own process
   * (`uhlp start`).
   * @defaultValue false
   */
  stdBodyChild?: boolean;
}

/** A scrape waits at most this long for the state store's ping (Redis answers in well under 1 ms). */
const STATE_PROBE_TIMEOUT_MS = 1000;

export async function startCore(config: CoreConfig, options: StartCoreOptions = {}): Promise<RunningCore> {
  // A first run on a fresh machine has neither directory yet.
  await mkdir(config.dataDir, { recursive: true });
  await mkdir(path.dirname(config.spineSocket), { recursive: true });
  // Secret values never leave the core in a log line, an answer, a tool result or an error body (best effort:
  // docs/security.md). The scrubber learns the values as they are read and again whenever they change.
  const scrubber = new SecretScrubber();
  const logger = options.logger ?? createLogger(config.logLevel, scrubber);
  // Before anything makes a span; stopped last, after the turns it traces have ended.
  const tracing = startTracing(config.tracing, logger, PACKAGE_VERSION, scrubber);
  // What can fail on a setting comes before anything that holds the process (a worker thread, a timer, a
  // connection), so that such a failure ends the start at once: one provider, shared by the MCP tools and the oracle.
  const llmProvider = await createLlmProvider(config.llm);
  const metrics = createMetrics({ appWatch: config.registry === 'kubernetes' });
  tracing.countDropsIn((spans) => metrics.traceSpansDropped.inc(spans));
  const repo = config.registry === 'git' ? await openDefinitionsRepo(config.definitionsDir) : undefined;
  if (repo?.initialized) {
    logger.warn({ dir: repo.dir }, 'the definitions directory was no Git repository: it is one now, with its content committed; the core serves commits, so commit each change to serve it');
  }
  const revisionsRoot = path.join(config.dataDir, REVISIONS_DIR);
  // /mcp on a Unix socket: containers (no network) reach the core through it, mounted in.
  const coreSocket = path.join(path.dirname(config.spineSocket), 'mcp.sock');
  // Other MCP servers' tools at /mcp: the federation reaches app pools through the sandbox manager, which asks it what a runner: mcp pool runs.
  let federation: McpFederation | undefined;
  const sandboxes = new SandboxManager({
    driver: await createSandboxDriver(config.driver, {
      logger,
      instanceId: config.instanceId,
      dataDir: config.dataDir,
      allowUnisolatedProcesses: config.unsafeProcessSandboxes,
      ...(config.bwrapPath !== undefined ? { bwrapPath: config.bwrapPath } : {}),
      ...(config.hostEnv.PATH !== undefined ? { hostPath: config.hostEnv.PATH } : {}),
      ...(Object.keys(config.pods.images).length > 0 ? { images: config.pods.images } : {}),
      ...(config.driver === 'pod' ? { podNamespace: config.pods.namespace ?? config.namespaces[0] } : {}),
      ...(config.driver === 'pod' && config.pods.corePod !== undefined ? { corePod: config.pods.corePod } : {}),
      ...(config.driver === 'pod' && config.pods.packageVolume !== undefined
        ? { packageCache: { root: config.mcpFederation.packageCache, volume: config.pods.packageVolume } }
        : {}),
    }),
    strategy: poolStrategyFor(config.driver, { claimAhead: config.pods.claimAhead }),
    metrics,
    logger,
    definitionsRoot: revisionsRoot,
    // Sandboxes have no network: tool calls reach the core through this socket, mounted in.
    mcpSocket: coreSocket,
    instanceId: config.instanceId,
    maxResponseBytes: config.maxSandboxResponseBytes,
    mcpServerLaunch: (app, pool) => federation!.launch(app, pool),
  });
  if (config.mcpFederation.secretsFileDeprecatedName === true) logger.warn('UHLP_MCP_SECRETS_FILE is the earlier name of UHLP_SECRETS_FILE; it works in this release only: rename it');
  const secretsFile = watchSecretFile(config.mcpFederation.secretsFile, { logger });
  scrubber.addSource('file', () => secretsFile.values());
  secretsFile.onChange(() => scrubber.update());
  // An app's own secrets: in a cluster the Secrets of its namespace (read as it loads, and again every
  // SECRET_REFRESH_MS), else its section of the file (re-read as it changes).
  let kubernetesApps: KubernetesAppSource | undefined;
  const mcpSecrets: SecretStore =
    config.registry === 'kubernetes'
      ? {
          ofApp: (appId, name, key) => kubernetesApps?.secretValue(appId, name, key),
          appHas: (appId, name, key) => kubernetesApps?.hasSecret(appId, name, key) === true,
          ofCommunity: (name, key) => secretsFile.ofCommunity(name, key),
        }
      : secretsFile;
  const community = loadCommunityServers(config.mcpFederation.communityFile);
  checkCommunitySecrets(community, (name, key) => mcpSecrets.ofCommunity(name, key) !== undefined);
  federation = new McpFederation({
    appPool: (appId, poolName) => sandboxes.pool(appId, poolName),
    appPoolProblem: (appId, poolName) => sandboxes.poolProblem(appId, poolName),
    packages: new PackageCache(config.mcpFederation.packageCache, { env: config.mcpFederation.npmEnvironment }),
    community,
    startPool: (appId, spec, launch) => sandboxes.startOwnPool(appId, spec, launch),
    retirePool: (appId, poolName) => sandboxes.retireOwnPool(appId, poolName),
    secrets: mcpSecrets,
    allowPrivate: config.mcpFederation.allowPrivate,
    criticalAllowed: (grant, tool) => workflows.tools.criticalAllowed(grant, tool),
    metrics,
    logger,
  });
  const appSecrets = (appId: string, name: string, key?: string): boolean => mcpSecrets.appHas(appId, name, key);
  const registry = new ApplicationRegistry({ repo, revisionsRoot, appSecrets, llmAllowPrivate: config.llm.appAllowPrivate, metrics, logger });
  // A secret added or removed changes which apps load: an app refused for a missing secret loads once it is there.
  if (repo !== undefined && config.registry === 'git') {
    secretsFile.onChange(() => {
      registry.recheck().catch((error: Error) => logger.error({ err: error.message }, 'judging the apps again after a secrets change failed'));
    });
  }
  // An app's own model endpoint (spec.llm): a provider per app, made as it loads, its key read at each call.
  const appLlm = createAppLlmProviders({ secrets: mcpSecrets, allowPrivate: config.llm.appAllowPrivate, timeoutMs: config.llm.timeoutMs, maxRetries: config.llm.maxRetries, stream: config.llm.stream });
  registry.onChange((snapshot) => {
    appLlm.update([...snapshot.apps].map(([appId, entry]) => ({ appId, ...(entry.document.spec.llm !== undefined ? { llm: entry.document.spec.llm } : {}) })));
    federation!.sync(snapshot);
    return sandboxes.sync(snapshot);
  });
  let lastStateError = 0;
  // Both stores share one Redis: ioredis reports every failed reconnect of each, and one line a few seconds is enough.
  const onConnectionError = (error: Error): void => {
    if (Date.now() - lastStateError > 5000) logger.error({ err: error.message }, 'runtime state unavailable');
    lastStateError = Date.now();
  };
  // uhlp_redis_*: every Redis client of the core reports its commands, reconnects and failovers.
  const redisObserver = isRedisUrl(config.state) ? redisMetricsObserver(metrics) : undefined;
  const store = await createRuntimeStore({ state: config.state, keyPrefix: config.statePrefix, onConnectionError, replicaAcks: config.stateReplicaAcks, observer: redisObserver });
  if (store instanceof RedisRuntimeStore) {
    // What the guarantees need of Redis (docs/runtime-state.md, "Sentinel"): warned about, never refused.
    const findings = guaranteeFindings(await store.guaranteeSettings(), { sentinel: parseRedisUrl(config.state).kind === 'sentinel', replicaAcks: config.stateReplicaAcks });
    for (const finding of findings) logger.warn({ code: finding.code }, finding.message);
  }
  // Refs read on every cs turn are kept in memory, forgotten as the store announces changes.
  const functions = new RefCachingFunctionStore(store.functions);
  // A success's once-only answer is kept with its acknowledgement (src/sources/ack-batch.ts): in the runtime store's records.
  const deliveryStore: DeliveryStore = await createDeliveryStore({ state: config.state, keyPrefix: config.statePrefix, onConnectionError, idempotency: store.idempotency, replicaAcks: config.stateReplicaAcks, observer: redisObserver });
  const sourcesKey = await loadSourcesKey(config.dataDir, config.sourcesKey ? Buffer.from(config.sourcesKey.secret()) : undefined);
  const sources = new DeliverySources({
    store: deliveryStore,
    records: store.idempotency,
    metrics,
    logger,
    key: sourcesKey,
    // One consumer per core process: a restarted core is a new consumer, and takes its old messages over after their lease.
    consumer: `${config.instanceId}-${process.pid}`,
    publicUrl: () => config.publicUrl ?? loopbackUrl(url),
  });
  // After the pools: a new route's consumer may run a message at once.
  registry.onChange((snapshot) => sources.follow(snapshot));
  // uhlp_state_up: the store is pinged at each scrape, so an outage shows without traffic.
  const probeState = async (): Promise<void> => {
    const up = await withDeadline(store.ping(), STATE_PROBE_TIMEOUT_MS, () => new Error(`no answer within ${STATE_PROBE_TIMEOUT_MS} ms`)).then(
      () => 1,
      () => 0,
    );
    metrics.stateUp.set({ kind: store.kind }, up);
  };
  metrics.stateProbes.add(probeState);
  const ledgerThread =
    config.ledger === 'files'
      ? new TurnLedgerThread({
          dataDir: config.dataDir,
          logger,
          metrics,
          durability: config.ledgerDurability,
          segmentBytes: config.ledgerSegmentBytes,
          segmentMs: config.ledgerSegmentSeconds * 1000,
          ...(config.ledgerKey ? { key: config.ledgerKey } : {}),
        })
      : undefined;
  const turns = new TurnKeeper({ store: store.sessions, sessionTtlMs: config.sessionTtlSeconds * 1000, ledger: ledgerThread, metrics });
  // Retention on the ledger thread, with the apps' own limits as the registry has them now.
  const retention: RetentionSchedule | undefined =
    ledgerThread && config.ledgerPruneIntervalSeconds > 0
      ? scheduleRetention({
          ledger: ledgerThread,
          policy: () => retentionPolicy(config.ledgerRetention, registry.snapshot, logger),
          sessionTtlMs: config.sessionTtlSeconds * 1000,
          intervalMs: config.ledgerPruneIntervalSeconds * 1000,
          logger,
        })
      : undefined;
  const kubeConfig = config.registry === 'kubernetes' ? defaultKubeConfig() : undefined;
  kubernetesApps =
    kubeConfig !== undefined
      ? new KubernetesAppSource({
          kubeConfig,
          namespaces: config.namespaces,
          registry,
          revisionsRoot,
          sourcesDir: path.join(config.dataDir, 'sources'),
          allowPrivate: config.gitSources.allowPrivate,
          ...(config.gitSources.caFile ? { caFile: config.gitSources.caFile } : {}),
          namespaceSecrets: new NamespaceSecrets(kubeConfig),
          llmAllowPrivate: config.llm.appAllowPrivate,
          logger,
        })
      : undefined;
  if (kubernetesApps) {
    const source = kubernetesApps;
    scrubber.addSource('namespaces', () => source.secretValues());
    source.onSecretsChange(() => scrubber.update());
  }
  // uhlp_app_watch_up: read at each scrape, so an API server outage shows while the core serves on.
  if (kubernetesApps) metrics.appWatchProbes.add(() => kubernetesApps.liveness().live);
  const watcher =
    repo && config.reloadIntervalMs > 0
      ? new HeadWatcher({
          dir: config.definitionsDir,
          intervalMs: config.reloadIntervalMs,
          pull: config.pullRemote ? { remote: config.pullRemote, intervalMs: config.pullIntervalMs } : undefined,
          onChange: async () => {
            await registry.load().catch((error: Error) => {
              metrics.definitionReloads.labels('failed').inc();
              logger.error({ err: error.message }, 'definitions reload failed; the previous revision keeps serving');
            });
          },
          onError: (error) => logger.warn({ err: error.message }, 'definitions watch'),
        })
      : undefined;
  // A new secret every start: a host or CLI holding an old one is refused.
  const spineSecret = newSpineSecret();
  const spine = createSpineServer({
    socketPath: config.spineSocket,
    secret: spineSecret,
    secretFile: spineSecretPath(config.spineSocket),
    onExit: () => {
      logger.info('exit requested on the spine socket');
      options.onExitRequest?.();
    },
    onProtocolError: (error) => logger.warn({ code: error.code, details: error.details }, error.message),
  });
  // Every source's finished turns, for the console's requests page: a ring per app here and, on Redis, a capped list per app and core.
  const journal =
    config.console.enabled && config.console.journalSize > 0
      ? new TurnJournal({
          size: config.console.journalSize,
          core: config.instanceId,
          logger,
          ...(store instanceof RedisRuntimeStore
            ? { store: store.turnJournal({ core: config.instanceId, size: config.console.journalSize, ttlMs: DEFAULT_TURN_JOURNAL_TTL_MS }) }
            : {}),
        })
      : undefined;
  // The runs list of the console: beside the run records, in memory or on the same Redis.
  const runIndex = await createRunIndex({ state: config.state, keyPrefix: config.statePrefix, ttlMs: config.runs.ttlSeconds * 1000, logger, observer: redisObserver });
  const workflows = new WorkflowRuns({
    runs: new RunService({ store: store.runs, ttlMs: config.runs.ttlSeconds * 1000, maxBytes: config.runs.maxBytes, index: runIndex }),
    leases: store.leases,
    catalog: new WorkflowCatalog({ revisionsRoot, registry }),
    logger,
    stateKind: store.kind,
    instanceId: config.instanceId,
    runTtlMs: config.runs.ttlSeconds * 1000,
  });
  // One definition store: the MCP tools and the oracle share it.
  const definitionStore = repo ? await GitDefinitionStore.open({ dir: config.definitionsDir }) : undefined;
  const mcp = createCoreMcpServer({
    embedder: config.llm.embeddings !== undefined ? openAiEmbedder(config.llm.embeddings) : localEmbedder,
    workflows: workflows.tools,
    runTasks: workflows.mcpTasks,
    // The core's runtime store (memory or Redis): kv keys live there, in each app's namespace.
    kv: store.kv,
    llm: llmProvider,
    llmFor: (appId) => appLlm.forApp(appId),
    // Token budgets and cached answers live beside kv, shared by every replica on Redis.
    llmState: store.llm,
    spine,
    revisionsRoot,
    definitionStore,
    scratchRoot: path.join(config.dataDir, 'scratch'),
    // Read only for the variables an app's shell.env lists, at the time of a call.
    hostEnv: config.hostEnv,
    metrics,
    logger,
    // cs-js bundles and activation logs live in the same store; refs the tools move are forgotten at once.
    functions,
    // cs.codeq.publish (core.codeq.publish) publishes onto the app's own queues of the delivery sources.
    codeq: codeqOnQueues(sources),
    sources,
    // Checkpoints up to the run cap must reach the run service, which fails an oversized run itself.
    bodyLimitBytes: mcpBodyLimitBytes(config.runs.maxBytes),
    federation,
    // Web credentials (capabilities.web.inject) come from the apps' own secrets; tool results are scrubbed.
    secrets: mcpSecrets,
    scrubber,
  });

  let url = '';
  // Pods reach the core at an address it cannot know by itself (UHLP_MCP_URL). Asked on every turn: made once per listening URL.
  let endpointOf = { url: '', endpoint: '/mcp' };
  const mcpEndpoint = (): string => {
    if (config.pods.mcpUrl !== undefined) return config.pods.mcpUrl;
    if (endpointOf.url !== url) endpointOf = { url, endpoint: `${loopbackUrl(url)}/mcp` };
    return endpointOf.endpoint;
  };
  const oracle = config.oracle.enabled
    ? new OptimizationOracle({
        config: config.oracle,
        registry,
        store,
        sandboxes,
        metrics,
        logger,
        provider: llmProvider,
        revisionsRoot,
        mcp,
        mcpEndpoint,
        // Apps from Kubernetes have no definitions repository: their promotions are refused, with the reason.
        ...(definitionStore !== undefined ? { promotions: new GitPromotions(definitionStore) } : {}),
        turns,
        instanceId: config.instanceId,
      })
    : undefined;
  // The console's files, and the origin its app views are served from (an own listener, see sandbox-origin.ts).
  const consoleAssets = config.console.enabled ? loadConsoleAssets() : undefined;
  if (config.console.enabled && consoleAssets === undefined) logger.warn('the console is not built (npm run build): /_uhlp/console/ answers UHLP_CONSOLE_NOT_BUILT');
  const sandboxOrigin =
    consoleAssets !== undefined
      ? new SandboxOrigin({
          assets: consoleAssets,
          registry,
          logger,
          // The console is on the operator listener: under its loopback names, or a name the operator configured.
          consoleOrigins: config.operator.hosts.flatMap((name) => [`http://${name}:*`, `https://${name}:*`]),
        })
      : undefined;
  let sandboxPort = 0;
  let app: FastifyInstance | undefined;
  let server: IngressServer | undefined;
  let operatorServer: OperatorServer | undefined;
  let operatorUrl = '';
  let audiences: RouteAudiences | undefined;
  let mcpSocket: McpSocketServer | undefined;
  let stdBody: StdBodyChild | undefined;
  let invocations: { drain(waitMs: number): Promise<void> } | undefined;
  // The one order of teardown, for a failed start and for close(): stop taking work
  // (watchers, listeners, in-flight requests, whose scripts may still call /mcp,
  // then fastify's routes), then sandboxes, then what they used.
  const shutdown = async (): Promise<void> => {
    workflows.stop();
    await watcher?.stop();
    await kubernetesApps?.stop();
    // No new deliveries; those running finish while their sandboxes and /mcp are still up.
    await sources.close();
    await server?.close();
    await operatorServer?.close();
    await app?.close();
    await invocations?.drain(10_000);
    await Promise.all([server?.closeCoreRoutes(), mcpSocket?.close()]);
    // Generations and comparisons still under way use sandboxes: they end first.
    await oracle?.close();
    await sandboxes.close({ force: true });
    await stdBody?.stop();
    await sandboxOrigin?.close();
    await runIndex.close();
    await mcp.close();
    await federation.close();
    await spine.close();
    await retention?.stop();
    secretsFile.close();
    await turns.close();
    await deliveryStore.close();
    metrics.stateProbes.delete(probeState);
    await functions.close();
    await journal?.flush();
    await store.close();
    await tracing.shutdown();
  };
  try {
    await spine.listen();
    if (options.stdBodyChild) stdBody = spawnStdBodyChild({ socketPath: config.spineSocket, secret: spineSecret, logger, ...(config.hostEnv.PATH !== undefined ? { path: config.hostEnv.PATH } : {}) });
    const built = await buildCore(
      {
        bodyLimitBytes: config.bodyLimitBytes,
        mcpEndpoint,
        idempotencyTtlMs: config.idempotencyTtlSeconds * 1000,
        devMode: config.devMode,
        devErrorStacks: config.devErrorStacks,
        outputsRoot: path.join(config.dataDir, 'output'),
        operatorHosts: config.operator.hosts,
      },
      {
        scrubber,
        registry,
        sandboxes,
        metrics,
        logger,
        store,
        functions,
        turns,
        mcp,
        workflows,
        sources: { delivery: sources, key: sourcesKey },
        ...(oracle !== undefined ? { oracle } : {}),
        ...(kubernetesApps !== undefined ? { appWatch: kubernetesApps } : {}),
        ...(journal !== undefined ? { journal } : {}),
        ...(config.console.enabled
          ? {
              console: {
                config: config.console,
                assets: consoleAssets,
                sandboxPort: () => sandboxPort,
                runIndex,
                ...(config.ledger === 'files' ? { ledger: { dataDir: config.dataDir, ...(config.ledgerKey !== undefined ? { key: config.ledgerKey } : {}) } } : {}),
              },
            }
          : {}),
      },
    );
    app = built.app;
    audiences = built.audiences;
    invocations = built.invocations;
    await app.ready();
    server = new IngressServer({
      ingress: built.ingress,
      metrics,
      logger,
      coreRoutes: app.routing,
      bodyLimitBytes: config.bodyLimitBytes,
      mcpBodyLimitBytes: mcp.bodyLimitBytes,
      scrubber,
    });
    // It must exist before the first container starts.
    mcpSocket = new McpSocketServer({ mcp, metrics, logger });
    await mcpSocket.listen(coreSocket);
    if (config.pullRemote !== undefined) {
      await watcher?.pullNow().catch((error: Error) => {
        throw new UhlpError('UHLP_CONFIG_INVALID', `${config.settingNames.pull} "${config.pullRemote}" cannot be pulled into ${config.definitionsDir}: ${error.message.trim()}`, {
          name: config.settingNames.pull,
          value: config.pullRemote,
        });
      });
    }
    if (kubernetesApps) await kubernetesApps.start();
    else await registry.load();
    await watcher?.start();
    url = await server.listen(config.host, config.port).catch((error: unknown) => {
      throw listenError(error, {
        what: 'the core',
        host: { value: config.host, name: config.settingNames.host, setBy: '--host or UHLP_HOST' },
        port: { value: config.port, name: config.settingNames.port, setBy: '--port or UHLP_PORT' },
      });
    });
    operatorServer = new OperatorServer(app.routing);
    operatorUrl = await operatorServer.listen(config.operator.host, config.operator.port).catch((error: unknown) => {
      throw listenError(error, {
        what: 'the operator listener',
        host: { value: config.operator.host, name: 'UHLP_OPERATOR_HOST', setBy: 'UHLP_OPERATOR_HOST' },
        port: { value: config.operator.port, name: 'UHLP_OPERATOR_PORT', setBy: 'UHLP_OPERATOR_PORT (default: the core port + 1)' },
      });
    });
    if (sandboxOrigin !== undefined) {
      sandboxPort = await sandboxOrigin.listen(config.console.sandboxHost, config.console.sandboxPort).catch((error: unknown) => {
        throw listenError(error, {
          what: "the console's views origin",
          host: { value: config.console.sandboxHost, name: 'UHLP_CONSOLE_SANDBOX_HOST', setBy: 'UHLP_CONSOLE_SANDBOX_HOST' },
          port: { value: config.console.sandboxPort, name: 'UHLP_CONSOLE_SANDBOX_PORT', setBy: 'UHLP_CONSOLE_SANDBOX_PORT' },
        });
      });
    }
    // Once the core listens: a delivery's script may call /mcp at once.
    await sources.start(built.pipeline, registry.snapshot);
    logger.info(`core listening on ${url}; operator routes on ${operatorUrl}`);
    // Runs whose core stopped (Redis state) go on here once nobody holds them.
    workflows.start();
    oracle?.start();
    if (stdBody !== undefined) await waitForStdBody(spine, stdBody, logger);
  } catch (error) {
    await shutdown();
    throw error;
  }
  const listening = app;

  let closing: Promise<void> | undefined;
  return {
    app: listening,
    url,
    operatorUrl: loopbackUrl(operatorUrl),
    registry,
    sandboxes,
    metrics,
    logger,
    spine,
    store,
    sources,
    mcp,
    oracle,
    console: config.console.enabled
      ? { url: `${loopbackUrl(operatorUrl)}/_uhlp/console/`, sandboxUrl: config.console.sandboxUrl ?? `${loopbackUrl(operatorUrl).replace(/:\d+$/, '')}:${sandboxPort}` }
      : undefined,
    stdBodyPid: stdBody?.pid,
    routes: () => audiences?.routes() ?? [],
    async whenReady(timeoutMs) {
      await withDeadline(sandboxes.whenReady(), timeoutMs, () => new Error(`pools not warm after ${timeoutMs} ms`));
    },
    close() {
      closing ??= shutdown();
      return closing;
    },
  };
}

