/**
 * The oracle's operator endpoints, which `uhlp optimize` calls:
 *
 * - `GET /_uhlp/oracle/status[?app=A[&component=C]]` -> `{components: [...]}`
 * - `POST /_uhlp/oracle/promote|reject|rollback {"app", "component"}` -> the component's status
 *
 * They answer loopback clients only (the route audience gate refuses anyone
 * else with UHLP_ORACLE_FORBIDDEN, src/core/route-audience.ts): they move what
 * code serves an app. In a cluster, reach them through a port-forward to the core.
 */
import type { FastifyInstance } from 'fastify';
import { UhlpError } from '../shared/errors.js';
import type { LoopbackOnly } from '../core/route-audience.js';
import type { OptimizationOracle } from './optimization-oracle.js';
import type { OracleCommand } from './oracle-commands.js';

export const ORACLE_ROUTE_PREFIX = '/_uhlp/oracle';
const COMMANDS: readonly OracleCommand[] = ['promote', 'reject', 'rollback'];
const LOOPBACK_ONLY: LoopbackOnly = { route: ORACLE_ROUTE_PREFIX, code: 'UHLP_ORACLE_FORBIDDEN' };

export function registerOracleRoutes(app: FastifyInstance, oracle: OptimizationOracle | undefined): void {
  const guard = (): OptimizationOracle => {
    if (oracle === undefined) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', 'the optimization oracle is off on this core (UHLP_ORACLE=off)');
    return oracle;
  };

  app.get(`${ORACLE_ROUTE_PREFIX}/status`, { config: { loopbackOnly: LOOPBACK_ONLY } }, async (request, reply) => {
    const running = guard();
    const query = request.query as Record<string, unknown>;
    const appId = optionalName(query['app'], 'app');
    const componentId = optionalName(query['component'], 'component');
    if (componentId !== undefined && appId === undefined) throw new UhlpError('UHLP_BAD_REQUEST', 'component needs app', { field: 'component' });
    return reply.send({ components: await running.status(appId, componentId) });
  });

  for (const command of COMMANDS) {
    app.post(`${ORACLE_ROUTE_PREFIX}/${command}`, { config: { loopbackOnly: LOOPBACK_ONLY } }, async (request, reply) => {
      const running = guard();
      const body = parseBody(request.body as Buffer | undefined);
      return reply.send(await running.command(command, body.app, body.component));
    });
  }
}

function optionalName(value: unknown, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value === '' || value.length > 253) throw new UhlpError('UHLP_BAD_REQUEST', `${field} must be a name`, { field });
  return value;
}

function parseBody(raw: Buffer | undefined): { app: string; component: string } {
  let body: unknown;
  try {
    body = JSON.parse(raw?.toString('utf8') ?? '');
  } catch {
    throw new UhlpError('UHLP_BAD_REQUEST', 'the body must be JSON {"app": "...", "component": "..."}', { field: 'body' });
  }
  const record = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  const app = optionalName(record['app'], 'app');
  const component = optionalName(record['component'], 'component');
  if (app === undefined) throw new UhlpError('UHLP_BAD_REQUEST', 'app is required', { field: 'app' });
  if (component === undefined) throw new UhlpError('UHLP_BAD_REQUEST', 'component is required', { field: 'component' });
  return { app, component };
}
