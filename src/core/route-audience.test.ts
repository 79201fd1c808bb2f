/**
 * The audience rule on real listeners (port 0): a route answers on the
 * listeners that serve its audience and is refused on the others, an operator
 * route answers only under a local Host, and both refusals come before any
 * handler runs. A route without an audience cannot be registered.
 */
import http from 'node:http';
import type net from 'node:net';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { errorBody, UhlpError } from '../shared/errors.js';
import { bindListener, enforceAudiences, LISTENERS, type Audience, type ListenerName } from './route-audience.js';

let app: FastifyInstance | undefined;
const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  await app?.close();
  app = undefined;
});

/** One route per audience, each counting its calls, behind the gate. */
async function gatedApp(operatorHosts: readonly string[] = []): Promise<{ app: FastifyInstance; calls: Map<Audience, number> }> {
  const calls = new Map<Audience, number>();
  app = Fastify();
  app.setErrorHandler((error, request, reply) => {
    const uhlp = error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', String(error));
    return reply.code(uhlp.statusCode).send(errorBody(uhlp, request.id));
  });
  const audiences = enforceAudiences(app, { operatorHosts });
  for (const audience of ['apps', 'operators', 'sandboxes', 'probes'] as const) {
    audiences.declare(audience, () =>
      app!.get(`/${audience}`, async () => {
        calls.set(audience, (calls.get(audience) ?? 0) + 1);
        return { audience };
      }),
    );
  }
  await app.ready();
  return { app, calls };
}

/** A listener of the given name in front of the app's routes, as operator-server.ts and ingress-server.ts mark theirs. */
async function listener(routes: FastifyInstance, name: ListenerName): Promise<string> {
  const server = http.createServer(routes.routing);
  server.on('connection', (socket) => bindListener(socket, name));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

function get(url: string, host?: string): Promise<{ status: number; body: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const request = http.get(url, { headers: host !== undefined ? { host } : {} }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString()));
      response.on('end', () => resolve({ status: response.statusCode!, body: JSON.parse(text) as Record<string, unknown> }));
    });
    request.on('error', reject);
  });
}

describe('route audiences', () => {
  it('refuses to register a route that names no audience', async () => {
    app = Fastify();
    enforceAudiences(app);
    expect(() => app!.get('/nobody', async () => ({}))).toThrow(/registered without an audience/);
  });

  it('keeps the audience a route names itself, inside or outside a declaration', async () => {
    app = Fastify();
    const audiences = enforceAudiences(app);
    app.get('/own', { config: { audience: 'operators' } }, async () => ({}));
    audiences.declare('apps', () => app!.get('/scoped', { config: { audience: 'sandboxes' } }, async () => ({})));
    await app.ready();
    expect(audiences.routes().filter((route) => route.method === 'GET')).toEqual([
      { method: 'GET', url: '/own', audience: 'operators' },
      { method: 'GET', url: '/scoped', audience: 'sandboxes' },
    ]);
  });

  const cases = (['app', 'operator'] as const).flatMap((name) =>
    (['apps', 'operators', 'sandboxes', 'probes'] as const).map((audience) => [name, audience, LISTENERS[name].audiences.includes(audience)] as const),
  );
  it.each(cases)('on the %s listener, a route for %s answers: %s', async (name, audience, served) => {
    const { app: routes, calls } = await gatedApp();
    const base = await listener(routes, name);
    const answer = await get(`${base}/${audience}`);
    if (served) {
      expect(answer).toEqual({ status: 200, body: { audience } });
    } else {
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ code: 'UHLP_NOT_ON_THIS_LISTENER', details: { audience, listener: name } });
      expect(calls.get(audience)).toBeUndefined();
    }
  });

  it.each([
    ['rebind.example:8081', 421],
    ['attacker.test', 421],
    ['10.0.0.7:8081', 421],
    ['127.0.0.1:8081', 200],
    ['localhost:8081', 200],
    ['[::1]:8081', 200],
    ['ops.example.com', 200],
  ])('an operator route under Host %s answers %d, before its handler when refused', async (host, status) => {
    const { app: routes, calls } = await gatedApp(['ops.example.com']);
    const base = await listener(routes, 'operator');
    const answer = await get(`${base}/operators`, host);
    expect(answer.status).toBe(status);
    if (status === 421) {
      expect(answer.body).toMatchObject({ code: 'UHLP_HOST_NOT_ALLOWED', details: { host } });
      expect(calls.get('operators')).toBeUndefined();
    }
    // Probes and the other audiences extend no loopback trust: the Host rule is the operators' alone.
    expect((await get(`${base}/probes`, host)).status).toBe(200);
  });

  it('applies the Host rule to inject() too, where no listener marked the connection', async () => {
    const { app: routes } = await gatedApp();
    expect((await routes.inject({ url: '/operators', headers: { host: 'rebind.example' } })).json()).toMatchObject({ code: 'UHLP_HOST_NOT_ALLOWED' });
    expect((await routes.inject({ url: '/operators' })).statusCode).toBe(200);
  });
});

