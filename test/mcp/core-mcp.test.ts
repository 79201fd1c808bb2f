/**
 * The CoreMCPServer through `uhlp dev`, with the official MCP SDK client: the
 * tool list per capability set, every tool called, every refusal, tokens that
 * reach only their own app and die with their execution, and a JIT script using
 * ctx.tools end to end. Shell and web go through the real endpoint spine and
 * the std-body host that `uhlp dev` runs as its child; web traffic stays on
 * this machine (a test server on 127.0.0.1).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UHLP_BIN, copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

const run = promisify(execFile);

let core: UhlpProcess;
let defsDir: string;
let web: http.Server;
let webPort: number;
/** A loopback port the web capability does not list: where the SSRF attempts aim. */
let forbidden: http.Server;
let forbiddenPort: number;
let forbiddenHits = 0;
const testVar = `v-${process.pid}-${Date.now()}`;
const clients: Client[] = [];

async function listen(server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

beforeAll(async () => {
  forbidden = http.createServer((_req, res) => {
    forbiddenHits += 1;
    res.end('you should not see this');
  });
  forbiddenPort = await listen(forbidden);
  web = http.createServer((req, res) => {
    if (req.url === '/hello') {
      res.setHeader('x-test', 'yes');
      res.end(`hello ${req.method}`);
    } else if (req.url === '/to-loopback') {
      res.writeHead(302, { location: `http://127.0.0.1:${forbiddenPort}/` }).end();
    } else {
      res.writeHead(404).end('no such page');
    }
  });
  webPort = await listen(web);

  const dir = copyFixture('mcp');
  defsDir = dir;
  const appFile = path.join(dir, 'apps', 'tooled', 'app.yaml');
  writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('WEB_PORT', String(webPort)));
  // The core reads these from its environment; uhlp dev inherits the test's.
  process.env.UHLP_LLM_SCRIPT_FILE = path.join(dir, 'llm-answers.yaml');
  process.env.UHLP_MCP_TEST_VAR = testVar;
  try {
    core = await startUhlpDev(dir);
  } finally {
    delete process.env.UHLP_LLM_SCRIPT_FILE;
    delete process.env.UHLP_MCP_TEST_VAR;
  }
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await core?.stop();
  web?.close();
  forbidden?.close();
});

async function git(...args: string[]): Promise<string> {
  return (await run('git', args, { cwd: defsDir })).stdout;
}

async function mcpToken(appId: string): Promise<{ url: string; token: string }> {
  const { stdout } = await run(process.execPath, [UHLP_BIN, 'mcp', 'token', appId, '--url', core.operatorUrl]);
  const lines = stdout.trimEnd().split('\n');
  expect(lines).toHaveLength(2);
  const [url, token] = [lines[0]!.replace(/^MCP_URL=/, ''), lines[1]!.replace(/^MCP_TOKEN=/, '')];
  expect(lines[0]).toBe(`MCP_URL=${url}`);
  expect(lines[1]).toBe(`MCP_TOKEN=${token}`);
  return { url, token };
}

