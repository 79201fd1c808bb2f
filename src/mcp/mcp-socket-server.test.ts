/**
 * The core's Unix socket for sandboxes, served by the core's own HTTP/1.1
 * server: tool calls from the runners' own client, the refusals fastify's /mcp
 * route gives (401, 403, 405, 404, 413), every answer with its request id and
 * counted, and a call stopped when its client goes away.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../test/helpers/wait-for.js';
import type { LlmGenerateRequest, LlmProvider } from '../llm/llm-provider.js';
import { silentLogger } from '../logger.js';
import { Http1Server } from '../shared/http1/http1-server.js';
import { createMetrics, type Metrics } from '../metrics.js';
import { ExecutionTools } from '../runners/kit/tools-client.js';
import { unixSocketPost } from '../runners/kit/unix-socket-fetch.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { type CoreMcpServer, createCoreMcpServer } from './core-mcp-server.js';
import { McpSocketServer } from './mcp-socket-server.js';
import { mintTestExecution, toolCallRefusal } from '../../test/helpers/mcp-test-execution.js';

const LIMIT = 64 * 1024;
const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-socket-'));
const socketPath = path.join(root, 'mcp.sock');
const store = new MemoryRuntimeStore();
/** LLM calls that answer only when told, and tell when they were aborted. */
const llmCalls: Array<{ request: LlmGenerateRequest; aborted: boolean; answer: (text: string) => void }> = [];
const provider: LlmProvider = {
  kind: 'held',
  defaultModel: 'm',
  generate: (request) =>
    new Promise((resolve, reject) => {
      const call = {
        request,
        aborted: false,
        answer: (text: string) => resolve({ text, toolCalls: [], model: 'm', finishReason: 'stop', usage: { prompt: 1, completion: 1 } }),
      };
      request.signal?.addEventListener('abort', () => {
        call.aborted = true;
        reject(new Error('aborted'));
      });
      llmCalls.push(call);
    }),
};
let metrics: Metrics;
let mcp: CoreMcpServer;
let socket: McpSocketServer;

beforeAll(async () => {
  metrics = createMetrics({ defaultMetrics: false });
  mcp = createCoreMcpServer({
    kv: store.kv,
    llmState: store.llm,
    llm: provider,
    revisionsRoot: '/nonexistent',
    scratchRoot: '/nonexistent',
    metrics,
    logger: silentLogger(),
    bodyLimitBytes: LIMIT,
  });
  socket = new McpSocketServer({ mcp, metrics, logger: silentLogger() });
  await socket.listen(socketPath);
});

afterAll(async () => {
  await socket?.close();
  await mcp?.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
});

const mint = (): string => mintTestExecution(mcp);

const tools = (token: string | undefined): ExecutionTools => new ExecutionTools({ endpoint: 'http://core/mcp', token, post: unixSocketPost(socketPath) });

const thrown = toolCallRefusal;

/** One request over the socket, on a connection of its own. */
function overSocket(method: string, target: string, headers: Record<string, string> = {}, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, method, path: target, headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    request.on('error', reject);
    request.end(body);
  });
}

async function countOf(status: string): Promise<number> {
  const metric = (await metrics.requests.get()).values.find((value) => value.labels['status'] === status && value.labels['app'] === '');
  return metric?.value ?? 0;
}

