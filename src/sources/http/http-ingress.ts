/**
 * The HTTP source: every request that is not an operations endpoint is resolved
 * to an app (by Host, then by path prefix), matched to a route, turned into a
 * turn event (the contract's httpDetails, the session, the declared outputs, the
 * Idempotency-Key) and run by the turn pipeline; its answer is the response. It
 * knows no HTTP server: the core's own server (ingress-server.ts) and its
 * fastify routes (fastify-ingress-route.ts) both hand it requests and write what
 * it answers.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { REQUEST_ID_HEADER, type HttpMethod } from '../../contract/execute-contract.js';
import type { ComponentSpec, PoolSpec } from '../../apps/schema/app-definition-schema.js';
import { errorBody, UhlpError } from '../../shared/errors.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { LoadedApp } from '../../apps/app-snapshot.js';
import type { ApplicationRegistry } from '../../apps/application-registry.js';
import type { RouteMatch } from './route-table.js';
import { checkIdempotencyKey, IDEMPOTENCY_HEADER, requestFingerprint } from '../../turns/idempotency.js';
import { sessionChoiceOf } from '../../turns/turn-keeper.js';
import type { TurnPipeline } from '../../turns/turn-pipeline.js';
import { PathDecodeError } from './route-pattern.js';
import { JSON_TYPE, type FinalResponse } from '../../execution/result-interpreter.js';
import { acceptRequestId, badPathError, httpRequestDataJson } from './http-details.js';
import { DECLARED_OUTPUTS_HEADER, turnDeclaredOutputs } from '../../execution/declared-outputs.js';
import { INVOCATIONS_PATH, prefersAsync, type AsyncInvocations } from './async-invocations.js';
import type { ResponseStream } from '../../shared/http1/http1-server.js';
import { ExecutionStream } from '../../workflow-runs/execution-stream.js';
import type { SecretScrubber } from '../../secrets/secret-scrubber.js';
import { tracingActive } from '../../tracing/tracing-active.js';
import { SpanKind, SpanStatusCode, context, continuedContext, startTurnSpan, turnSpanOf, type Span } from '../../tracing/spans.js';
import { inAsyncTurnSpan } from '../../tracing/async-turn-span.js';

const EVENT_STREAM_TYPE = 'text/event-stream; charset=utf-8';

/** Whether an Accept header asks for server-sent events (and does not refuse them with q=0). */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('text/event-stream')) return false;
  return accept.split(',').some((item) => {
    const [type, ...params] = item.split(';').map((part) => part.trim().toLowerCase());
    return type === 'text/event-stream' && !params.some((param) => /^q=0(\.0*)?$/.test(param));
  });
}

export const HTTP_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

