/**
 * How the core's MCP endpoint routes the start tool and the tasks extension
 * (run-task-calls.ts) on a real port, reached with raw 2026-07-28 requests and
 * the SDK v1 client (2025-11-25): the extension advertised in server/discover,
 * the start tool kept off the fast path (its task and input_required answers
 * reach the client as written), the client's declared capabilities and retry
 * fields handed on, task errors as JSON-RPC errors with the core's code, a
 * task method refused to a client that did not declare the extension, and the
 * paused run as a 2025 client's answer. The runs behind it are
 * test/mcp/run-tasks.test.ts's.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../llm/scripted-provider.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { createCoreMcpServer, type CoreMcpServer } from './core-mcp-server.js';
import type { ExecutionGrant } from './mcp-token-service.js';
import { START_TOOL, TASKS_EXTENSION, TaskRpcError, type McpResult, type RetryFields, type RunTaskCalls } from './run-task-calls.js';

/** Runs kept in a map: what the endpoint hands on is recorded, the answers are the extension's shapes. */
class MapRunTasks implements RunTaskCalls {
  readonly calls: Array<{ appId: string; args: unknown; asTask: boolean; retry: RetryFields }> = [];

  offers(grant: ExecutionGrant): boolean {
    return grant.appId === 'a';
  }