describe('McpSocketServer', () => {
  it("answers the runners' tool calls: structured results, capability refusals, and 401 without a token", async () => {
    const client = tools(mint());
    expect(await client.call('core.kv.set', { key: 'ctr:a', value: [1, 2] })).toEqual({ ok: true });
    expect(await client.call('core.kv.get', { key: 'ctr:a' })).toEqual({ value: [1, 2] });
    expect(await client.call('core.framework.getConfigValue', { key: 'who' })).toEqual({ value: 'me', found: true });
    expect(await thrown(client.call('core.kv.get', { key: 'secret:a' }))).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', status: 403 });
    expect(await thrown(tools(undefined).call('core.kv.get', { key: 'ctr:a' }))).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED', status: 401 });
    const anonymous = await overSocket('POST', '/mcp', { 'content-type': 'application/json' }, '{}');
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="uhlp-mcp"');
    expect(JSON.parse(anonymous.text)).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED', requestId: anonymous.headers['x-request-id'] });
  });

  it('answers a body that is not JSON with a JSON-RPC parse error', async () => {
    const answer = await overSocket('POST', '/mcp', { authorization: `Bearer ${mint()}`, 'content-type': 'application/json' }, '{"jsonrpc":');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.text)).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null });
  });

  it('refuses a body over its limit 413 UHLP_BODY_TOO_LARGE with the limit named, however far over, and serves the next call', async () => {
    const client = tools(mint());
    for (const size of [LIMIT, 8 * 1024 * 1024]) {
      const error = await thrown(client.call('core.kv.set', { key: 'ctr:x', value: 'v'.repeat(size) }));
      expect(error).toMatchObject({ code: 'UHLP_BODY_TOO_LARGE', status: 413, details: { field: 'body', limitBytes: LIMIT } });
    }
    expect(await client.call('core.kv.set', { key: 'ctr:x', value: 'v'.repeat(LIMIT - 1024) })).toEqual({ ok: true });
  });

  it.each([
    ['GET', '/mcp', 405],
    ['DELETE', '/mcp', 405],
    ['HEAD', '/mcp', 405],
    ['PUT', '/mcp', 404],
    ['POST', '/mcp/', 404],
    ['POST', '/%6dcp', 404],
    ['GET', '/metrics', 404],
    ['POST', 'http://localhost/mcp', 404],
  ])('answers %s %s with %i, its request id, and counts it', async (method, target, status) => {
    const before = await countOf(String(status));
    const answer = await overSocket(method, target, { 'x-request-id': 'req-socket-1' });
    expect(answer.status).toBe(status);
    expect(answer.headers['x-request-id']).toBe('req-socket-1');
    if (status === 405) expect(answer.headers['allow']).toBe('POST');
    if (method !== 'HEAD') {
      const body = JSON.parse(answer.text) as Record<string, unknown>;
      if (status === 404) expect(body).toMatchObject({ code: 'UHLP_ROUTE_NOT_FOUND', requestId: 'req-socket-1' });
      else expect(body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 } });
    }
    expect(await countOf(String(status))).toBe(before + 1);
  });

  // A Unix socket has no reset, and a client that only half-closes still gets its answer (as with node:http before):
  // the MCP server's HTTP/1.1 entry is told of a reset on a TCP listener of the same server.
  it('stops a tool call whose client goes away, and answers the next one', async () => {
    const token = mint();
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'core.llm.generate', arguments: { prompt: 'wait' } } });
    const tcp = new Http1Server({
      limits: { maxHeadBytes: 16 * 1024, maxBodyBytes: LIMIT },
      onRequest: (request, respond, onGone) => mcp.serveHttp1(request, 'req-tcp', respond, onGone),
      onBadRequest: () => ({ status: 400 }),
    });
    const { port } = (await tcp.listen({ host: '127.0.0.1', port: 0 })) as net.AddressInfo;
    const client = net.connect({ host: '127.0.0.1', port });
    await once(client, 'connect');
    client.write(
      `POST /mcp HTTP/1.1\r\nhost: core\r\nauthorization: Bearer ${token}\r\ncontent-type: application/json\r\n` +
        `accept: application/json, text/event-stream\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await waitFor(() => llmCalls.length === 1, { what: 'the LLM call to start' });
    client.resetAndDestroy();
    await waitFor(() => llmCalls[0]!.aborted, { what: 'the LLM call to be aborted' });
    await tcp.close();
    const next = tools(token).call('core.llm.generate', { prompt: 'answer' });
    await waitFor(() => llmCalls.length === 2, { what: 'the next LLM call to start' });
    llmCalls[1]!.answer('done');
    expect(await next).toMatchObject({ text: 'done' });
    expect(llmCalls[1]!.aborted).toBe(false);
  });
});
