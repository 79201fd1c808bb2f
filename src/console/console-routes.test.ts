/**
 * Who may use the console, through fastify's inject (real routes, a real
 * memory store and run index): loopback clients, token holders by role, and
 * requests that did not come from the console's own page.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { createLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import type { SandboxManager } from '../sandbox/sandbox-manager.js';
import { errorBody, UhlpError } from '../shared/errors.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { TurnKeeper } from '../turns/turn-keeper.js';
import type { TurnPipeline } from '../turns/turn-pipeline.js';
import { MemoryRunIndex } from '../workflow-runs/memory-run-index.js';
import { loadConsoleAssets } from './console-assets.js';
import { registerConsoleRoutes } from './console-routes.js';
import { enforceAudiences } from '../core/route-audience.js';
import { parseConsoleTokens } from './console-tokens.js';

const OPERATOR = 'o'.repeat(40);
const READER = 'r'.repeat(40);
const REMOTE = '10.1.2.3';

function assetsDir(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-console-assets-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(path.join(dir, 'index.html'), '<!doctype html><script type="module" src="./assets/main-1.js"></script>');
  writeFileSync(path.join(dir, 'sandbox.html'), '<!doctype html><script type="module" src="./assets/sandbox-1.js"></script>');
  writeFileSync(path.join(dir, 'assets', 'main-1.js'), 'console.log(1)');
  writeFileSync(path.join(dir, 'assets', 'sandbox-1.js'), 'console.log(2)');
  return dir;
}

let app: FastifyInstance | undefined;

async function consoleApp(tokens = ''): Promise<FastifyInstance> {
  const store = new MemoryRuntimeStore();
  app = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.setErrorHandler((error, request, reply) => {
    const uhlp = error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', String(error));
    return reply.code(uhlp.statusCode).send(errorBody(uhlp, request.id));
  });
  // Behind the route audience gate, as the core registers them: the gate finds whether the client is on loopback.
  // console.example is the console's name as an operator configures it (UHLP_OPERATOR_HOSTS).
  enforceAudiences(app, { operatorHosts: ['console.example'] }).declare('operators', () => registerConsoleRoutes(
    app!,
    {
      config: { enabled: true, tokens: parseConsoleTokens(tokens, 'test'), sandboxHost: '127.0.0.1', sandboxPort: 0, journalSize: 1000 },
      registry: { snapshot: { revision: 'r', apps: new Map(), problems: [], heldBack: [] } } as unknown as ApplicationRegistry,
      sandboxes: { readiness: () => ({ ready: true, pools: [] }), driverName: 'process', isolation: 'namespaces' } as unknown as SandboxManager,
      metrics: createMetrics(),
      logger: createLogger('silent'),
      store,
      turns: new TurnKeeper({ store: store.sessions, sessionTtlMs: 60_000 }),
      assets: loadConsoleAssets(assetsDir()),
      sandboxPort: () => 9999,
      runIndex: new MemoryRunIndex({ ttlMs: 60_000 }),
    },
    {} as TurnPipeline,
  ));
  return app;
}

afterEach(async () => {
  await app?.close();
  app = undefined;
});

const FROM_PAGE = { 'x-uhlp-console': '1', host: 'console.example:8080' };

describe('the console answers', () => {
  it.each([
    ['a loopback client, as an operator', '', '127.0.0.1', {}, 200, { name: 'loopback', role: 'operator', via: 'loopback' }],
    ['no client beyond loopback without tokens', '', REMOTE, {}, 403, 'UHLP_CONSOLE_FORBIDDEN'],
    ['a client beyond loopback with no token as unauthorized', `ada operator ${OPERATOR}`, REMOTE, {}, 401, 'UHLP_CONSOLE_UNAUTHORIZED'],
    ['an unknown token as unauthorized, even from loopback', `ada operator ${OPERATOR}`, '127.0.0.1', { authorization: `Bearer ${'x'.repeat(40)}` }, 401, 'UHLP_CONSOLE_UNAUTHORIZED'],
    ['a read token with its name and role', `grace read ${READER}`, REMOTE, { authorization: `Bearer ${READER}` }, 200, { name: 'grace', role: 'read', via: 'token' }],
    ['the sign-in cookie like a bearer token', `ada operator ${OPERATOR}`, REMOTE, { cookie: `other=1; uhlp_console=${OPERATOR}` }, 200, { name: 'ada', role: 'operator', via: 'token' }],
  ])('%s', async (_name, tokens, remoteAddress, headers, status, expected) => {
    const core = await consoleApp(tokens);
    const response = await core.inject({ method: 'GET', url: '/_uhlp/console/api/session', remoteAddress, headers: { ...FROM_PAGE, ...headers } });
    expect(response.statusCode).toBe(status);
    if (typeof expected === 'string') expect(response.json().code).toBe(expected);
    else expect(response.json().principal).toEqual(expected);
    expect(response.headers['cache-control']).toBe('no-store');
  });

  it.each([
    ['without the x-uhlp-console header', { host: 'console.example:8080' }],
    ['from another origin', { ...FROM_PAGE, origin: 'https://evil.example' }],
    ['from another site', { ...FROM_PAGE, 'sec-fetch-site': 'cross-site' }],
  ])('refuses an API request %s (a loopback operator included)', async (_name, headers) => {
    const core = await consoleApp();
    const response = await core.inject({ method: 'GET', url: '/_uhlp/console/api/runs', remoteAddress: '127.0.0.1', headers });
    expect(response.statusCode).toBe(403);
    expect(response.json().code).toBe('UHLP_CONSOLE_FORBIDDEN');
  });

  it('takes a request of its own origin', async () => {
    const core = await consoleApp();
    const response = await core.inject({ method: 'GET', url: '/_uhlp/console/api/runs', remoteAddress: '127.0.0.1', headers: { ...FROM_PAGE, origin: 'http://console.example:8080', 'sec-fetch-site': 'same-origin' } });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ runs: [], total: 0, countCapped: false });
  });

  it('refuses an action to the read role, and takes it from the operator role', async () => {
    const core = await consoleApp(`grace read ${READER}\nada operator ${OPERATOR}`);
    const url = '/_uhlp/console/api/oracle/shop/quote/rollback';
    const read = await core.inject({ method: 'POST', url, remoteAddress: REMOTE, headers: { ...FROM_PAGE, authorization: `Bearer ${READER}`, 'content-type': 'application/json' }, payload: '{}' });
    expect(read.statusCode).toBe(403);
    expect(read.json()).toMatchObject({ code: 'UHLP_CONSOLE_FORBIDDEN', details: { role: 'read' } });
    const operator = await core.inject({ method: 'POST', url, remoteAddress: REMOTE, headers: { ...FROM_PAGE, authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' }, payload: '{}' });
    // Past access: this core runs no oracle.
    expect(operator.json().code).toBe('UHLP_ORACLE_NOT_FOUND');
  });

  it('signs in with a token into an HttpOnly, SameSite=Strict cookie of its own path', async () => {
    const core = await consoleApp(`ada operator ${OPERATOR}`);
    const wrong = await core.inject({ method: 'POST', url: '/_uhlp/console/api/sign-in', remoteAddress: REMOTE, headers: { ...FROM_PAGE, 'content-type': 'application/json' }, payload: JSON.stringify({ token: READER }) });
    expect(wrong.statusCode).toBe(401);
    const right = await core.inject({ method: 'POST', url: '/_uhlp/console/api/sign-in', remoteAddress: REMOTE, headers: { ...FROM_PAGE, 'content-type': 'application/json', 'x-forwarded-proto': 'https' }, payload: JSON.stringify({ token: OPERATOR }) });
    expect(right.statusCode).toBe(200);
    expect(right.headers['set-cookie']).toBe(`uhlp_console=${OPERATOR}; Path=/_uhlp/console; Max-Age=43200; HttpOnly; SameSite=Strict; Secure`);
  });

  it('serves its page with a strict policy to loopback, to anyone where tokens are configured, to nobody else', async () => {
    const open = await consoleApp();
    const page = await open.inject({ method: 'GET', url: '/_uhlp/console/', remoteAddress: '127.0.0.1', headers: { host: '127.0.0.1:8080' } });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-security-policy']).toContain('frame-src http://127.0.0.1:9999;');
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect((await open.inject({ method: 'GET', url: '/_uhlp/console/', remoteAddress: REMOTE })).statusCode).toBe(403);
    expect((await open.inject({ method: 'GET', url: '/_uhlp/console/assets/main-1.js', remoteAddress: '127.0.0.1' })).headers['cache-control']).toContain('immutable');
    // The sandbox page and its script are the views' origin's, not the console's.
    expect((await open.inject({ method: 'GET', url: '/_uhlp/console/assets/sandbox-1.js', remoteAddress: '127.0.0.1' })).statusCode).toBe(404);
    await open.close();
    const guarded = await consoleApp(`ada operator ${OPERATOR}`);
    expect((await guarded.inject({ method: 'GET', url: '/_uhlp/console/', remoteAddress: REMOTE })).statusCode).toBe(200);
  });
});