  async call(grant: ExecutionGrant, args: unknown, asTask: boolean, retry: RetryFields): Promise<McpResult> {
    this.calls.push({ appId: grant.appId, args, asTask, retry });
    if (asTask) return { resultType: 'task', taskId: 'RUN-1', status: 'working', createdAt: 'now', lastUpdatedAt: 'now', ttlMs: 1000, pollIntervalMs: 500 };
    if (retry.requestState === undefined) return { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create', params: { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } } } }, requestState: 'RUN-1' };
    return { content: [{ type: 'text', text: '{"done":true}' }], structuredContent: { done: true } };
  }

  async get(grant: ExecutionGrant, taskId: unknown): Promise<McpResult> {
    if (taskId !== 'RUN-1' || grant.appId !== 'a') throw new TaskRpcError(-32602, 'Failed to retrieve task: Task not found', { code: 'UHLP_MCP_TASK_NOT_FOUND' });
    return { resultType: 'complete', taskId, status: 'working' };
  }

  async update(grant: ExecutionGrant, taskId: unknown): Promise<McpResult> {
    return this.get(grant, taskId).then(() => ({ resultType: 'complete' }));
  }

  async cancel(grant: ExecutionGrant, taskId: unknown): Promise<McpResult> {
    return this.get(grant, taskId).then(() => ({ resultType: 'complete' }));
  }
}

const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-mcp-tasks-'));
const store = new MemoryRuntimeStore();
const runTasks = new MapRunTasks();
let mcp: CoreMcpServer;
let app: FastifyInstance;
let url: URL;
let token: string;
const binding = { appId: 'a', componentId: 'c', requestId: 'r', revision: 'abc1234', capabilities: {}, configuration: {} } as never;

beforeAll(async () => {
  mcp = createCoreMcpServer({
    kv: store.kv,
    llmState: store.llm,
    llm: createScriptedProvider({ entries: [] }),
    revisionsRoot: path.join(root, 'revisions'),
    scratchRoot: path.join(root, 'scratch'),
    metrics: createMetrics({ defaultMetrics: false }),
    logger: silentLogger(),
    runTasks,
  });
  app = Fastify();
  mcp.register(app);
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = new URL(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`);
  token = mcp.beginExecution(binding, 60_000);
});

afterAll(async () => {
  await app.close();
  await mcp.close();
  await store.close();
  rmSync(root, { recursive: true, force: true });
});

/** One raw 2026-07-28 request; `extensions` are the client's declared ones. */
async function rpc(method: string, params: Record<string, unknown>, extensions?: Record<string, unknown>, name?: string, capabilities: Record<string, unknown> = {}): Promise<Record<string, any>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(name !== undefined ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method,
      params: { ...params, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { ...capabilities, ...(extensions !== undefined ? { extensions } : {}) } } },
    }),
  });
  return (await response.json()) as Record<string, any>;
}

const TASKS = { [TASKS_EXTENSION]: {} };
const ELICITS = { elicitation: { form: {} } };

describe('the start tool and the tasks extension on the core MCP endpoint', () => {
  it('advertises the extension and lists the tool to an app that has a workflow', async () => {
    const discover = await rpc('server/discover', {});
    expect(discover['result']['capabilities']['extensions']).toEqual(TASKS);
    const listed = await rpc('tools/list', {});
    expect(listed['result']['tools'].map((tool: { name: string }) => tool.name)).toContain(START_TOOL);
  });

  it('answers a task to a client that declares the extension, and input_required to one that does not', async () => {
    const task = await rpc('tools/call', { name: START_TOOL, arguments: { component: 'w' } }, TASKS, START_TOOL);
    expect(task['result']).toMatchObject({ resultType: 'task', taskId: 'RUN-1', status: 'working' });
    expect(runTasks.calls.at(-1)).toMatchObject({ asTask: true, args: { component: 'w' }, retry: {} });
    // input_required carries an elicitation: a client that declares none gets the paused run to decide over HTTP.
    const undeclared = await rpc('tools/call', { name: START_TOOL, arguments: { component: 'w' } }, undefined, START_TOOL);
    expect(undeclared['result']).toMatchObject({ resultType: 'complete', structuredContent: { runId: 'RUN-1', status: 'paused', inputRequests: { q: { method: 'elicitation/create' } } } });
    const asked = await rpc('tools/call', { name: START_TOOL, arguments: { component: 'w' } }, undefined, START_TOOL, ELICITS);
    expect(asked['result']).toMatchObject({ resultType: 'input_required', requestState: 'RUN-1', inputRequests: { q: { method: 'elicitation/create' } } });
    const retried = await rpc('tools/call', { name: START_TOOL, arguments: { component: 'w' }, requestState: 'RUN-1', inputResponses: { q: { action: 'accept', content: {} } } }, undefined, START_TOOL, ELICITS);
    expect(runTasks.calls.at(-1)).toMatchObject({ asTask: false, retry: { requestState: 'RUN-1', inputResponses: { q: { action: 'accept' } } } });
    expect(retried['result']).toMatchObject({ resultType: 'complete', structuredContent: { done: true } });
  });

  it('answers task methods, their errors as JSON-RPC errors with the core code, and refuses them without the extension', async () => {
    expect((await rpc('tasks/get', { taskId: 'RUN-1' }, TASKS, 'RUN-1'))['result']).toMatchObject({ resultType: 'complete', status: 'working' });
    expect((await rpc('tasks/update', { taskId: 'RUN-1', inputResponses: {} }, TASKS, 'RUN-1'))['result']).toMatchObject({ resultType: 'complete' });
    expect((await rpc('tasks/cancel', { taskId: 'RUN-1' }, TASKS, 'RUN-1'))['result']).toMatchObject({ resultType: 'complete' });
    expect((await rpc('tasks/get', { taskId: 'RUN-2' }, TASKS, 'RUN-2'))['error']).toMatchObject({ code: -32602, data: { code: 'UHLP_MCP_TASK_NOT_FOUND' } });
    expect((await rpc('tasks/get', { taskId: 'RUN-1' }, undefined, 'RUN-1'))['error']).toMatchObject({ code: -32021 });
  });

  it('gives a 2025-11-25 client the paused run instead of input_required', async () => {
    const v1 = new ClientV1({ name: 't', version: '1' });
    await v1.connect(new TransportV1(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    const answer = await v1.callTool({ name: START_TOOL, arguments: { component: 'w' } });
    expect(answer.structuredContent).toMatchObject({ runId: 'RUN-1', status: 'paused', inputRequests: { q: { method: 'elicitation/create' } } });
    await v1.close();
  });
});
