/**
 * The runner's ctx.tools client against the real CoreMCPServer on a port-0
 * listener: one JSON-RPC POST per call, structured content back, tool errors
 * thrown with the core's code and status.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../../llm/scripted-provider.js';
import { silentLogger } from '../../logger.js';
import { type CoreMcpServer, createCoreMcpServer } from '../../mcp/core-mcp-server.js';
import { MemoryRuntimeStore } from '../../state/memory-runtime-store.js';
import { createMetrics } from '../../metrics.js';
import { ExecutionTools, ToolCallError } from './tools-client.js';
import { unixSocketFetch, unixSocketPost } from './unix-socket-fetch.js';
import { mintTestExecution, toolCallRefusal } from '../../../test/helpers/mcp-test-execution.js';

let app: FastifyInstance;
let mcp: CoreMcpServer;
let endpoint: string;
const store = new MemoryRuntimeStore();

beforeAll(async () => {
  mcp = createCoreMcpServer({
    kv: store.kv,
    llmState: store.llm,
    llm: createScriptedProvider({ entries: [], default: 'scripted answer' }),
    revisionsRoot: '/nonexistent',
    scratchRoot: '/nonexistent',
    metrics: createMetrics({ defaultMetrics: false }),
    logger: silentLogger(),
  });
  app = Fastify();
  // As in the core: bodies arrive as bytes whatever their content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  mcp.register(app);
  endpoint = `${await app.listen({ host: '127.0.0.1', port: 0 })}/mcp`;
});

afterAll(async () => {
  await app?.close();
  await mcp?.close();
  await store.close();
});

const mint = (): string => mintTestExecution(mcp);

const thrown = toolCallRefusal;

describe('ExecutionTools', () => {
  it('calls tools and answers their structured content', async () => {
    const tools = new ExecutionTools({ endpoint, token: mint() });
    expect(await tools.call('core.kv.set', { key: 'ctr:a', value: [1, 2] })).toEqual({ ok: true });
    expect(await tools.call('core.kv.get', { key: 'ctr:a' })).toEqual({ value: [1, 2] });
    expect(await tools.call('core.framework.getConfigValue', { key: 'who' })).toEqual({ value: 'me', found: true });
    expect(await tools.call('core.llm.generate', { prompt: 'hi' })).toMatchObject({ text: 'scripted answer', model: 'm' });
  });

  it("lists the app's tools with their argument schemas, and does not count the listing as a call", async () => {
    const tools = new ExecutionTools({ endpoint, token: mint() });
    const listed = await tools.listTools();
    const names = listed.map((tool) => tool.name);
    expect(names).toEqual(expect.arrayContaining(['core.kv.get', 'core.kv.set', 'core.llm.generate', 'core.state.getDefinitionFileContent']));
    // Tools of capabilities the app lacks are not listed.
    expect(names).not.toContain('core.linux.executeCommand');
    expect(listed.find((tool) => tool.name === 'core.kv.get')).toMatchObject({ description: expect.any(String), inputSchema: { type: 'object', properties: { key: expect.any(Object) } } });
    expect(tools.metrics()).toEqual([]);
    await expect(new ExecutionTools({ endpoint, token: undefined }).listTools()).rejects.toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED' });
  });

  it("gives the client's own failures the registry's status", () => {
    expect(ToolCallError.of('UHLP_MCP_CALL_FAILED', 'unreachable', { why: 'x' })).toMatchObject({ name: 'ToolCallError', code: 'UHLP_MCP_CALL_FAILED', message: 'unreachable', status: 502, details: { why: 'x' } });
    expect(ToolCallError.of('UHLP_MCP_UNAUTHORIZED', 'no token').status).toBe(401);
  });

  it("throws the core's code, status and details for a refusal", async () => {
    const tools = new ExecutionTools({ endpoint, token: mint() });
    const error = await thrown(tools.call('core.kv.get', { key: 'secret:a' }));
    expect(error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'kv', rule: 'prefixes' } });
    expect((await thrown(tools.call('core.linux.executeCommand', { argv: ['ls'] }))).details).toMatchObject({ capability: 'shell', rule: 'absent' });
  });

  it('is unauthorized without a token, with a revoked one, and fails clearly when the core is unreachable', async () => {
    expect((await thrown(new ExecutionTools({ endpoint, token: undefined }).call('core.log', { message: 'x' }))).code).toBe('UHLP_MCP_UNAUTHORIZED');
    const token = mint();
    mcp.endExecution(token);
    expect(await thrown(new ExecutionTools({ endpoint, token }).call('core.log', { message: 'x' }))).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED', status: 401 });
    const closedPort = new URL(endpoint);
    closedPort.port = '1';
    expect((await thrown(new ExecutionTools({ endpoint: closedPort.href, token }).call('core.log', { message: 'x' }))).code).toBe('UHLP_MCP_CALL_FAILED');
  });

  it('counts calls per tool with their time and LLM tokens, failed calls included', async () => {
    const token = mint();
    const tools = new ExecutionTools({ endpoint, token });
    await tools.call('core.kv.get', { key: 'ctr:x' });
    await thrown(tools.call('core.kv.get', { key: 'nope' }));
    await tools.call('core.llm.generate', { prompt: 'hello there' });
    const metrics = tools.metrics();
    expect(metrics.map((m) => [m.tool, m.count])).toEqual([
      ['core.kv.get', 2],
      ['core.llm.generate', 1],
    ]);
    expect(metrics[1]!.token_usage!.completion).toBeGreaterThan(0);
    for (const metric of metrics) expect(metric.total_duration_ms).toBeGreaterThan(0);
    // The core kept its own record of the same execution, with the evidence for the ledger.
    const record = mcp.endExecution(token);
    expect(record.calls.map((m) => [m.tool, m.count])).toEqual([
      ['core.kv.get', 2],
      ['core.llm.generate', 1],
    ]);
    expect(record.externalCalls.map((call) => [call.kind, call.target, call.status])).toEqual([
      ['mcp', 'core.kv.get', 'ok'],
      ['mcp', 'core.kv.get', 'UHLP_CAPABILITY_DENIED'],
      // The LLM call the tool made, then the tool call that made it.
      ['llm', 'scripted', 'ok'],
      ['mcp', 'core.llm.generate', 'ok'],
    ]);
    expect(record.capabilityViolations).toEqual([
      { operation: 'core.kv.get nope', capability: 'capabilities.kv.prefixes', detail: expect.stringContaining('outside the allowed prefixes'), timestamp: expect.any(String) },
    ]);
    expect(mcp.endExecution(token)).toEqual({ calls: [], externalCalls: [], capabilityViolations: [], droppedEvidence: 0 });
  });
});

describe("the MCP endpoint's own body limit", () => {
  /** A second core-like app whose endpoint reads at most 64 KiB, on TCP and on a Unix socket, as the core serves /mcp. */
  let small: { app: FastifyInstance; mcp: CoreMcpServer; endpoint: string; socket: string; unix: http.Server };
  const LIMIT = 64 * 1024;

  beforeAll(async () => {
    const smallMcp = createCoreMcpServer({
      kv: store.kv,
      llmState: store.llm,
      llm: createScriptedProvider({ entries: [] }),
      revisionsRoot: '/nonexistent',
      scratchRoot: '/nonexistent',
      metrics: createMetrics({ defaultMetrics: false }),
      logger: silentLogger(),
      bodyLimitBytes: LIMIT,
    });
    const smallApp = Fastify();
    smallApp.removeAllContentTypeParsers();
    smallApp.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
    smallMcp.register(smallApp);
    const url = await smallApp.listen({ host: '127.0.0.1', port: 0 });
    const socket = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-limit-')), 'mcp.sock');
    const unix = http.createServer(smallApp.routing);
    await new Promise<void>((resolve) => unix.listen(socket, resolve));
    small = { app: smallApp, mcp: smallMcp, endpoint: `${url}/mcp`, socket, unix };
  });

  afterAll(async () => {
    small?.unix.closeAllConnections();
    await new Promise((resolve) => small?.unix.close(resolve) ?? resolve(undefined));
    await small?.app.close();
    await small?.mcp.close();
  });

  function mintOn(server: CoreMcpServer): string {
    return server.beginExecution(
      { appId: 'app-a', componentId: 'c', requestId: 'r2', revision: 'abc1234', capabilities: { kv: { prefixes: ['ctr:'], ops: ['get', 'set'] } }, configuration: {} },
      60_000,
    );
  }

  it("reads a request over the core's other routes' body limit (fastify's 1 MiB here) when it is within its own", async () => {
    const tools = new ExecutionTools({ endpoint, token: mint() });
    // Just under 1 MiB of value (what core.kv.set keeps): the request around it is over 1 MiB.
    const value = 'v'.repeat(1024 * 1024 - 64);
    expect(await tools.call('core.kv.set', { key: 'ctr:big', value })).toEqual({ ok: true });
    expect((await tools.call('core.kv.get', { key: 'ctr:big' }))['value']).toBe(value);
  });

  it('answers a request over its limit 413 UHLP_BODY_TOO_LARGE, over TCP and over a Unix socket (fetch-shaped or bare POSTs), however far over, and keeps serving', async () => {
    const token = mintOn(small.mcp);
    const clients = [
      new ExecutionTools({ endpoint: small.endpoint, token }),
      new ExecutionTools({ endpoint: 'http://core/mcp', token, fetch: unixSocketFetch(small.socket) }),
      new ExecutionTools({ endpoint: 'http://core/mcp', token, post: unixSocketPost(small.socket) }),
    ];
    for (const tools of clients) {
      for (const size of [LIMIT, 8 * 1024 * 1024]) {
        const error = await thrown(tools.call('core.kv.set', { key: 'ctr:x', value: 'v'.repeat(size) }));
        expect(error).toMatchObject({ code: 'UHLP_BODY_TOO_LARGE', status: 413, details: { field: 'body', limitBytes: LIMIT } });
      }
      expect(await tools.call('core.kv.set', { key: 'ctr:x', value: 'v'.repeat(LIMIT - 1024) })).toEqual({ ok: true });
    }
  });
});
