/**
 * HTTP ingress: every request that is not an operations endpoint is resolved to
 * an app (by Host, then by path prefix), matched to a route, normalized into an
 * /execute request, run in a sandbox, and answered from the result. It knows no
 * HTTP server: the core's own server (ingress-server.ts) and its fastify routes
 * (fastify-ingress-route.ts) both hand it requests and write what it answers.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { REQUEST_ID_HEADER, type HttpMethod } from '../contract/execute-contract.js';
import type { ComponentSpec, PoolSpec } from '../definitions/app-definition-schema.js';
import { errorBody, UhlpError } from '../errors.js';
import type { Logger } from '../logger.js';
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
import { ExecuteContextWriter } from '../router/execute-context.js';
import { interpretResult, JSON_TYPE, type FinalResponse } from '../router/result-interpreter.js';
import { acceptRequestId, badPathError, httpRequestDataJson } from './http-details.js';
import { DECLARED_OUTPUTS_HEADER, turnDeclaredOutputs } from '../router/declared-outputs.js';

export const HTTP_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

export interface HttpIngressDeps {
  readonly registry: ApplicationRegistry;
  readonly executor: ComponentExecutor;
  readonly metrics: Metrics;
  readonly store: RuntimeStore;
  readonly turns: TurnKeeper;
  readonly logger: Logger;
  /** How long completed Idempotency-Key answers are replayed, ms. */
  readonly idempotencyTtlMs: number;
  /** The MCP endpoint URL given to sandboxes; known once the core listens. */
  mcpEndpoint(): string;
  /** Mints each execution's MCP token. @defaultValue none: executions get no token */
  readonly mcp?: McpExecutions;
  /** Where the declared outputs of stored sessions' turns are kept (`<dataDir>/output`). @defaultValue none: outputs are not kept */
  readonly outputsRoot?: string;
}

/** One request as the ingress needs it, whichever server read it. */
export interface IngressRequest {
  readonly method: string;
  /** The request target as sent (path and query); part of the Idempotency-Key fingerprint. */
  readonly url: string;
  readonly path: string;
  /** Without the leading `?`; empty when there is none. */
  readonly query: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: Buffer | undefined;
}

/** What the request resolved to, for the request metrics. */
export interface RouteLabel {
  readonly app: string;
  readonly route: string;
}

export interface IngressAnswer extends FinalResponse {
  /** The answer's headers, X-Request-ID and the core's own (session, Retry-After, replay) included. */
  readonly headers: Record<string, string | string[]>;
  readonly route: RouteLabel;
}

/** How long an execution's MCP token outlives the execution's own timeout, at most; it is revoked when the execution ends. */
const MCP_TOKEN_GRACE_MS = 10_000;
const UNROUTED: RouteLabel = { app: '', route: '' };

interface Routed {
  app: LoadedApp;
  component: ComponentSpec;
  pool: PoolSpec;
  appPath: string;
  match: RouteMatch;
}

/** The core's own headers on an answer, beside the ones the result maps to. */
type CoreHeaders = Record<string, string>;

export class HttpIngress {
  private readonly contexts = new ExecuteContextWriter();

  constructor(private readonly deps: HttpIngressDeps) {}

  /** The request id of a request: the client's X-Request-ID when it is acceptable, else a new one. */
  static requestId(headers: IncomingHttpHeaders): string {
    return acceptRequestId(headers[REQUEST_ID_HEADER]) ?? randomUUID();
  }

  /** Answers one request; never rejects (every failure is an error answer with its code). */
  async handle(request: IngressRequest, requestId: string): Promise<IngressAnswer> {
    const coreHeaders: CoreHeaders = { [REQUEST_ID_HEADER]: requestId };
    const resolved = { label: UNROUTED };
    try {
      const routed = this.route(request, resolved);
      const final = await this.run(request, requestId, routed, coreHeaders);
      return { status: final.status, headers: Object.assign(final.headers, coreHeaders), body: final.body, route: resolved.label };
    } catch (error) {
      return { ...this.errorAnswer(error, requestId, coreHeaders), route: resolved.label };
    }
  }

