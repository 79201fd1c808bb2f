/**
 * `ctx.tools` of Python scripts (uhlp_tools.py) against the real CoreMCPServer on a
 * port-0 listener and on a Unix socket, as tools-client.test.ts tests the Node
 * runners' client: one JSON-RPC POST per call, structured content back, refusals
 * raised with the core's code, status and details, calls counted per tool.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PYTHON_PATH, PYTHON_FLAGS } from '../../images/python-runtime.js';
import { createScriptedProvider } from '../../llm/scripted-provider.js';
import { silentLogger } from '../../logger.js';
import { type CoreMcpServer, createCoreMcpServer } from '../../mcp/core-mcp-server.js';
import { createMetrics } from '../../metrics.js';
import { MemoryRuntimeStore } from '../../state/memory-runtime-store.js';
import { pythonRunnerDir } from '../../../test/helpers/python-runner.js';

/** Runs the steps of a plan with uhlp_tools in a Python of its own; prints what each answered or raised, and the metrics. */
const PLAN_RUNNER = `
import json, sys
from uhlp_tools import ExecutionTools, ToolCallError
plan = json.load(sys.stdin)
tools = ExecutionTools(plan["endpoint"], plan.get("token"), plan.get("socket"))
results = []
for step in plan["steps"]:
    try:
        if step.get("list"):
            value = [tool["name"] for tool in tools.list_tools()]
        elif step.get("attr"):
            target = tools
            for part in step["name"].split("."):
                target = getattr(target, part)
            value = target(**step.get("args", {}))
        else:
            value = tools.call(step["name"], step.get("args"))
        results.append({"ok": value})
    except ToolCallError as error:
        results.append({"error": {"code": error.code, "message": error.message, "status": error.status, "details": error.details}})
tools.close()
print(json.dumps({"results": results, "metrics": tools.metrics()}))
`;
import { mintTestExecution } from '../../../test/helpers/mcp-test-execution.js';

interface Step {
  name?: string;
  args?: Record<string, unknown>;
  attr?: boolean;
  list?: boolean;
}
interface PlanAnswer {
  results: Array<{ ok?: any; error?: { code: string; message: string; status: number | null; details: any } }>;
  metrics: Array<{ tool: string; count: number; total_duration_ms: number; token_usage?: { prompt: number; completion: number } }>;
}

let app: FastifyInstance;
let unix: http.Server;
let mcp: CoreMcpServer;
let endpoint: string;
let socket: string;
let runnerDir: string;
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
  // The same routes on a Unix socket, as sandboxes reach the core.
  socket = path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-pytools-')), 'mcp.sock');
  unix = http.createServer(app.routing);
  await new Promise<void>((resolve) => unix.listen(socket, resolve));
  runnerDir = pythonRunnerDir();
});

afterAll(async () => {
  unix?.closeAllConnections();
  await new Promise((resolve) => unix?.close(resolve) ?? resolve(undefined));
  await app?.close();
  await mcp?.close();
  await store.close();
});

const mint = (): string => mintTestExecution(mcp);

/** Runs `steps` in a Python child; the test's own event loop keeps serving the core meanwhile. */
function runPlan(plan: { endpoint: string; token?: string; socket?: string; steps: Step[] }): Promise<PlanAnswer> {
  return new Promise((resolve, reject) => {
    // `-c` puts the working directory first on the path: uhlp_tools is found there, as a script finds it next to the runner.
    const child = spawn(DEFAULT_PYTHON_PATH, [...PYTHON_FLAGS, '-c', PLAN_RUNNER], { cwd: runnerDir, env: {}, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as PlanAnswer) : reject(new Error(`python exited ${code}: ${err}`))));
    child.stdin.end(JSON.stringify(plan));
  });
}

describe('uhlp_tools', () => {
  it('calls tools by name or by attribute and answers their structured content, over TCP and over a Unix socket', async () => {
    for (const transport of [{ endpoint }, { endpoint: 'http://core/mcp', socket }]) {
      const { results } = await runPlan({
        ...transport,
        token: mint(),
        steps: [
          { name: 'core.kv.set', args: { key: 'ctr:a', value: [1, 2] }, attr: true },
          { name: 'core.kv.get', args: { key: 'ctr:a' } },
          { name: 'core.framework.getConfigValue', args: { key: 'who' } },
          { name: 'core.llm.generate', args: { prompt: 'hi' } },
        ],
      });
      expect(results.map((result) => result.ok)).toEqual([{ ok: true }, { value: [1, 2] }, { value: 'me', found: true }, expect.objectContaining({ text: 'scripted answer', model: 'm' })]);
    }
  });

  it("lists the app's tools, and does not count the listing as a call", async () => {
    const { results, metrics } = await runPlan({ endpoint, token: mint(), steps: [{ list: true }] });
    expect(results[0]!.ok).toEqual(expect.arrayContaining(['core.kv.get', 'core.kv.set', 'core.llm.generate']));
    expect(results[0]!.ok).not.toContain('core.linux.executeCommand');
    expect(metrics).toEqual([]);
  });

  it("raises the core's code, status and details for a refusal", async () => {
    const { results } = await runPlan({
      endpoint,
      token: mint(),
      steps: [
        { name: 'core.kv.get', args: { key: 'secret:a' } },
        { name: 'core.linux.executeCommand', args: { argv: ['ls'] } },
      ],
    });
    expect(results[0]!.error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'kv', rule: 'prefixes' } });
    expect(results[1]!.error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'shell', rule: 'absent' } });
  });

  it('is unauthorized without a token and with a revoked one, and fails clearly when the core is unreachable', async () => {
    const token = mint();
    mcp.endExecution(token);
    const closed = new URL(endpoint);
    closed.port = '1';
    const [none, revoked, unreachable] = await Promise.all([
      runPlan({ endpoint, steps: [{ name: 'core.log', args: { message: 'x' } }] }),
      runPlan({ endpoint, token, steps: [{ name: 'core.log', args: { message: 'x' } }] }),
      runPlan({ endpoint: closed.href, token, steps: [{ name: 'core.log', args: { message: 'x' } }] }),
    ]);
    expect(none.results[0]!.error).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED', status: 401 });
    expect(revoked.results[0]!.error).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED', status: 401 });
    expect(unreachable.results[0]!.error).toMatchObject({ code: 'UHLP_MCP_CALL_FAILED', status: 502, message: expect.stringMatching(/unreachable/) });
  });

  it('counts calls per tool with their time and LLM tokens, failed calls included, as the core counts them', async () => {
    const token = mint();
    const { metrics } = await runPlan({
      endpoint,
      token,
      steps: [
        { name: 'core.kv.get', args: { key: 'ctr:x' } },
        { name: 'core.kv.get', args: { key: 'nope' } },
        { name: 'core.llm.generate', args: { prompt: 'hello there' } },
      ],
    });
    expect(metrics.map((m) => [m.tool, m.count])).toEqual([
      ['core.kv.get', 2],
      ['core.llm.generate', 1],
    ]);
    expect(metrics[1]!.token_usage!.completion).toBeGreaterThan(0);
    for (const metric of metrics) expect(metric.total_duration_ms).toBeGreaterThan(0);
    const record = mcp.endExecution(token);
    expect(record.calls.map((m) => [m.tool, m.count])).toEqual([
      ['core.kv.get', 2],
      ['core.llm.generate', 1],
    ]);
  });
});
