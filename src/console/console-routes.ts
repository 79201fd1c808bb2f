/**
 * The console at /_uhlp/console/: its page and files (console-assets.ts, with
 * a strict Content-Security-Policy) and its JSON API under
 * /_uhlp/console/api/, one module per page of the console. The API reads what
 * the core's own operator routes read (runs, queues, the oracle, the ledger)
 * through the same services, adds the reads they lack (the runs list, pools,
 * apps), and takes the same actions through the same calls, each ledgered with
 * who took it (console-audit.ts).
 *
 * Registered only when the console is on (UHLP_CONSOLE); reached through the
 * core's port, so the chart's Service and Ingress reach it like any route.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import type { ConsoleConfig } from '../config.js';
import type { LedgerKey } from '../ledger/ledger-key.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { OptimizationOracle } from '../oracle/optimization-oracle.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import { UhlpError } from '../shared/errors.js';
import type { DeliverySources } from '../sources/delivery-sources.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import type { TurnJournal } from '../turns/turn-journal.js';
import type { RunIndex } from '../workflow-runs/run-index.js';
import type { WorkflowRuns } from '../workflow-runs/workflow-runs.js';
import { registerAppsApi } from './apps-api.js';
import { ConsoleAccess, CONSOLE_PATH } from './console-access.js';
import type { ConsoleAssets } from './console-assets.js';
import { ConsoleAudit } from './console-audit.js';
import { consolePageCsp } from './console-csp.js';
import { registerLedgerApi } from './ledger-api.js';
import { registerOracleApi } from './oracle-api.js';
import { registerPoolsApi } from './pools-api.js';
import { jsonObjectBody } from './query-params.js';
import { registerQueuesApi } from './queues-api.js';
import { registerRequestsApi } from './requests-api.js';
import { registerRunsApi } from './runs-api.js';
import { registerViewsApi } from './views-api.js';

export interface ConsoleDeps {
  readonly config: ConsoleConfig;
  readonly registry: ApplicationRegistry;
  readonly sandboxes: SandboxManager;
  readonly metrics: Metrics;
  readonly logger: Logger;
  readonly store: RuntimeStore;
  readonly turns: TurnKeeper;
  /** The built front-end; undefined: the console answers UHLP_CONSOLE_NOT_BUILT. */
  readonly assets: ConsoleAssets | undefined;
  /** The port the views' sandbox origin listens on (known once it listens). */
  readonly sandboxPort: () => number;
  readonly workflows?: WorkflowRuns;
  readonly runIndex?: RunIndex;
  readonly sources?: DeliverySources;
  readonly oracle?: OptimizationOracle;
  /** Where the turn ledgers are, and the key they are sealed with. @defaultValue none: the ledger page says the ledger is off */
  readonly ledger?: { readonly dataDir: string; readonly key?: LedgerKey };
  /** Every source's finished turns, for the requests page. @defaultValue none: the requests page lists nothing */
  readonly journal?: TurnJournal;
}

/** What every API module of the console is given. */
export interface ConsoleContext extends ConsoleDeps {
  readonly access: ConsoleAccess;
  readonly audit: ConsoleAudit;
  /** The turn pipeline app views' components run through. */
  readonly pipeline: TurnPipeline;
}

export const CONSOLE_API = `${CONSOLE_PATH}/api`;

export function registerConsoleRoutes(app: FastifyInstance, deps: ConsoleDeps, pipeline: TurnPipeline): void {
  const context: ConsoleContext = { ...deps, pipeline, access: new ConsoleAccess(deps.config.tokens), audit: new ConsoleAudit(deps.logger, deps.turns) };

  // API answers hold run data: never cached, never sniffed into something else.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.url.startsWith(`${CONSOLE_API}/`)) reply.headers({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    done();
  });

  // The page: a shell with no data in it. Beyond loopback it is served only where tokens are configured (it then asks for one).
  const page = async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
    if (!context.access.acceptsTokens) context.access.principal(request);
    return sendAsset(request, reply, 'index.html');
  };
  app.get(CONSOLE_PATH, async (_request, reply) => reply.redirect(`${CONSOLE_PATH}/`, 308));
  app.get(`${CONSOLE_PATH}/`, page);
  app.get(`${CONSOLE_PATH}/index.html`, page);
  app.get<{ Params: { file: string } }>(`${CONSOLE_PATH}/assets/:file`, async (request, reply) => {
    if (!context.access.acceptsTokens) context.access.principal(request);
    return sendAsset(request, reply, `assets/${request.params.file}`);
  });

  app.get(`${CONSOLE_API}/session`, async (request, reply) => {
    const principal = context.access.apiPrincipal(request);
    return reply.send({
      principal,
      sandboxOrigin: sandboxOrigin(request),
      features: {
        runs: deps.workflows !== undefined,
        queues: deps.sources !== undefined,
        oracle: deps.oracle !== undefined,
        ledger: deps.ledger !== undefined,
        requests: deps.journal !== undefined,
      },
    });
  });
  app.post(`${CONSOLE_API}/sign-in`, async (request, reply) => {
    const body = jsonObjectBody(request.body, 4096);
    if (typeof body['token'] !== 'string' || body['token'].length > 1024) throw new UhlpError('UHLP_BAD_REQUEST', 'token must be a string', { field: 'token' });
    return reply.send({ principal: context.access.signIn(request, reply, body['token']) });
  });
  app.post(`${CONSOLE_API}/sign-out`, async (request, reply) => {
    context.access.signOut(request, reply);
    return reply.send({ signedOut: true });
  });

  registerRunsApi(app, context);
  registerAppsApi(app, context);
  registerPoolsApi(app, context);
  registerQueuesApi(app, context);
  registerOracleApi(app, context);
  registerLedgerApi(app, context);
  registerRequestsApi(app, context);
  registerViewsApi(app, context);

  function sandboxOrigin(request: FastifyRequest): string {
    if (deps.config.sandboxUrl !== undefined) return deps.config.sandboxUrl;
    // The page's own host name, on the sandbox port: another origin, reached the way the page was.
    const hostName = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d+)?$/.exec(request.headers.host ?? '')?.[1] ?? '127.0.0.1';
    return `http://${hostName}:${deps.sandboxPort()}`;
  }

  function sendAsset(request: FastifyRequest, reply: FastifyReply, file: string): FastifyReply {
    const asset = deps.assets?.files.get(file);
    if (deps.assets === undefined) throw new UhlpError('UHLP_CONSOLE_NOT_BUILT', "the console's assets are not in this build (npm run build)");
    if (asset === undefined || (deps.assets.sandboxFiles.has(file) && file !== 'index.html')) {
      throw new UhlpError('UHLP_ROUTE_NOT_FOUND', `the console has no file ${file.slice(0, 80)}`);
    }
    reply.headers({
      'content-type': asset.contentType,
      'x-content-type-options': 'nosniff',
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-store',
      'cross-origin-opener-policy': 'same-origin',
      'cross-origin-resource-policy': 'same-origin',
      'referrer-policy': 'strict-origin-when-cross-origin',
    });
    if (file.endsWith('.html')) {
      reply.header('content-security-policy', consolePageCsp(sandboxOrigin(request)));
      reply.header('x-frame-options', 'DENY');
    }
    return reply.send(asset.body);
  }
}
