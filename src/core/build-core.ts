/**
 * Builds the core's HTTP application from its parts. Listening is a separate
 * step (start-core.ts), so tests drive the same app through `inject()`.
 */
import type { SecretScrubber } from '../secrets/secret-scrubber.js';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { REQUEST_ID_HEADER } from '../contract/execute-contract.js';
import { errorBody, UhlpError } from '../shared/errors.js';
import { registerIngressRoute } from '../sources/http/fastify-ingress-route.js';
import { HttpIngress } from '../sources/http/http-ingress.js';
import type { WatchLiveness } from '../k8s/resource-informer.js';
import type { Logger } from '../logger.js';
import type { CoreMcpServer } from '../mcp/core-mcp-server.js';
import { registerDevTokenRoute } from '../mcp/dev-token-route.js';
import type { Metrics } from '../metrics.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { ComponentExecutor } from '../execution/component-executor.js';
import { ExecuteContextWriter } from '../execution/execute-context.js';
import { CsBundleTurns } from '../functions/cs-bundle-turns.js';
import type { FunctionStore } from '../functions/function-store.js';
import { ComponentTurns } from '../turns/component-turns.js';
import { TurnPipeline } from '../turns/turn-pipeline.js';
import type { TurnJournal } from '../turns/turn-journal.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import type { OptimizationOracle } from '../oracle/optimization-oracle.js';
import { registerOracleRoutes } from '../oracle/oracle-routes.js';
import { OPS_PATHS, registerOpsRoutes } from './ops-routes.js';
import { AsyncInvocations } from '../sources/http/async-invocations.js';
import { registerCallbackEndpoint } from '../sources/callback/callback-endpoint.js';
import type { DeliverySources } from '../sources/delivery-sources.js';
import { registerQueueEndpoints } from '../sources/queue/queue-endpoints.js';
import { registerSessionOutputsRoute } from './session-outputs-route.js';
import { registerRunsRoutes } from '../workflow-runs/runs-routes.js';
import { WORKFLOWS_NOT_RUN } from '../workflow-runs/workflow-run-turns.js';
import type { WorkflowRuns } from '../workflow-runs/workflow-runs.js';
import { registerConsoleRoutes, type ConsoleDeps } from '../console/console-routes.js';
import { enforceAudiences, type RouteAudiences } from './route-audience.js';

export interface CoreDeps {
  /**
   * Removes secret values from every answer of the core's own routes (the console's API, /mcp over TCP,
   * error bodies) that is not streamed, and from the app ingress' streamed answers (http-ingress.ts). @defaultValue none
   */
  readonly scrubber?: SecretScrubber;
  readonly registry: ApplicationRegistry;
  readonly sandboxes: SandboxManager;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly store: RuntimeStore;
  /**
   * The function store cs components' refs are resolved through (the core's
   * RefCachingFunctionStore, shared with the MCP tools that move refs).
   * @defaultValue store.functions
   */
  readonly functions?: FunctionStore;
  readonly turns: TurnKeeper;
  /** The MCP server at /mcp. @defaultValue none: no /mcp, executions get no token */
  readonly mcp?: CoreMcpServer;
  /** Queues, cron, callbacks and triggers, with the key their tokens are signed with. @defaultValue none: no /_uhlp/queues, /_uhlp/callbacks, async invocations */
  readonly sources?: { readonly delivery: DeliverySources; readonly key: Buffer };
  /** Workflow runs: WORKFLOW components and /_uhlp/runs. @defaultValue none: WORKFLOW components get 501 */
  readonly workflows?: WorkflowRuns;
  /** The optimization oracle: its part in turns, and /_uhlp/oracle. @defaultValue none: the oracle is off */
  readonly oracle?: OptimizationOracle;
  /**
   * The AppDefinition watch of a Kubernetes registry: /readyz is not ready until it has
   * listed once, and reports it; a watch that lost the API server since does not make
   * the core not-ready (it serves what it last listed). @defaultValue none (apps from a Git repository)
   */
  readonly appWatch?: { liveness(): WatchLiveness };
  /**
   * The web console at /_uhlp/console/ (src/console/): its configuration, built files, the
   * views' sandbox origin, and the reads the core's other parts do not carry.
   * @defaultValue none: no console
   */
  readonly console?: Pick<ConsoleDeps, 'config' | 'assets' | 'sandboxPort' | 'runIndex' | 'ledger'>;
  /** Where every finished turn is recorded for the console's requests page. @defaultValue none: turns are not journaled */
  readonly journal?: TurnJournal;
}

