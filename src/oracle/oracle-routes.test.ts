import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { enforceAudiences } from '../core/route-audience.js';
import { UhlpError } from '../shared/errors.js';
import type { OptimizationOracle } from './optimization-oracle.js';
import { ORACLE_ROUTE_PREFIX, registerOracleRoutes } from './oracle-routes.js';

const asked: unknown[] = [];
const oracle = {
  status: async (app?: string, component?: string) => {
    asked.push(['status', app, component]);
    return [];
  },
  command: async (command: string, app: string, component: string) => {
    asked.push([command, app, component]);
    if (component === 'gone') throw new UhlpError('UHLP_ORACLE_NOT_FOUND', 'no such component');
    return { app, component, stage: 'canary' };
  },
} as unknown as OptimizationOracle;

function appWith(running: OptimizationOracle | undefined) {
  const app = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  // As the core answers errors: the stable code and its status.
  app.setErrorHandler((error: UhlpError, _request, reply) => reply.status(error.statusCode ?? 500).send({ code: error.code }));
  // Behind the route audience gate, as the core registers it: the gate alone refuses a client that is not the loopback operator.
  enforceAudiences(app).declare('operators', () => registerOracleRoutes(app, running));
  return app;
}

const on = appWith(oracle);
const off = appWith(undefined);
afterAll(async () => {
  await on.close();
  await off.close();
});

const post = (app: ReturnType<typeof appWith>, command: string, payload: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: `${ORACLE_ROUTE_PREFIX}/${command}`, payload, headers: { 'content-type': 'application/json' }, remoteAddress });

describe('the oracle routes', () => {
  it('answer loopback clients only', async () => {
    for (const remoteAddress of ['10.0.0.7', '::ffff:192.168.1.2', '2001:db8::1']) {
      const status = await on.inject({ method: 'GET', url: `${ORACLE_ROUTE_PREFIX}/status`, remoteAddress });
      expect(status.statusCode).toBe(403);
      expect(status.json()).toEqual({ code: 'UHLP_ORACLE_FORBIDDEN' });
      expect((await post(on, 'rollback', '{"app":"a","component":"c"}', remoteAddress)).json()).toEqual({ code: 'UHLP_ORACLE_FORBIDDEN' });
    }
    expect(asked).toEqual([]);
    for (const remoteAddress of ['127.0.0.1', '::1', '::ffff:127.0.0.1']) {
      expect((await on.inject({ method: 'GET', url: `${ORACLE_ROUTE_PREFIX}/status?app=shop`, remoteAddress })).statusCode).toBe(200);
    }
  });

  it('refuse a page of another site in a loopback browser (CSRF), and take the CLI and a same-origin page', async () => {
    asked.length = 0;
    const from = (headers: Record<string, string>) =>
      on.inject({ method: 'POST', url: `${ORACLE_ROUTE_PREFIX}/rollback`, payload: '{"app":"a","component":"c"}', headers: { 'content-type': 'text/plain', host: '127.0.0.1:8080', ...headers }, remoteAddress: '127.0.0.1' });
    const crossSite: Array<Record<string, string>> = [{ 'sec-fetch-site': 'cross-site' }, { 'sec-fetch-site': 'same-site' }, { origin: 'https://evil.example' }, { origin: 'null' }, { origin: 'http://127.0.0.1:9999' }];
    for (const headers of crossSite) {
      const refused = await from(headers);
      expect(refused.statusCode, JSON.stringify(headers)).toBe(403);
      expect(refused.json()).toEqual({ code: 'UHLP_ORACLE_FORBIDDEN' });
    }
    expect(asked).toEqual([]);
    const sameSite: Array<Record<string, string>> = [{}, { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8080' }, { 'sec-fetch-site': 'none' }];
    for (const headers of sameSite) {
      expect((await from(headers)).statusCode, JSON.stringify(headers)).toBe(200);
    }
    expect(asked).toHaveLength(3);
  });

  it('pass status filters and commands on, and their errors back', async () => {
    asked.length = 0;
    expect((await on.inject({ method: 'GET', url: `${ORACLE_ROUTE_PREFIX}/status?app=shop&component=triage`, remoteAddress: '127.0.0.1' })).json()).toEqual({ components: [] });
    expect((await post(on, 'promote', '{"app":"shop","component":"triage"}')).json()).toEqual({ app: 'shop', component: 'triage', stage: 'canary' });
    expect((await post(on, 'reject', '{"app":"shop","component":"gone"}')).statusCode).toBe(404);
    expect(asked).toEqual([
      ['status', 'shop', 'triage'],
      ['promote', 'shop', 'triage'],
      ['reject', 'shop', 'gone'],
    ]);
  });

  it('refuse hostile and malformed input with 400 before the oracle sees it', async () => {
    asked.length = 0;
    const bad = ['', 'not json', '[]', 'null', '{"app":"shop"}', '{"component":"c"}', '{"app":7,"component":"c"}', `{"app":"${'a'.repeat(300)}","component":"c"}`, '{"app":"","component":"c"}'];
    for (const payload of bad) {
      const answer = await post(on, 'rollback', payload);
      expect(answer.statusCode, payload).toBe(400);
      expect(answer.json()).toEqual({ code: 'UHLP_BAD_REQUEST' });
    }
    expect((await on.inject({ method: 'GET', url: `${ORACLE_ROUTE_PREFIX}/status?component=c`, remoteAddress: '127.0.0.1' })).statusCode).toBe(400);
    expect(asked).toEqual([]);
  });

  it('answer 404 when the oracle is off', async () => {
    const status = await off.inject({ method: 'GET', url: `${ORACLE_ROUTE_PREFIX}/status`, remoteAddress: '127.0.0.1' });
    expect(status.statusCode).toBe(404);
    expect(status.json()).toEqual({ code: 'UHLP_ORACLE_NOT_FOUND' });
  });
});
