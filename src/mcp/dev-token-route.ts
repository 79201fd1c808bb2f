/**
 * `POST /_uhlp/dev/mcp-token {"appId", "ttlSeconds"?}`: mints a token for an
 * app so that an MCP client outside any sandbox (the official client, the MCP
 * inspector, `uhlp mcp token`) can list and call its tools. It exists only in a
 * core started by `uhlp dev`, and answers only loopback clients (the route
 * audience gate refuses anyone else, src/core/route-audience.ts): a token is
 * the app's whole capability set.
 */
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../shared/errors.js';
import type { LoopbackOnly } from '../core/route-audience.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import type { McpExecutions } from './mcp-executions.js';

export const DEV_MCP_TOKEN_PATH = '/_uhlp/dev/mcp-token';

const LOOPBACK_ONLY: LoopbackOnly = { route: DEV_MCP_TOKEN_PATH, code: 'UHLP_DEV_MODE_ONLY' };

/** Default and ceiling of a dev token's life. */
const DEFAULT_TTL_SECONDS = 3600;
const MAX_TTL_SECONDS = 24 * 3600;

export interface DevTokenRouteOptions {
  /** Whether the core runs in dev mode; otherwise every call is refused with UHLP_DEV_MODE_ONLY. */
  readonly devMode: boolean;
  readonly registry: ApplicationRegistry;
  readonly mcp: McpExecutions;
  /** The MCP URL the token is for. */
  mcpEndpoint(): string;
}

export function registerDevTokenRoute(app: FastifyInstance, options: DevTokenRouteOptions): void {
  app.post(DEV_MCP_TOKEN_PATH, { config: { loopbackOnly: LOOPBACK_ONLY } }, async (request, reply) => {
    if (!options.devMode) {
      throw new UhlpError('UHLP_DEV_MODE_ONLY', `${DEV_MCP_TOKEN_PATH} exists only in a core started by uhlp dev`);
    }
    const { appId, ttlSeconds } = parseBody(request.body as Buffer | undefined);
    const loaded = options.registry.snapshot.apps.get(appId);
    if (loaded === undefined) throw new UhlpError('UHLP_APP_NOT_FOUND', `no application "${appId}" is loaded`, { field: 'appId', appId });
    const token = options.mcp.beginExecution(
      {
        appId,
        componentId: 'dev-client',
        requestId: `dev-${request.id}`,
        revision: loaded.revision,
        capabilities: loaded.document.spec.capabilities ?? {},
        configuration: loaded.document.spec.configuration ?? {},
      },
      ttlSeconds * 1000,
    );
    return reply.send({ appId, revision: loaded.revision, mcp_url: options.mcpEndpoint(), token, expiresInSeconds: ttlSeconds });
  });
}

function parseBody(raw: Buffer | undefined): { appId: string; ttlSeconds: number } {
  let body: unknown;
  try {
    body = JSON.parse(raw?.toString('utf8') ?? '');
  } catch {
    throw new UhlpError('UHLP_BAD_REQUEST', 'the body must be JSON {"appId": "..."}', { field: 'body' });
  }
  const record = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof record['appId'] !== 'string' || record['appId'] === '') throw new UhlpError('UHLP_BAD_REQUEST', 'appId must be a non-empty string', { field: 'appId' });
  const ttl = record['ttlSeconds'] ?? DEFAULT_TTL_SECONDS;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_SECONDS) {
    throw new UhlpError('UHLP_BAD_REQUEST', `ttlSeconds must be an integer 1-${MAX_TTL_SECONDS}`, { field: 'ttlSeconds' });
  }
  return { appId: record['appId'], ttlSeconds: ttl };
}