export interface HttpIngressDeps {
  readonly registry: ApplicationRegistry;
  readonly pipeline: TurnPipeline;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Runs requests with `Prefer: respond-async` in the background. @defaultValue none: such requests are answered synchronously */
  readonly invocations?: AsyncInvocations;
  /** Scrubs streamed answers' chunks, a value split across two of them included (execution-stream.ts). @defaultValue none */
  readonly scrubber?: SecretScrubber;
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
  /** Server-sent events instead of `body` (a client of an LLM or WORKFLOW component that accepts text/event-stream). */
  readonly stream?: ResponseStream;
  /** A streamed turn's answer, its last event: the turn goes on after the head, and its span with it. */
  readonly turnEnded?: Promise<FinalResponse>;
}

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
  constructor(private readonly deps: HttpIngressDeps) {}

  /** The request id of a request: the client's X-Request-ID when it is acceptable, else a new one. */
  static requestId(headers: IncomingHttpHeaders): string {
    return acceptRequestId(headers[REQUEST_ID_HEADER]) ?? randomUUID();
  }

  /** Answers one request; never rejects (every failure is an error answer with its code). */
  handle(request: IngressRequest, requestId: string): Promise<IngressAnswer> {
    return tracingActive() ? this.traced(request, requestId) : this.answer(request, requestId);
  }

  /**
   * The request as a turn's SERVER span: the caller's W3C `traceparent` (and
   * `tracestate`) continued, a new trace otherwise; named by its route once routed.
   * It covers the turn: a streamed one's span ends with the stream's last event,
   * not with the head. A `Prefer: respond-async` request's ends with its 202: its
   * turn is a span of its own (async-turn-span.ts).
   */
  private async traced(request: IngressRequest, requestId: string): Promise<IngressAnswer> {
    const method = (HTTP_METHODS as string[]).includes(request.method) ? request.method : '_OTHER';
    const { span, ctx } = startTurnSpan(method, {
      kind: SpanKind.SERVER,
      parent: continuedContext(request.headers),
      attributes: { 'http.request.method': method, 'url.path': request.path, 'uhlp.request_id': requestId },
    });
    let answer: IngressAnswer | undefined;
    try {
      answer = await context.with(ctx, () => this.answer(request, requestId));
      if (answer.route.app !== '') span.setAttribute('uhlp.app', answer.route.app);
      if (answer.route.route !== '') {
        span.setAttribute('http.route', answer.route.route);
        span.updateName(`${method} ${answer.route.route}`);
      }
      span.setAttribute('http.response.status_code', answer.status);
      endsFailed(span, answer.status);
      return answer;
    } finally {
      if (answer?.turnEnded === undefined) span.end();
      // The stream's status was 200 at its head; the turn's own answer, its last event, may still be a failure.
      else void answer.turnEnded.then((final) => endsFailed(span, final.status)).finally(() => span.end());
    }
  }

  private async answer(request: IngressRequest, requestId: string): Promise<IngressAnswer> {
    const coreHeaders: CoreHeaders = { [REQUEST_ID_HEADER]: requestId };
    const resolved = { label: UNROUTED };
    try {
      const routed = this.route(request, resolved);
      const invocations = this.deps.invocations;
      if (invocations !== undefined && prefersAsync(request.headers['prefer'])) {
        // The turn runs on; its answer, an error answer included, is what the invocation keeps.
        const id = await invocations.start((invocationId) =>
          inAsyncTurnSpan(invocationId, `${request.method} ${routed.match.route.pattern.source}`, { 'uhlp.app': routed.app.id, 'uhlp.request_id': requestId }, async () => {
            const headers: CoreHeaders = { [REQUEST_ID_HEADER]: requestId };
            try {
              const final = await this.run(request, requestId, routed, headers);
              return { status: final.status, headers: Object.assign(final.headers, headers), body: final.body };
            } catch (error) {
              return this.errorAnswer(error, requestId, headers);
            }
          }),
        );
        const location = `${INVOCATIONS_PATH}/${id}`;
        Object.assign(coreHeaders, { location, 'preference-applied': 'respond-async', 'content-type': JSON_TYPE });
        return { status: 202, headers: coreHeaders, body: JSON.stringify({ invocationId: id, location }), route: resolved.label };
      }
      // Prompts and workflows stream; a script answers once.
      if (routed.component.handler !== 'JIT' && acceptsEventStream(request.headers.accept)) return this.streamed(request, requestId, routed, coreHeaders, resolved.label);
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

  /**
   * The turn as server-sent events: the head at once, the execution's stream
   * packets as they come, the turn's answer (whatever its status) as the last
   * event (execution-stream.ts).
   */
  private streamed(request: IngressRequest, requestId: string, routed: Routed, coreHeaders: CoreHeaders, route: RouteLabel): IngressAnswer {
    const stream = new ExecutionStream(this.deps.logger, this.deps.scrubber);
    const turnEnded = this.run(request, requestId, routed, coreHeaders, stream).then(
      (final): FinalResponse => {
        const last = { status: final.status, headers: { ...final.headers, ...coreHeaders }, body: final.body };
        stream.finish(last);
        return last;
      },
      (error: unknown): FinalResponse => {
        const last = this.errorAnswer(error, requestId, { ...coreHeaders });
        stream.finish(last);
        return last;
      },
    );
    return {
      turnEnded,
      status: 200,
      headers: { 'content-type': EVENT_STREAM_TYPE, 'cache-control': 'no-cache', 'x-accel-buffering': 'no', [REQUEST_ID_HEADER]: requestId },
      body: '',
      stream: { chunks: stream.text(), abort: () => stream.close() },
      route,
    };
  }

  /** The turn the request is, run by the pipeline. */
  private run(request: IngressRequest, requestId: string, routed: Routed, coreHeaders: CoreHeaders, stream?: ExecutionStream): Promise<FinalResponse> {
    const { app, component, pool, match } = routed;
    const key = checkIdempotencyKey(request.headers[IDEMPOTENCY_HEADER]);
    const traceId = request.headers['x-trace-id'];
    if (tracingActive()) turnSpanOf()?.setAttribute('uhlp.component', component.id);
    return this.deps.pipeline.run(
      {
        app,
        component,
        pool,
        requestId,
        source: 'http',
        route: `${request.method} ${match.route.pattern.source}`,
        // Canonical JSON by construction: the sandbox gets it, and the ledger hashes it.
        requestDataJson: httpRequestDataJson({
          method: request.method,
          appPath: routed.appPath,
          query: request.query,
          routePattern: match.route.pattern.source,
          pathParameters: match.pathParameters,
          headers: request.headers,
          body: request.body,
        }),
        session: sessionChoiceOf(request.headers),
        declaredOutputs: turnDeclaredOutputs(component.declaredOutputs, request.headers[DECLARED_OUTPUTS_HEADER]),
        ...(typeof traceId === 'string' ? { traceId } : {}),
        ...(key !== undefined ? { once: { key, fingerprint: requestFingerprint(request.method, request.url, request.body) } } : {}),
        ...(stream !== undefined ? { stream } : {}),
        ...(match.route.flow !== undefined ? { flow: { scope: `http ${match.route.method} ${match.route.pattern.source}`, spec: match.route.flow } } : {}),
      },
      coreHeaders,
    );
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
    this.deps.metrics.routingSeconds.labels(app.id).observe((performance.now() - arrived) / 1000);
    return { app, component, pool: app.pools.get(component.pool)!, appPath, match };
  }
}

/** A 5xx is the server's failure (a script's exception is recorded on the span already, with its code). */
function endsFailed(span: Span, status: number): void {
  if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
}

/** The answer of a UhlpError: its status, and JSON `{code, message, requestId, details?}`. */
export function errorAnswer(error: UhlpError, requestId: string, headers: Record<string, string> = { [REQUEST_ID_HEADER]: requestId }): FinalResponse & { headers: Record<string, string> } {
  headers['content-type'] = JSON_TYPE;
  return { status: error.statusCode, headers, body: JSON.stringify(errorBody(error, requestId)) };
}