export interface BuildCoreOptions {
  /** Largest request body, bytes; larger ones get 413 from their Content-Length. */
  readonly bodyLimitBytes: number;
  /** MCP endpoint URL for sandboxes; resolved per request because the port is known only after listen. */
  readonly mcpEndpoint: () => string;
  /** How long completed Idempotency-Key answers are replayed, ms. */
  readonly idempotencyTtlMs: number;
  /** Dev-only endpoints (the MCP token endpoint) answer. @defaultValue false */
  readonly devMode?: boolean;
  /** Where declared outputs of stored sessions are kept and served from (`<dataDir>/output`). @defaultValue none: not kept */
  readonly outputsRoot?: string;
  /** Clients get a script exception's stack in `details.stack` (UHLP_DEV_ERROR_STACKS). @defaultValue false */
  readonly devErrorStacks?: boolean;
  /** Host names besides loopback ones and `localhost` that operator routes answer under (route-audience.ts). @defaultValue none (`UHLP_OPERATOR_HOSTS`) */
  readonly operatorHosts?: readonly string[];
}

/** The core's HTTP parts: the ingress, and fastify with the core's own routes (and the ingress as one more). */
export interface BuiltCore {
  readonly app: FastifyInstance;
  readonly ingress: HttpIngress;
  /** The turn pipeline every source runs its events through. */
  readonly pipeline: TurnPipeline;
  /** Async invocations (`Prefer: respond-async`); undefined without sources. */
  readonly invocations?: AsyncInvocations;
  /** Every route with its audience (route-audience.ts). */
  readonly audiences: RouteAudiences;
}

