/**
 * HTTP ingress: every request that is not an operations endpoint is resolved to
 * an app (by Host, then by path prefix), matched to a route, normalized into an
 * /execute request, run in a sandbox, and answered from the result.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ExecuteRequest, HttpMethod } from '../contract/execute-contract.js';
import type { ComponentSpec, PoolSpec } from '../definitions/app-definition-schema.js';
import { UhlpError } from '../errors.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { McpCallSummary } from '../mcp/tool-call-recorder.js';
import type { Metrics } from '../metrics.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { LoadedApp } from '../registry/app-snapshot.js';
import type { ApplicationRegistry } from '../registry/application-registry.js';
import type { RouteMatch } from '../routing/route-table.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { checkIdempotencyKey, IDEMPOTENCY_HEADER, REPLAYED_HEADER, requestFingerprint, runIdempotent } from './idempotency.js';
import { SESSION_ID_HEADER, TURN_HEADER, type TurnKeeper } from './turns.js';
import { PathDecodeError } from '../routing/route-pattern.js';
import type { ComponentExecutor } from '../router/component-executor.js';
import { buildExecuteContext } from '../router/execute-context.js';
import { interpretResult, type FinalResponse } from '../router/result-interpreter.js';
import { badPathError, buildHttpDetails, splitUrl } from './http-details.js';

export const HTTP_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

export interface HttpIngressDeps {
  readonly registry: ApplicationRegistry;
  readonly executor: ComponentExecutor;
  readonly metrics: Metrics;
  readonly store: RuntimeStore;
  readonly turns: TurnKeeper;
  /** How long completed Idempotency-Key answers are replayed, ms. */
  readonly idempotencyTtlMs: number;
  /** The MCP endpoint URL given to sandboxes; known once the core listens. */
  mcpEndpoint(): string;
  /** Mints each execution's MCP token. @defaultValue none: executions get no token */
  readonly mcp?: McpExecutions;
}

/** How long an execution's MCP token outlives the execution's own timeout, at most; it is revoked when the execution ends. */
const MCP_TOKEN_GRACE_MS = 10_000;

/** What the request resolved to, for the request metrics written on response. */
export interface RouteLabel {
  app: string;
  route: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    uhlpRoute?: RouteLabel;
  }
}

export function registerHttpIngress(app: FastifyInstance, deps: HttpIngressDeps): void {
  app.route({
    method: HTTP_METHODS,
    url: '*',
    handler: (request, reply) => handle(deps, request, reply),
  });
}

interface Routed {
  app: LoadedApp;
  component: ComponentSpec;
  pool: PoolSpec;
  appPath: string;
  query: string;
  match: RouteMatch;
}

async function handle(deps: HttpIngressDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const arrived = performance.now();
  const routed = route(deps, request);
  deps.metrics.routingSeconds.labels(routed.app.id).observe((performance.now() - arrived) / 1000);

  const { app } = routed;
  const idempotencyKey = checkIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
  const limit = app.document.spec.limits?.requestsPerSecond;
  if (limit !== undefined) {
    const decision = await deps.store.hitRateLimit(app.id, limit);
    if (!decision.allowed) {
      deps.metrics.rateLimited.labels(app.id).inc();
      reply.header('retry-after', String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000))));
      throw new UhlpError('UHLP_RATE_LIMITED', `app "${app.id}" accepts ${limit} requests per second`, { limit, retryAfterMs: decision.retryAfterMs });
    }
  }

  let final: FinalResponse;
  if (idempotencyKey === undefined) {
    final = await execute(deps, request, reply, routed);
  } else {
    const outcome = await runIdempotent(
      {
        store: deps.store,
        appId: app.id,
        key: idempotencyKey,
        fingerprint: requestFingerprint(request.method, request.url, request.body as Buffer | undefined),
        ttlMs: deps.idempotencyTtlMs,
        inFlightTtlMs: routed.pool.acquireTimeoutMs + routed.pool.limits.timeoutMs + 30_000,
        waitMs: routed.pool.acquireTimeoutMs + routed.pool.limits.timeoutMs,
      },
      () => execute(deps, request, reply, routed),
    );
    if (outcome.replayed) {
      deps.metrics.idempotentReplays.labels(app.id).inc();
      reply.header(REPLAYED_HEADER, 'true');
    }
    final = outcome.response;
  }
  return reply.code(final.status).headers(final.headers).send(final.body);
}

