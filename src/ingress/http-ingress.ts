/**
 * HTTP ingress: every request that is not an operations endpoint is resolved to
 * an app (by Host, then by path prefix), matched to a route, normalized into an
 * /execute request, run in a sandbox, and answered from the result.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ExecuteRequest, HttpMethod } from '../contract/execute-contract.js';
import { UhlpError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import type { ApplicationRegistry } from '../registry/application-registry.js';
import { PathDecodeError } from '../routing/route-pattern.js';
import type { ComponentExecutor } from '../router/component-executor.js';
import { buildExecuteContext } from '../router/execute-context.js';
import { interpretResult } from '../router/result-interpreter.js';
import { badPathError, buildHttpDetails, splitUrl } from './http-details.js';

export const HTTP_METHODS: HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'];

export interface HttpIngressDeps {
  readonly registry: ApplicationRegistry;
  readonly executor: ComponentExecutor;
  readonly metrics: Metrics;
  /** The MCP endpoint URL given to sandboxes; known once the core listens. */
  mcpEndpoint(): string;
}

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

async function handle(deps: HttpIngressDeps, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
  const arrived = performance.now();
  const { path, query } = splitUrl(request.url);
  const resolution = deps.registry.snapshot.resolve(request.headers.host, path);
  if (!resolution) throw new UhlpError('UHLP_APP_NOT_FOUND', `no application serves ${request.headers.host ?? ''}${path}`, { host: request.headers.host, path });
  const { app, appPath } = resolution;

  let match;
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
  const pool = app.pools.get(component.pool)!;
  const execute: ExecuteRequest = {
    requestId: request.id,
    requestData: {
      source: 'http',
      httpDetails: buildHttpDetails({
        method: request.method,
        appPath,
        query,
        routePattern: match.route.pattern.source,
        pathParameters: match.pathParameters,
        headers: request.headers,
        body: request.body as Buffer | undefined,
      }),
    },
    context: buildExecuteContext(app, component, { mcpEndpoint: deps.mcpEndpoint(), timeoutMs: pool.limits.timeoutMs }),
  };
  deps.metrics.routingSeconds.labels(app.id).observe((performance.now() - arrived) / 1000);

  const traceId = request.headers['x-trace-id'];
  const response = await deps.executor.execute(
    { appId: app.id, poolName: pool.name, timeoutMs: pool.limits.timeoutMs },
    execute,
    typeof traceId === 'string' ? traceId : undefined,
  );
  const final = interpretResult(response, request.id);
  return reply.code(final.status).headers(final.headers).send(final.body);
}