export async function buildCore(options: BuildCoreOptions, deps: CoreDeps): Promise<BuiltCore> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // One log line per request would cost more than the routing itself; errors are logged below.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (fastify's default): its bindings are serialized on every
    // request, and the one request-scoped line the core writes names the request id itself.
    childLoggerFactory: (logger) => logger,
    bodyLimit: options.bodyLimitBytes,
    return503OnClosing: true,
    requestIdHeader: false,
    genReqId: (req) => HttpIngress.requestId(req.headers),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 2048 },
  });

  // Bodies reach the sandbox byte for byte, whatever their content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  // First: who may reach each route is settled before any other hook or handler sees the request.
  const audiences = enforceAudiences(app, { operatorHosts: options.operatorHosts ?? [] });

  // Callback hooks, not async ones: they run on every request, and a promise each is measurable.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    // Probes and scrapes are not traffic: counted, they would be most of an idle core's requests, under app="".
    if (!OPS_PATHS.has(request.routeOptions.url ?? '')) {
      const label = request.uhlpRoute;
      deps.metrics.requests.inc({ app: label?.app ?? '', route: label?.route ?? '', status: String(reply.statusCode) });
    }
    done();
  });

  const scrubber = deps.scrubber;
  if (scrubber !== undefined) {
    app.addHook('onSend', (_request, _reply, payload, done) => {
      if (!scrubber.active) return done(null, payload);
      if (typeof payload === 'string') return done(null, scrubber.scrub(payload));
      if (Buffer.isBuffer(payload)) return done(null, scrubber.scrubBytes(payload));
      done(null, payload);
    });
  }

  app.setErrorHandler((error: FastifyError | UhlpError, request, reply) => {
    const uhlp = toUhlpError(error);
    if (uhlp.statusCode >= 500 && uhlp.code !== 'UHLP_SHUTTING_DOWN') {
      request.log.error({ requestId: request.id, code: uhlp.code, err: error }, uhlp.message);
    }
    return reply.code(uhlp.statusCode).header('content-type', 'application/json; charset=utf-8').send(errorBody(uhlp, request.id));
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new UhlpError('UHLP_ROUTE_NOT_FOUND', `method ${request.method} is not routable`, { method: request.method });
    return reply.code(error.statusCode).send(errorBody(error, request.id));
  });

  audiences.declare('probes', () => registerOpsRoutes(app, deps));
  audiences.declare('operators', () => registerOracleRoutes(app, deps.oracle));
  // The session id is the credential of its outputs, handed to the app's client.
  if (options.outputsRoot !== undefined) audiences.declare('apps', () => registerSessionOutputsRoute(app, { sessions: deps.store.sessions, outputsRoot: options.outputsRoot! }));
  if (deps.mcp !== undefined) {
    // /mcp is registered in a plugin of its own, so its routes name their audience (sandboxes) themselves.
    deps.mcp.register(app);
    const mcp = deps.mcp;
    audiences.declare('operators', () =>
      registerDevTokenRoute(app, { devMode: options.devMode ?? false, registry: deps.registry, mcp, mcpEndpoint: options.mcpEndpoint }),
    );
  }
  // What each component's turn is, chosen when its app loads: workflow runs and cs bundles around
  // the turn's stages, the oracle's plans around the execution in a sandbox.
  const components = new ComponentTurns({
    stages: { turns: deps.turns, metrics: deps.metrics, logger: deps.logger, exposeErrorStacks: options.devErrorStacks === true },
    sandbox: {
      executor: new ComponentExecutor(deps.sandboxes, deps.metrics, deps.logger),
      contexts: new ExecuteContextWriter(),
      mcpEndpoint: options.mcpEndpoint,
      ...(deps.mcp !== undefined ? { mcp: deps.mcp } : {}),
      ...(options.outputsRoot !== undefined ? { outputsRoot: options.outputsRoot } : {}),
    },
    turnDecorators: [deps.workflows?.turns ?? WORKFLOWS_NOT_RUN, new CsBundleTurns(deps.functions ?? deps.store.functions)],
    executionDecorators: deps.oracle !== undefined ? [deps.oracle.executions] : [],
  });
  deps.registry.onChange((snapshot) => components.load(snapshot));
  const pipeline = new TurnPipeline({
    components,
    metrics: deps.metrics,
    store: deps.store,
    idempotencyTtlMs: options.idempotencyTtlMs,
    ...(deps.journal !== undefined ? { journal: deps.journal } : {}),
  });
  let invocations: AsyncInvocations | undefined;
  if (deps.sources !== undefined) {
    const sources = deps.sources;
    // Publishing is app traffic, the rest operators' actions: each of these routes names its audience.
    registerQueueEndpoints(app, sources.delivery, sources.key, deps.store.flows);
    // A signed callback URL and an invocation id are credentials the app's client or a third party holds.
    audiences.declare('apps', () => registerCallbackEndpoint(app, sources.delivery));
    const started = new AsyncInvocations({ store: sources.delivery.store, logger: deps.logger, ttlMs: options.idempotencyTtlMs });
    audiences.declare('apps', () => started.register(app));
    invocations = started;
  }
  if (deps.workflows !== undefined) {
    deps.workflows.attach(pipeline);
    const workflows = deps.workflows;
    // Cancels through MCP's tasks/cancel and by double texting are ledgered like the route's.
    workflows.useLedger({
      turns: deps.turns,
      logger: deps.logger,
      tierOf: (appId) => deps.registry.snapshot.apps.get(appId)?.document.spec.deploymentMode ?? 'development',
    });
    // A run id (100 random bits) is handed to the app's client with the run's first answer: it is the run's credential.
    audiences.declare('apps', () =>
      registerRunsRoutes(app, workflows, {
        turns: deps.turns,
        logger: deps.logger,
        tierOf: (appId) => deps.registry.snapshot.apps.get(appId)?.document.spec.deploymentMode ?? 'development',
      }),
    );
  }
  if (deps.console !== undefined) {
    const consoleDeps = deps.console;
    audiences.declare('operators', () => registerConsoleRoutes(
      app,
      {
        ...consoleDeps,
        registry: deps.registry,
        sandboxes: deps.sandboxes,
        metrics: deps.metrics,
        logger: deps.logger,
        store: deps.store,
        turns: deps.turns,
        ...(deps.workflows !== undefined ? { workflows: deps.workflows } : {}),
        ...(deps.sources !== undefined ? { sources: deps.sources.delivery } : {}),
        ...(deps.oracle !== undefined ? { oracle: deps.oracle } : {}),
        ...(deps.journal !== undefined ? { journal: deps.journal } : {}),
      },
      pipeline,
    ));
  }
  const ingress = new HttpIngress({
    registry: deps.registry,
    pipeline,
    metrics: deps.metrics,
    logger: deps.logger,
    ...(invocations !== undefined ? { invocations } : {}),
    ...(deps.scrubber !== undefined ? { scrubber: deps.scrubber } : {}),
  });
  audiences.declare('apps', () => registerIngressRoute(app, ingress));
  return { app, ingress, pipeline, audiences, ...(invocations !== undefined ? { invocations } : {}) };
}

/** Fastify's own errors (body too large, bad content) become catalog codes; anything else is internal. */
function toUhlpError(error: FastifyError | UhlpError): UhlpError {
  if (error instanceof UhlpError) return error;
  if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return new UhlpError('UHLP_BODY_TOO_LARGE', 'the request body is over the ingress limit', { field: 'body' });
  }
  const status = error.statusCode ?? 500;
  if (status >= 400 && status < 500) return new UhlpError('UHLP_BAD_REQUEST', error.message, { reason: error.code });
  return new UhlpError('UHLP_INTERNAL', 'internal error; see the core log for this request id');
}