/** Finds app, route and component; throws the 404/400/501 the request deserves. */
function route(deps: HttpIngressDeps, request: FastifyRequest): Routed {
  const { path, query } = splitUrl(request.url);
  const resolution = deps.registry.snapshot.resolve(request.headers.host, path);
  if (!resolution) throw new UhlpError('UHLP_APP_NOT_FOUND', `no application serves ${request.headers.host ?? ''}${path}`, { host: request.headers.host, path });
  const { app, appPath } = resolution;

  let match: RouteMatch | undefined;
  try {
    match = app.routes.match(request.method, appPath);
  } catch (error) {
    if (error instanceof PathDecodeError) throw badPathError(error.segment);
    throw error;
  }
  request.uhlpRoute = { app: app.id, route: match?.route.pattern.source ?? '' };
  if (!match) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', `app "${app.id}" has no route for ${request.method} ${appPath}`, { app: app.id, method: request.method, path: appPath });

  const component = app.components.get(match.route.componentId)!;
  if (component.handler !== 'JIT') {
    throw new UhlpError('UHLP_HANDLER_NOT_SUPPORTED', `component "${component.id}" has handler ${component.handler}, which this core does not run yet`, {
      component: component.id,
      handler: component.handler,
    });
  }
  return { app, component, pool: app.pools.get(component.pool)!, appPath, query, match };
}

/** One turn: session, /execute in a sandbox, result mapping, ledger. */
async function execute(deps: HttpIngressDeps, request: FastifyRequest, reply: FastifyReply, routed: Routed): Promise<FinalResponse> {
  const { app, component, pool, match } = routed;
  const turn = await deps.turns.begin(app.id, app.document.spec.deploymentMode, request.headers);
  // An ambient session cannot be continued by the client, so it is not named to it.
  if (!turn.ambient) reply.header(SESSION_ID_HEADER, turn.sessionId).header(TURN_HEADER, String(turn.turnNumber));
  const requestData: ExecuteRequest['requestData'] = {
    source: 'http',
    httpDetails: buildHttpDetails({
      method: request.method,
      appPath: routed.appPath,
      query: routed.query,
      routePattern: match.route.pattern.source,
      pathParameters: match.pathParameters,
      headers: request.headers,
      body: request.body as Buffer | undefined,
    }),
  };
  const turnEvidence = newTurnEvidence();
  // Minted just before the sandbox is called and revoked when it answers: the token lives as long as the execution.
  const mcpToken = deps.mcp?.beginExecution(
    {
      appId: app.id,
      componentId: component.id,
      requestId: request.id,
      revision: app.revision,
      capabilities: app.document.spec.capabilities ?? {},
      configuration: app.document.spec.configuration ?? {},
    },
    pool.limits.timeoutMs + MCP_TOKEN_GRACE_MS,
  );
  /** Revokes the token and moves the execution's MCP calls and refusals into the turn's evidence. */
  const endMcp = (): McpCallSummary[] => {
    if (mcpToken === undefined) return [];
    const record = deps.mcp!.endExecution(mcpToken);
    turnEvidence.externalCalls.push(...record.externalCalls);
    turnEvidence.capabilityViolations.push(...record.capabilityViolations);
    return record.calls;
  };
  const executeRequest: ExecuteRequest = {
    requestId: request.id,
    requestData,
    context: buildExecuteContext(app, component, {
      mcpEndpoint: deps.mcpEndpoint(),
      timeoutMs: pool.limits.timeoutMs,
      sessionId: turn.sessionId,
      ...(mcpToken !== undefined ? { mcpToken } : {}),
    }),
  };
  const traceId = request.headers['x-trace-id'];
  try {
    const response = await deps.executor.execute(
      { appId: app.id, poolName: pool.name, timeoutMs: pool.limits.timeoutMs },
      executeRequest,
      typeof traceId === 'string' ? traceId : undefined,
    );
    const mcpCalls = endMcp();
    // The core's own record wins over what the runner reported: the sandbox is not trusted to count.
    if (mcpCalls.length > 0) response.metrics = { ...response.metrics, mcp_calls: mcpCalls };
    deps.turns.record(turn, requestData, {
      status: response.resultType === 'error' ? 'error' : 'ok',
      result: response.data,
      evidence: turnEvidence,
    });
    return interpretResult(response, request.id);
  } catch (error) {
    endMcp();
    deps.turns.record(turn, requestData, {
      status: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL',
      result: undefined,
      evidence: turnEvidence,
    });
    throw error;
  }
}