async function connect(url: string, token: string): Promise<Client> {
  const client = new Client({ name: 'uhlp-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
  clients.push(client);
  return client;
}

async function clientFor(appId: string): Promise<Client> {
  const { url, token } = await mcpToken(appId);
  expect(url).toBe(`${core.url}/mcp`);
  return connect(url, token);
}

/** Calls a tool; answers its structured content, or `{error: {code, details, status}}` for a tool error. */
async function call(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = await client.callTool({ name, arguments: args });
  return result.isError ? { error: result.structuredContent } : result.structuredContent;
}

// core.fn.bundle and core.fn.log serve the csjs runner of every app (its own bundles and activation logs only).
const BASE_TOOLS = ['core.fn.bundle', 'core.fn.log', 'core.framework.getConfigValue', 'core.log', 'core.state.getDefinitionFileContent'];

describe('CoreMCPServer with the official MCP client', () => {
  let tooled: Client;
  let bare: Client;

  beforeAll(async () => {
    tooled = await clientFor('tooled');
    bare = await clientFor('bare');
  });

  it('lists only the tools the capabilities allow, each with an input schema', async () => {
    const all = (await tooled.listTools()).tools;
    expect(all.map((tool) => tool.name).sort()).toEqual(
      [...BASE_TOOLS, 'core.kv.del', 'core.kv.get', 'core.kv.set', 'core.linux.executeCommand', 'core.llm.embed', 'core.llm.generate', 'core.state.applyStateDiff', 'tool.web.fetch'].sort(),
    );
    for (const tool of all) expect(tool.inputSchema.type).toBe('object');
    expect((await bare.listTools()).tools.map((tool) => tool.name).sort()).toEqual([...BASE_TOOLS, 'core.kv.get'].sort());
  });

  it('refuses a missing or unknown token, and stops taking a token once its execution ended', async () => {
    await expect(connect(`${core.url}/mcp`, 'uhlp_mcp_not-a-real-token')).rejects.toThrow(/401|UHLP_MCP_UNAUTHORIZED/);
    const noToken = await fetch(`${core.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(noToken.status).toBe(401);
    expect(((await noToken.json()) as { code: string }).code).toBe('UHLP_MCP_UNAUTHORIZED');

    const leaked = (await (await fetch(`${core.url}/tooled/leak`)).json()) as { token: string; endpoint: string };
    expect(leaked.endpoint).toBe(`${core.url}/mcp`);
    expect(leaked.token).toMatch(/^uhlp_mcp_/);
    await expect(connect(leaked.endpoint, leaked.token)).rejects.toThrow(/401|UHLP_MCP_UNAUTHORIZED/);
  });

  it("reads definition files of the token's app only", async () => {
    expect(await call(tooled, 'core.state.getDefinitionFileContent', { path: 'prompts/hello.txt' })).toMatchObject({
      content: 'Say hello to {{ name }}.\n',
      encoding: 'utf8',
    });
    expect(await call(bare, 'core.state.getDefinitionFileContent', { path: 'prompts/hello.txt' })).toMatchObject({ error: { code: 'UHLP_DEFINITION_FILE_NOT_FOUND' } });
    expect(await call(bare, 'core.state.getDefinitionFileContent', { path: '../tooled/prompts/hello.txt' })).toMatchObject({
      error: { code: 'UHLP_DEFINITION_PATH_REFUSED', details: { field: 'path' } },
    });
  });

  it("commits a state diff to the token's app, and refuses one made against a revision that is no longer HEAD", async () => {
    const applied = (await call(tooled, 'core.state.applyStateDiff', {
      message: 'remember a note',
      changes: [{ path: 'notes/first.txt', content: 'written by the app\n' }],
    })) as { committed: boolean; changedPaths: string[]; commit: string };
    expect(applied).toMatchObject({ committed: true, changedPaths: ['notes/first.txt'] });
    expect(await call(tooled, 'core.state.applyStateDiff', { message: 'stale', changes: [{ path: 'notes/second.txt', content: 'x' }] })).toMatchObject({
      error: { code: 'UHLP_DEFINITION_BASE_MISMATCH', status: 409 },
    });
    expect(await call(tooled, 'core.state.applyStateDiff', { message: 'escape', changes: [{ path: '../bare/x.txt', content: 'x' }], expectedBase: applied.commit })).toMatchObject({
      error: { code: 'UHLP_DEFINITION_PATH_REFUSED' },
    });
  });

  it('writes only what the state capability allows, and never the file that grants capabilities', async () => {
    const head = (await call(tooled, 'core.state.getDefinitionFileContent', { path: 'app.yaml' })) as { content: string };
    const selfGrant = head.content.replace('shell: { allow: [[echo]', 'shell: { allow: [[id], [echo]');
    const base = (await git('rev-parse', 'HEAD')).trim();
    const attempts: Array<[string, Record<string, unknown>, string, string]> = [
      ['app.yaml rewritten', { changes: [{ path: 'app.yaml', content: selfGrant }] }, 'protected', 'app.yaml'],
      ['app.yaml deleted', { changes: [{ path: 'app.yaml', delete: true }] }, 'protected', 'app.yaml'],
      ['app.yaml in another case', { changes: [{ path: 'APP.yaml', content: selfGrant }] }, 'protected', 'APP.yaml'],
      ['app.yaml through a unified diff', { diff: `--- a/app.yaml\n+++ b/app.yaml\n@@ -1 +1 @@\n-apiVersion: uhlp.dev/v1alpha1\n+apiVersion: uhlp.dev/v1alpha1 \n` }, 'protected', 'app.yaml'],
      ['a .gitattributes', { changes: [{ path: 'notes/.gitattributes', content: '* filter=x' }] }, 'protected', 'notes/.gitattributes'],
      ['a forbidden path', { changes: [{ path: 'notes/private/key', content: 'x' }] }, 'forbidden', 'notes/private/key'],
      ['a path no glob names', { changes: [{ path: 'scripts/use-tools.mjs', content: 'export const useTools = () => 1;' }] }, 'write', 'scripts/use-tools.mjs'],
      ['one bad path among good ones', { changes: [{ path: 'notes/ok.txt', content: 'x' }, { path: 'app.yaml', content: selfGrant }] }, 'protected', 'app.yaml'],
    ];
    for (const [what, change, rule, refusedPath] of attempts) {
      expect(await call(tooled, 'core.state.applyStateDiff', { message: what, expectedBase: base, ...change }), what).toMatchObject({
        error: { code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'state', rule, path: refusedPath } },
      });
    }
    // An app without the capability has no such tool at all.
    expect(await call(bare, 'core.state.applyStateDiff', { message: 'grant', changes: [{ path: 'app.yaml', content: 'x' }] })).toMatchObject({
      error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'state', rule: 'absent' } },
    });
    expect((await git('rev-parse', 'HEAD')).trim()).toBe(base);
  });

  it("answers the app's own configuration values and logs", async () => {
    expect(await call(tooled, 'core.framework.getConfigValue', { key: 'limits' })).toEqual({ value: { max: 3 }, found: true });
    expect(await call(bare, 'core.framework.getConfigValue', { key: 'greeting' })).toEqual({ value: 'bare-hello', found: true });
    expect(await call(tooled, 'core.log', { level: 'info', message: 'from the mcp test' })).toEqual({ logged: true });
  });

  it('keeps kv inside the allowed prefixes and ops, and inside the app', async () => {
    expect(await call(tooled, 'core.kv.set', { key: 'ctr:shared', value: 41, ttlSeconds: 60 })).toEqual({ ok: true });
    expect(await call(tooled, 'core.kv.get', { key: 'ctr:shared' })).toEqual({ value: 41 });
    expect(await call(bare, 'core.kv.get', { key: 'ctr:shared' })).toEqual({ value: null });
    expect(await call(tooled, 'core.kv.get', { key: 'secret:shared' })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'kv', rule: 'prefixes' } } });
    expect(await call(bare, 'core.kv.set', { key: 'ctr:shared', value: 1 })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'kv', rule: 'absent' } } });
    expect(await call(tooled, 'core.kv.del', { key: 'ctr:shared' })).toEqual({ deleted: true });
    expect(await call(tooled, 'core.kv.get', { key: 'ctr:shared' })).toEqual({ value: null });
  });

  it('generates with the allowed model only', async () => {
    expect(await call(tooled, 'core.llm.generate', { prompt: 'greet world', maxTokens: 5000 })).toMatchObject({
      text: 'Hello from the scripted model.',
      model: 'scripted-small',
      usage: { prompt: expect.any(Number), completion: expect.any(Number) },
    });
    expect(await call(tooled, 'core.llm.generate', { prompt: 'greet', model: 'gpt-4o' })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'llm', rule: 'models' } } });
    expect(await call(bare, 'core.llm.generate', { prompt: 'greet' })).toMatchObject({ error: { details: { capability: 'llm', rule: 'absent' } } });
  });

  it('runs allowed argv in a scratch directory with only the listed environment; metacharacters stay inert', async () => {
    expect(await call(tooled, 'core.linux.executeCommand', { argv: ['echo', '$(id)', ';', 'rm', '-rf', '/', '|', '`id`'] })).toMatchObject({
      outcome: 'applied',
      exitCode: 0,
      stdout: '$(id) ; rm -rf / | `id`\n',
    });
    expect(await call(tooled, 'core.linux.executeCommand', { argv: ['printenv', 'UHLP_MCP_TEST_VAR'] })).toMatchObject({ exitCode: 0, stdout: `${testVar}\n` });
    // The core's own variables are not passed: printenv finds no HOME and exits 1.
    expect(await call(tooled, 'core.linux.executeCommand', { argv: ['printenv', 'HOME'] })).toMatchObject({ outcome: 'rejected', reason: 'non_zero_exit', exitCode: 1 });
    const pwd = await call(tooled, 'core.linux.executeCommand', { argv: ['pwd'] });
    expect(pwd.stdout).toMatch(/\/scratch\/x-[^/]+\n$/);
    expect(await call(tooled, 'core.linux.executeCommand', { argv: ['sleep', '5'], timeoutMs: 60_000 })).toMatchObject({ outcome: 'rejected', reason: 'timeout' });
    expect(await call(tooled, 'core.linux.executeCommand', { argv: ['sh', '-c', 'id'] })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'shell', rule: 'allow' } } });
    expect(await call(bare, 'core.linux.executeCommand', { argv: ['echo'] })).toMatchObject({ error: { details: { capability: 'shell', rule: 'absent' } } });
  });

  it('fetches from an allowed host, and refuses other hosts, methods, loopback ports not listed, and redirects to them', async () => {
    expect(await call(tooled, 'tool.web.fetch', { url: `http://127.0.0.1:${webPort}/hello` })).toMatchObject({
      outcome: 'applied',
      status: 200,
      body: 'hello GET',
      headers: { 'x-test': 'yes' },
    });
    expect(await call(tooled, 'tool.web.fetch', { url: `http://127.0.0.1:${webPort}/missing`, method: 'POST', body: 'x' })).toMatchObject({ outcome: 'applied', status: 404 });
    expect(await call(tooled, 'tool.web.fetch', { url: 'http://example.invalid/' })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'web', rule: 'allowHosts' } } });
    expect(await call(tooled, 'tool.web.fetch', { url: `http://127.0.0.1:${webPort}/hello`, method: 'DELETE' })).toMatchObject({ error: { details: { capability: 'web', rule: 'methods' } } });
    for (const url of [`http://127.0.0.1:${forbiddenPort}/`, `http://localhost:${forbiddenPort}/`, `http://[::1]:${forbiddenPort}/`, `http://127.0.0.1:${webPort}/to-loopback`]) {
      expect(await call(tooled, 'tool.web.fetch', { url }), url).toMatchObject({
        error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'web', rule: 'address', refusal: 'UHLP_WEB_ADDRESS_NOT_ALLOWED' } },
      });
    }
    expect(forbiddenHits).toBe(0);
    expect(await call(tooled, 'tool.web.fetch', { url: 'file:///etc/passwd' })).toMatchObject({ outcome: 'rejected', reason: 'unsupported_scheme' });
  });

  it('runs a JIT script that uses ctx.tools, and answers an uncaught refusal with its code and status', async () => {
    const response = await fetch(`${core.url}/tooled/use-tools`, { method: 'POST', body: JSON.stringify({ word: 'a;b' }) });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      visits: 1,
      greeting: 'hello',
      file: 'Say hello to {{ name }}.\n',
      echo: 'a;b\n',
      llm: 'Hello from the scripted model.',
      denied: { code: 'UHLP_CAPABILITY_DENIED', status: 403, capability: 'kv' },
    });
    expect(((await (await fetch(`${core.url}/tooled/use-tools`, { method: 'POST', body: '{}' })).json()) as { visits: number }).visits).toBe(2);

    // A session of its own, so that its ledger holds just this turn.
    const refused = await fetch(`${core.url}/tooled/refused`, { headers: { 'X-UHLP-Session': 'new' } });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'shell', rule: 'allow' } });

    // The refusal and the call are the turn's ledger evidence.
    const sessionId = refused.headers.get('x-uhlp-session-id')!;
    const evidenceFile = path.join(core.dataDir, 'planes', 'development', 'sessions', sessionId, 'ledger', 'evidence.jsonl');
    await waitFor(() => existsSync(evidenceFile) && readFileSync(evidenceFile, 'utf8').includes('L-EVIDENCE'), { what: 'the evidence entry' });
    const entry = JSON.parse(readFileSync(evidenceFile, 'utf8').trim().split('\n').at(-1)!);
    expect(entry.capability_violations).toEqual([
      { operation: 'core.linux.executeCommand rm -rf /', capability: 'capabilities.shell.allow', detail: expect.stringContaining('matches no allowed prefix'), timestamp: expect.any(String) },
    ]);
    expect(entry.external_calls).toEqual([{ kind: 'mcp', target: 'core.linux.executeCommand', status: 'UHLP_CAPABILITY_DENIED', duration_ms: expect.any(Number) }]);
  });

  it('counts refusals and tool calls in the metrics', async () => {
    const text = await (await fetch(`${core.url}/metrics`)).text();
    for (const capability of ['kv', 'shell', 'web', 'llm']) {
      expect(text).toMatch(new RegExp(`uhlp_capability_refusals_total\\{app="tooled",capability="${capability}"\\} [1-9]`));
    }
    expect(text).toMatch(/uhlp_mcp_calls_total\{app="tooled",tool="core.kv.get",outcome="ok"\} [1-9]/);
    // Calls from the dev token carry its component, dev-client.
    expect(text).toMatch(/uhlp_llm_tokens_total\{app="tooled",component="dev-client",model="scripted-small",kind="completion"\} [1-9]/);
    expect(text).toMatch(/uhlp_llm_calls_total\{app="tooled",component="dev-client",model="scripted-small",outcome="ok"\} [1-9]/);
  });
});

describe('uhlp mcp token', () => {
  it('fails with the core\'s code for an unknown app', async () => {
    await expect(run(process.execPath, [UHLP_BIN, 'mcp', 'token', 'nope', '--url', core.operatorUrl])).rejects.toMatchObject({ code: 1, stderr: expect.stringContaining('UHLP_APP_NOT_FOUND') });
  });
});
