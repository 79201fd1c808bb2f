/**
 * The runner's ctx.tools client against the real CoreMCPServer on a port-0
 * listener: one JSON-RPC POST per call, structured content back, tool errors
 * thrown with the core's code and status.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScriptedProvider } from '../llm/scripted-provider.js';
import { silentLogger } from '../logger.js';
import { type CoreMcpServer, createCoreMcpServer } from '../mcp/core-mcp-server.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { createMetrics } from '../metrics.js';
import { ExecutionTools, ToolCallError } from './tools-client.js';

let app: FastifyInstance;
let mcp: CoreMcpServer;
let endpoint: string;
const store = new MemoryRuntimeStore();

beforeAll(async () => {
  mcp = createCoreMcpServer({
    kv: store,
    llmState: store,
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

function mint(): string {
  return mcp.beginExecution(
    {
      appId: 'app-a',
      componentId: 'c',
      requestId: 'r1',
      revision: 'abc1234',
      capabilities: { kv: { prefixes: ['ctr:'], ops: ['get', 'set'] }, llm: { models: ['m'], maxTokens: 8 } },
      configuration: { who: 'me' },
    },
    60_000,
  );
}

async function thrown(promise: Promise<unknown>): Promise<ToolCallError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ToolCallError);
    return error as ToolCallError;
  }
  throw new Error('the call did not throw');
}

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