  /** The error answer of a failure; anything not a UhlpError is logged and internal. */
  private errorAnswer(error: unknown, requestId: string, headers: CoreHeaders): FinalResponse & { headers: Record<string, string> } {
    const uhlp = error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', 'internal error; see the core log for this request id', undefined, { cause: error });
    if (uhlp.statusCode >= 500 && uhlp.code !== 'UHLP_SHUTTING_DOWN') {
      this.deps.logger.error({ requestId, code: uhlp.code, err: error }, uhlp.message);
    }
    return errorAnswer(uhlp, requestId, headers);
  }

  /** Rate limit, then the turn, once per Idempotency-Key when one is sent. */
  private run(request: IngressRequest, requestId: string, routed: Routed, coreHeaders: CoreHeaders): Promise<FinalResponse> {
    const idempotencyKey = checkIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
    // Most requests have neither: they go straight to the turn, with no promise of their own here.
    if (idempotencyKey === undefined && routed.app.document.spec.limits?.requestsPerSecond === undefined) return this.execute(request, requestId, routed, coreHeaders);
    return this.runLimited(request, requestId, routed, coreHeaders, idempotencyKey);
  }

  private async runLimited(request: IngressRequest, requestId: string, routed: Routed, coreHeaders: CoreHeaders, idempotencyKey: string | undefined): Promise<FinalResponse> {
    const { app } = routed;
    const limit = app.document.spec.limits?.requestsPerSecond;
    if (limit !== undefined) {
      const decision = await this.deps.store.hitRateLimit(app.id, limit);
      if (!decision.allowed) {
        this.deps.metrics.rateLimited.labels(app.id).inc();
        coreHeaders['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
        throw new UhlpError('UHLP_RATE_LIMITED', `app "${app.id}" accepts ${limit} requests per second`, { limit, retryAfterMs: decision.retryAfterMs });
      }
    }
    if (idempotencyKey === undefined) return this.execute(request, requestId, routed, coreHeaders);

    const outcome = await runIdempotent(
      {
        store: this.deps.store,
        appId: app.id,
        key: idempotencyKey,
        fingerprint: requestFingerprint(request.method, request.url, request.body),
        ttlMs: this.deps.idempotencyTtlMs,
        inFlightTtlMs: routed.pool.acquireTimeoutMs + routed.pool.limits.timeoutMs + 30_000,
        waitMs: routed.pool.acquireTimeoutMs + routed.pool.limits.timeoutMs,
      },
      () => this.execute(request, requestId, routed, coreHeaders),
    );
    if (outcome.replayed) {
      this.deps.metrics.idempotentReplays.labels(app.id).inc();
      coreHeaders[REPLAYED_HEADER] = 'true';
    }
    // A stored answer is shared by every replay: each gets headers of its own.
    return outcome.replayed ? { ...outcome.response, headers: { ...outcome.response.headers } } : outcome.response;
  }

  /** Finds app, route and component, and labels the request with what it found; throws the 404/400/501 the request deserves. */
  private route(request: IngressRequest, resolved: { label: RouteLabel }): Routed {
    const arrived = performance.now();
    const { path, method } = request;
    const host = request.headers.host;
    const resolution = this.deps.registry.snapshot.resolve(host, path);
    if (!resolution) throw new UhlpError('UHLP_APP_NOT_FOUND', `no application serves ${host ?? ''}${path}`, { host, path });
    const { app, appPath } = resolution;

    let match: RouteMatch | undefined;
    try {
      match = app.routes.match(method, appPath);
    } catch (error) {
      if (error instanceof PathDecodeError) throw badPathError(error.segment);
      throw error;
    }
    resolved.label = { app: app.id, route: match?.route.pattern.source ?? '' };
    if (!match) throw new UhlpError('UHLP_ROUTE_NOT_FOUND', `app "${app.id}" has no route for ${method} ${appPath}`, { app: app.id, method, path: appPath });

    const component = app.components.get(match.route.componentId)!;
    if (component.handler === 'WORKFLOW') {
      throw new UhlpError('UHLP_HANDLER_NOT_SUPPORTED', `component "${component.id}" has handler ${component.handler}, which this core does not run yet`, {
        component: component.id,
        handler: component.handler,
      });
    }
    this.deps.metrics.routingSeconds.labels(app.id).observe((performance.now() - arrived) / 1000);
    return { app, component, pool: app.pools.get(component.pool)!, appPath, match };
  }

  /** One turn: session, /execute in a sandbox, result mapping, ledger. */
  private async execute(request: IngressRequest, requestId: string, routed: Routed, coreHeaders: CoreHeaders): Promise<FinalResponse> {
    const { deps } = this;
    const { app, component, pool, match } = routed;
    const declared = turnDeclaredOutputs(component.declaredOutputs, request.headers[DECLARED_OUTPUTS_HEADER]);
    const begun = deps.turns.begin(app.id, app.document.spec.deploymentMode, request.headers);
    const turn = begun instanceof Promise ? await begun : begun;
    // An ambient session cannot be continued by the client, so it is not named to it.
    if (!turn.ambient) {
      coreHeaders[SESSION_ID_HEADER] = turn.sessionId;
      coreHeaders[TURN_HEADER] = String(turn.turnNumber);
    }
    // Canonical JSON by construction: the sandbox gets it, and the ledger hashes it.
    const requestData = httpRequestDataJson({
      method: request.method,
      appPath: routed.appPath,
      query: request.query,
      routePattern: match.route.pattern.source,
      pathParameters: match.pathParameters,
      headers: request.headers,
      body: request.body,
    });
    const turnEvidence = newTurnEvidence();
    for (const output of declared) turnEvidence.declaredWrites.push({ path: output.path, role: output.role });
    // Minted just before the sandbox is called and revoked when it answers: the token lives as long as the execution.
    const mcpToken = deps.mcp?.beginExecution(
      {
        appId: app.id,
        componentId: component.id,
        requestId,
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
    const context = this.contexts.json(app, component, {
      mcpEndpoint: deps.mcpEndpoint(),
      timeoutMs: pool.limits.timeoutMs,
      sessionId: turn.sessionId,
      turnNumber: turn.turnNumber,
      mcpToken,
    });
    const body = `{"requestId":${JSON.stringify(requestId)},"requestData":${requestData},"context":${context}}`;
    const traceId = request.headers['x-trace-id'];
    try {
      const { response, text } = await deps.executor.execute(
        { appId: app.id, poolName: pool.name, timeoutMs: pool.limits.timeoutMs },
        requestId,
        body,
        typeof traceId === 'string' ? traceId : undefined,
        // Outputs of an ambient session are checked but not kept: nobody could fetch them.
        { sessionId: turn.sessionId, declared, outputsRoot: turn.ambient ? undefined : deps.outputsRoot, evidence: turnEvidence },
      );
      const mcpCalls = endMcp();
      // The core's own record wins over what the runner reported: the sandbox is not trusted to count.
      if (mcpCalls.length > 0) response.metrics = { ...response.metrics, mcp_calls: mcpCalls };
      deps.turns.record(turn, requestData, { status: response.resultType === 'error' ? 'error' : 'ok', answerJson: text, evidence: turnEvidence });
      return interpretResult(response, requestId);
    } catch (error) {
      endMcp();
      deps.turns.record(turn, requestData, { status: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL', answerJson: undefined, evidence: turnEvidence });
      throw error;
    }
  }
}

/** The answer of a UhlpError: its status, and JSON `{code, message, requestId, details?}`. */
export function errorAnswer(error: UhlpError, requestId: string, headers: Record<string, string> = { [REQUEST_ID_HEADER]: requestId }): FinalResponse & { headers: Record<string, string> } {
  headers['content-type'] = JSON_TYPE;
  return { status: error.statusCode, headers, body: JSON.stringify(errorBody(error, requestId)) };
}
