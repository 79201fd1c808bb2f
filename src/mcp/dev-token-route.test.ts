import Fastify from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { enforceAudiences } from '../core/route-audience.js';
import type { ApplicationRegistry } from '../apps/application-registry.js';
import { DEV_MCP_TOKEN_PATH, registerDevTokenRoute } from './dev-token-route.js';
import type { GrantBinding } from './mcp-token-service.js';

const minted: Array<{ binding: GrantBinding; ttlMs: number }> = [];
const mcp = {
  beginExecution(binding: GrantBinding, ttlMs: number): string {
    minted.push({ binding, ttlMs });
    return `token-${minted.length}`;
  },
  endExecution: () => ({ calls: [], externalCalls: [], capabilityViolations: [], droppedEvidence: 0 }),
};
const registry = {
  snapshot: {
    apps: new Map([['shop', { revision: 'abc1234', document: { spec: { capabilities: { kv: { prefixes: ['a:'], ops: ['get'] } }, configuration: { x: 1 } } } }]]),
  },
} as unknown as ApplicationRegistry;

function appWith(devMode: boolean) {
  const app = Fastify();
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  // Behind the route audience gate, as the core registers it: the gate alone refuses a client that is not the loopback operator.
  enforceAudiences(app).declare('operators', () => registerDevTokenRoute(app, { devMode, registry, mcp, mcpEndpoint: () => 'http://127.0.0.1:1/mcp' }));
  return app;
}

const dev = appWith(true);
const prod = appWith(false);
afterAll(async () => {
  await dev.close();
  await prod.close();
});

const post = (app: ReturnType<typeof appWith>, body: string, remoteAddress = '127.0.0.1') =>
  app.inject({ method: 'POST', url: DEV_MCP_TOKEN_PATH, payload: body, headers: { 'content-type': 'application/json' }, remoteAddress });

describe(DEV_MCP_TOKEN_PATH, () => {
  it("mints a token bound to the app's current revision, capabilities and configuration", async () => {
    const response = await post(dev, JSON.stringify({ appId: 'shop', ttlSeconds: 60 }));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ appId: 'shop', revision: 'abc1234', mcp_url: 'http://127.0.0.1:1/mcp', token: 'token-1', expiresInSeconds: 60 });
    expect(minted[0]).toMatchObject({
      binding: { appId: 'shop', revision: 'abc1234', capabilities: { kv: { prefixes: ['a:'], ops: ['get'] } }, configuration: { x: 1 } },
      ttlMs: 60_000,
    });
  });

  it.each([
    ['outside dev mode', prod, '{"appId":"shop"}', '127.0.0.1', 403, 'UHLP_DEV_MODE_ONLY'],
    ['to a non-loopback client', dev, '{"appId":"shop"}', '10.0.0.5', 403, 'UHLP_DEV_MODE_ONLY'],
    ['for an unknown app', dev, '{"appId":"nope"}', '::1', 404, 'UHLP_APP_NOT_FOUND'],
    ['for a bad ttl', dev, '{"appId":"shop","ttlSeconds":0}', '127.0.0.1', 400, 'UHLP_BAD_REQUEST'],
    ['for a body that is not JSON', dev, 'appId=shop', '127.0.0.1', 400, 'UHLP_BAD_REQUEST'],
  ])('refuses %s', async (_name, app, body, remote, status, code) => {
    const before = minted.length;
    const response = await post(app, body, remote);
    expect(response.statusCode).toBe(status);
    expect(response.json().code).toBe(code);
    expect(minted).toHaveLength(before);
  });
});
