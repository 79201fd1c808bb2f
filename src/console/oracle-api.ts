/**
 * The console's optimizer board: what `/_uhlp/oracle/status` answers (every
 * optimized component, its stage, agreement, tokens saved), one component with
 * its candidates' code (to read and diff before a promotion), and the
 * operator's commands (`promote`, `reject`, `rollback`) through the oracle's
 * own command, ledgered with who gave them (the oracle ledgers its decision
 * too).
 *
 * - `GET  api/oracle` -> `{enabled, components}`
 * - `GET  api/oracle/<app>/<component>` -> the component's status with its candidates' sources
 * - `POST api/oracle/<app>/<component>/<promote|reject|rollback>` -> the component's status after it
 */
import type { FastifyInstance } from 'fastify';
import type { OptimizationOracle } from '../oracle/optimization-oracle.js';
import type { OracleCommand } from '../oracle/oracle-commands.js';
import { UhlpError } from '../shared/errors.js';
import { CONSOLE_API, type ConsoleContext } from './console-routes.js';
import { optionalChoice, requiredName } from './query-params.js';

const COMMANDS: readonly OracleCommand[] = ['promote', 'reject', 'rollback'];

interface Params {
  app: string;
  component: string;
}

export function registerOracleApi(app: FastifyInstance, context: ConsoleContext): void {
  const oracle = (): OptimizationOracle => {
    if (context.oracle === undefined) throw new UhlpError('UHLP_ORACLE_NOT_FOUND', 'the optimization oracle is off on this core (UHLP_ORACLE=off)');
    return context.oracle;
  };

  app.get(`${CONSOLE_API}/oracle`, async (request, reply) => {
    context.access.apiPrincipal(request);
    if (context.oracle === undefined) return reply.send({ enabled: false, components: [] });
    return reply.send({ enabled: true, components: await context.oracle.status() });
  });

  app.get<{ Params: Params }>(`${CONSOLE_API}/oracle/:app/:component`, async (request, reply) => {
    context.access.apiPrincipal(request);
    const [status] = await oracle().status(requiredName(request.params.app, 'app'), requiredName(request.params.component, 'component'));
    return reply.send(status);
  });

  app.post<{ Params: Params & { command: string } }>(`${CONSOLE_API}/oracle/:app/:component/:command`, async (request, reply) => {
    const principal = context.access.operator(request);
    const appId = requiredName(request.params.app, 'app');
    const componentId = requiredName(request.params.component, 'component');
    const command = optionalChoice(request.params.command, 'command', COMMANDS)!;
    const tier = context.registry.snapshot.apps.get(appId)?.document.spec.deploymentMode ?? 'development';
    const action = `oracle.${command}` as const;
    try {
      const status = await oracle().command(command, appId, componentId);
      await context.audit.record({ action, principal, appId, tier, target: { component: componentId }, outcome: 'ok', details: { stage: status.stage } });
      return reply.send(status);
    } catch (error) {
      await context.audit.record({ action, principal, appId, tier, target: { component: componentId }, outcome: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL' });
      throw error;
    }
  });
}
