/**
 * The core's MCP endpoint on a real port, reached by the clients it must serve:
 * the SDK v2 client on the 2026-07-28 revision (server/discover, the _meta
 * envelope, the standard headers), the same client on the 2025 handshake, and
 * the v1 SDK (2025-11-25). Also what a hand-written request gets wrong.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../llm/scripted-provider.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { createCoreMcpServer, type CoreMcpServer } from './core-mcp-server.js';

const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-protocol-'));
const store = new MemoryRuntimeStore();
let mcp: CoreMcpServer;
let app: FastifyInstance;
let url: URL;
let token: string;
const binding = {
  appId: 'a',
  componentId: 'c',
  requestId: 'r',
  revision: 'abc1234',
  capabilities: { kv: { prefixes: ['p/'], ops: ['get', 'set', 'del'] } },
  configuration: {},
} as never;

beforeAll(async () => {
  mcp = createCoreMcpServer({
    kv: store.kv,
    llmState: store.llm,
    llm: createScriptedProvider({ entries: [] }),
    revisionsRoot: path.join(root, 'revisions'),
    scratchRoot: path.join(root, 'scratch'),
    metrics: createMetrics({ defaultMetrics: false }),
    logger: silentLogger(),
  });
  app = Fastify();
  mcp.register(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address() as { port: number };
  url = new URL(`http://127.0.0.1:${address.port}/mcp`);
  token = mcp.beginExecution(binding, 60_000);
});

afterAll(async () => {
  await app.close();
  await mcp.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
});

const auth = (): RequestInit => ({ headers: { authorization: `Bearer ${token}` } });

describe('the core MCP endpoint, both protocol eras', () => {
  it('serves an SDK v2 client on 2026-07-28: discover, list, call', async () => {
    const client = new Client({ name: 't', version: '1' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(url, { requestInit: auth() }));
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getDiscoverResult()?.supportedVersions).toContain('2026-07-28');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name)).toContain('core.kv.set');
    expect(tools.map((tool) => tool.name)).not.toContain('core.linux.executeCommand');
    await client.callTool({ name: 'core.kv.set', arguments: { key: 'p/x', value: 'one' } });
    const got = await client.callTool({ name: 'core.kv.get', arguments: { key: 'p/x' } });
    expect(got.structuredContent).toMatchObject({ value: 'one' });
    const refused = await client.callTool({ name: 'core.kv.get', arguments: { key: 'q/x' } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED' });
    await client.close();
  });

  it('serves the same SDK on the 2025 handshake, and the v1 SDK', async () => {
    const legacy = new Client({ name: 't', version: '1' });
    await legacy.connect(new StreamableHTTPClientTransport(url, { requestInit: auth() }));
    expect(legacy.getProtocolEra()).toBe('legacy');
    expect((await legacy.listTools()).tools.length).toBeGreaterThan(0);
    await legacy.close();

    const v1 = new ClientV1({ name: 't', version: '1' });
    await v1.connect(new TransportV1(url, { requestInit: auth() }));
    const got = await v1.callTool({ name: 'core.kv.get', arguments: { key: 'p/x' } });
    expect(got.structuredContent).toMatchObject({ value: 'one' });
    await v1.close();
  });

  it('keeps concurrent requests with the same JSON-RPC id apart', async () => {
    const call = (key: string, tool = 'core.kv.set'): Promise<Response> =>
      fetch(url, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': 'tools/call',
          'mcp-name': tool,
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: tool, arguments: tool === 'core.kv.set' ? { key, value: key } : { key }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
        }),
      });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => call(`p/k${i}`).then((response) => response.json() as Promise<Record<string, any>>)));
    for (const answer of answers) expect(answer).toMatchObject({ id: 1, result: { resultType: 'complete' } });
    const reads = await Promise.all(Array.from({ length: 20 }, (_, i) => call(`p/k${i}`, 'core.kv.get').then((response) => response.json() as Promise<Record<string, any>>)));
    reads.forEach((answer, i) => expect(answer['result'].structuredContent).toMatchObject({ value: `p/k${i}` }));
  });

  it.each([
    ['no Mcp-Method header', { 'mcp-protocol-version': '2026-07-28' }, 400, -32020],
    ['an Mcp-Name that is not the body name', { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'core.kv.del' }, 400, -32020],
  ])('refuses a 2026-07-28 request with %s', async (_label, headers, status, code) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'core.kv.get', arguments: { key: 'p/x' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    });
    expect(response.status).toBe(status);
    expect(((await response.json()) as { error: { code: number } }).error.code).toBe(code);
  });

  it('streams subscriptions/listen: the acknowledged filter, list changes, and the result when the token ends', async () => {
    const listenToken = mcp.beginExecution(binding, 60_000);
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${listenToken}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'sub-1',
        method: 'subscriptions/listen',
        params: { notifications: { toolsListChanged: true, promptsListChanged: true }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
      }),
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/text\/event-stream/);
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const messages = async (count: number): Promise<any[]> => {
      for (;;) {
        const found = [...text.matchAll(/^data: (.*)$/gm)].map((match) => JSON.parse(match[1]!));
        if (found.length >= count) return found;
        const { done, value } = await reader.read();
        if (done) return found;
        text += decoder.decode(value, { stream: true });
      }
    };
    const [ack] = await messages(1);
    // Only what the core has: tools; no prompts, no resources.
    expect(ack).toEqual({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' }, notifications: { toolsListChanged: true } } });
    mcp.endExecution(listenToken);
    const all = await messages(2);
    expect(all[1]).toMatchObject({ jsonrpc: '2.0', id: 'sub-1', result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } });
  });

  it('answers 401 without a token, before any MCP parsing', async () => {
    const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(response.status).toBe(401);
  });
});