describe('trust in a loopback operator, decided by the gate alone', () => {
  /** A loopback-only operator route, a plain operator route that reads the gate's finding, and an app route; each counting its calls. */
  async function trustApp(): Promise<{ app: FastifyInstance; calls: string[]; seen: unknown[] }> {
    const calls: string[] = [];
    const seen: unknown[] = [];
    app = Fastify();
    app.setErrorHandler((error, request, reply) => {
      const uhlp = error instanceof UhlpError ? error : new UhlpError('UHLP_INTERNAL', String(error));
      return reply.code(uhlp.statusCode).send(errorBody(uhlp, request.id));
    });
    const audiences = enforceAudiences(app);
    audiences.declare('operators', () => {
      app!.post('/only', { config: { loopbackOnly: { route: '/only', code: 'UHLP_ORACLE_FORBIDDEN' } } }, async () => {
        calls.push('only');
        return {};
      });
      app!.get('/reads', async (request) => {
        calls.push('reads');
        seen.push(request.operatorClient);
        return {};
      });
    });
    audiences.declare('apps', () =>
      app!.get('/app', async (request) => {
        seen.push(request.operatorClient);
        return {};
      }),
    );
    await app.ready();
    return { app, calls, seen };
  }

  it.each([
    ['the CLI on loopback', '127.0.0.1', {}, 200],
    ['IPv6 loopback', '::1', {}, 200],
    ['IPv4 loopback mapped in IPv6', '::ffff:127.0.0.1', {}, 200],
    ['a same-origin page', '127.0.0.1', { 'sec-fetch-site': 'same-origin', origin: 'http://127.0.0.1:8080' }, 200],
    ['a client beyond loopback', '10.0.0.7', {}, 403],
    ['a client beyond loopback in IPv6', '2001:db8::1', {}, 403],
    ['a page of another site in a loopback browser (CSRF)', '127.0.0.1', { 'sec-fetch-site': 'cross-site' }, 403],
    ['a page whose Origin is another port of this machine', '127.0.0.1', { origin: 'http://127.0.0.1:9999' }, 403],
  ])('a loopback-only route answers %s: %s', async (_name, remoteAddress, headers, status) => {
    const { app: gated, calls } = await trustApp();
    const response = await gated.inject({ method: 'POST', url: '/only', remoteAddress, headers: { host: '127.0.0.1:8080', 'content-type': 'text/plain', ...headers }, payload: 'x' });
    expect(response.statusCode).toBe(status);
    if (status === 403) {
      // The route's own code, and its handler never ran.
      expect(response.json()).toMatchObject({ code: 'UHLP_ORACLE_FORBIDDEN' });
      expect(calls).toEqual([]);
    } else expect(calls).toEqual(['only']);
  });

  it("tells an operator route what it found of the client, and no other route anything", async () => {
    const { app: gated, seen } = await trustApp();
    await gated.inject({ method: 'GET', url: '/reads', remoteAddress: '127.0.0.1' });
    await gated.inject({ method: 'GET', url: '/reads', remoteAddress: '10.1.2.3' });
    await gated.inject({ method: 'GET', url: '/reads', remoteAddress: '127.0.0.1', headers: { origin: 'https://evil.example' } });
    await gated.inject({ method: 'GET', url: '/app', remoteAddress: '127.0.0.1' });
    expect(seen).toEqual([
      { loopback: true, refusal: undefined },
      { loopback: false, refusal: 'the client 10.1.2.3 is not on loopback' },
      { loopback: true, refusal: "Origin https://evil.example is not this core's" },
      undefined,
    ]);
  });
});
