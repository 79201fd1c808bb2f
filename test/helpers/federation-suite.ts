/**
 * MCP federation through `uhlp dev`, on a driver the caller names, with real servers:
 * server-memory, server-filesystem and server-everything from the npm registry
 * as stdio servers in `runner: mcp` sandboxes, server-everything over HTTP
 * (a 2025-11-25 server) and an SDK v2 server (2026-07-28) reached with a
 * header from a secret, and a hostile stdio server of the app's own. Listing
 * and calling through the core from the official clients of both revisions,
 * a JIT script, an LLM component's tool loop and a workflow tool node; the
 * capability refusals; evidence and metrics; each hostile behaviour and a
 * server killed mid-call; the MCP inspector CLI with an app's token.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmEnvironment } from '../../src/mcp/federation/npm-environment.js';
import { PackageCache } from '../../src/mcp/federation/package-cache.js';
import { freePort } from './free-port.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { UHLP_BIN, copyFixture, startUhlpDev, waitUntilReady, type UhlpProcess } from './uhlp-process.js';

export interface FederationSuiteOptions {
  readonly driver: 'process' | 'docker' | 'pod';
  /**
   * Runs first (Docker: the engine answers and the images are built); answers what the
   * core needs beside (pods: the cluster, the images, the address pods reach the core at).
   */
  readonly before?: (core: { port: number; packageCache: string }) => Promise<{ args?: string[]; env?: Record<string, string> } | unknown>;
  /**
   * The driver runs the app's script servers (hostile, modernstdio). @defaultValue true;
   * the pod driver refuses them, and the suite checks that it says so.
   */
  readonly scriptServers?: boolean;
  /**
   * Kills, from outside, the server the mid-call tool runs in; answers how many it killed.
   * The call is `app.hostile.sleep` where script servers run, else server-everything's
   * `trigger-long-running-operation`.
   */
  killServer(core: UhlpProcess): Promise<number>;
  /** Runs last, after the core stopped. */
  readonly after?: () => Promise<unknown>;
}

const run = promisify(execFile);

export function describeFederation(options: FederationSuiteOptions): void {
  /**
   * Empty at every run, as a user's first core has it: the packages are installed the way
   * the core installs them (npm, with the environment the core gives it), never found warm.
   */
  const PACKAGE_CACHE = mkdtempSync(path.join(os.tmpdir(), 'uhlp-test-mcp-packages-'));
  /** What npm sees when the suite installs a package itself: what the core would give it. */
  const packages = new PackageCache(PACKAGE_CACHE, { env: npmEnvironment(process.env) });
  const MODERN_TOKEN = `tok-${process.pid}`;

  let core: UhlpProcess;
  let llm: OpenAiTestServer;
  let remote: ChildProcess;
  let modern: http.Server;
  let modernAuthorizations: Array<string | undefined> = [];
  const clients: Array<{ close(): Promise<void> }> = [];

  /** An SDK v2 server of the 2026-07-28 revision (and 2025 too), on node:http. */
  async function startModernServer(): Promise<number> {
    const handler = createMcpHandler(({ era, requestInfo }) => {
      modernAuthorizations.push(requestInfo?.headers.get('authorization') ?? undefined);
      const server = new McpServer({ name: 'modern', version: '1.0.0' });
      server.registerTool('whoami', { description: 'Says which revision served the call' }, async () => ({
        content: [{ type: 'text', text: `served on the ${era} era` }],
        structuredContent: { era },
      }));
      return server;
    });
    modern = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const headers = new Headers();
        for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
        const body = req.method === 'POST' ? Buffer.concat(chunks) : undefined;
        void handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) })).then(async (response) => {
          response.headers.forEach((value, name) => res.setHeader(name, value));
          res.writeHead(response.status);
          res.end(Buffer.from(await response.arrayBuffer()));
        });
      });
    });
    await new Promise<void>((resolve) => modern.listen(0, '127.0.0.1', resolve));
    return (modern.address() as AddressInfo).port;
  }

  /** server-everything over streamable HTTP (SDK v1: the 2025-11-25 revision), from the package cache. */
  async function startRemoteEverything(): Promise<number> {
    const installed = await packages.install({ name: '@modelcontextprotocol/server-everything', version: '2026.8.31' });
    const port = await freePort();
    remote = spawn(process.execPath, [path.join(installed.dir, installed.entry), 'streamableHttp'], { env: { PATH: process.env.PATH ?? '', PORT: String(port) }, stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('server-everything did not start')), 20_000);
      remote.stderr!.on('data', (chunk: Buffer) => {
        if (/listening on port/i.test(chunk.toString())) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    return port;
  }

  const scriptServers = options.scriptServers ?? true;
  let listedNames: string[] = [];

  beforeAll(async () => {
    const corePort = await freePort();
    const extra = ((await options.before?.({ port: corePort, packageCache: PACKAGE_CACHE })) ?? {}) as { args?: string[]; env?: Record<string, string> };
    const [remotePort, modernPort] = await Promise.all([startRemoteEverything(), startModernServer()]);
    llm = await startOpenAiTestServer();
    const dir = copyFixture('federation');
    const appFile = path.join(dir, 'apps', 'fed', 'app.yaml');
    writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('REMOTE_PORT', String(remotePort)).replace('MODERN_PORT', String(modernPort)));
    const secrets = path.join(dir, '..', `secrets-${process.pid}.yaml`);
    writeFileSync(secrets, `apps:\n  fed:\n    modern-server:\n      token: ${MODERN_TOKEN}\n`);
    core = await startUhlpDev(dir, ['--driver', options.driver, ...(extra.args ?? [])], 240_000, undefined, {
      ...extra.env,
      UHLP_MCP_PACKAGE_CACHE: PACKAGE_CACHE,
      UHLP_MCP_SECRETS_FILE: secrets,
      UHLP_MCP_ALLOW_PRIVATE: `127.0.0.1:${remotePort},127.0.0.1:${modernPort}`,
      UHLP_LLM_BASE_URL: llm.baseUrl,
      UHLP_LLM_TIMEOUT_MS: '20000',
    });
    // The stdio servers' sandboxes are warm once /readyz says so.
    await waitUntilReady(core);
    // Pods claimed without an operator keeping them warm start at their first use: the first
    // listing starts each server's, and answers once they all answer.
    const packaged = ['app.memory.read_graph', 'app.fs.list_directory', 'app.everything.echo'];
    const { url, token } = await mcpToken('fed');
    const listed = async (): Promise<string[]> => {
      const answer = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
      });
      return ((await answer.json()) as { result?: { tools?: Array<{ name: string }> } }).result?.tools?.map((tool) => tool.name) ?? [];
    };
    const deadline = Date.now() + 120_000;
    while (!packaged.every((name) => listedNames.includes(name))) {
      if (Date.now() > deadline) throw new Error(`the stdio servers did not list their tools: ${listedNames.join(', ')}`);
      listedNames = await listed();
    }
  }, 300_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
    await core?.stop();
    await llm?.close();
    remote?.kill();
    modern?.close();
    await options.after?.();
    rmSync(PACKAGE_CACHE, { recursive: true, force: true });
  });

  async function mcpToken(appId: string): Promise<{ url: string; token: string }> {
    const { stdout } = await run(process.execPath, [UHLP_BIN, 'mcp', 'token', appId, '--url', core.operatorUrl]);
    const [url, token] = stdout.trimEnd().split('\n').map((line) => line.slice(line.indexOf('=') + 1));
    return { url: url!, token: token! };
  }

  async function modernClient(appId: string): Promise<Client> {
    const { url, token } = await mcpToken(appId);
    const client = new Client({ name: 'uhlp-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  async function legacyClient(appId: string): Promise<ClientV1> {
    const { url, token } = await mcpToken(appId);
    const client = new ClientV1({ name: 'uhlp-test-v1', version: '1.0.0' });
    await client.connect(new TransportV1(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
    clients.push(client);
    return client;
  }

  async function post(route: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; headers: Headers }> {
    const response = await fetch(`${core.url}/fed${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: response.status, json: await response.json(), headers: response.headers };
  }

  /** One federated call from a JIT script: `{ok}` or `{error: {code, status, details}}`. */
  async function one(tool: string, args: Record<string, unknown> = {}): Promise<any> {
    const answer = await post('/one', { tool, args });
    expect(answer.status).toBe(200);
    return answer.json;
  }

  const text = (result: any): string => String(result?.content?.[0]?.text ?? result?.ok?.content?.[0]?.text ?? '');

  describe(`MCP federation on the ${options.driver} driver`, () => {
    it('lists the granted tools of every server, the same to both protocol revisions', async () => {
      const names = (await (await modernClient('fed')).listTools()).tools.map((tool) => tool.name);
      const federated = names.filter((name) => name.startsWith('app.')).sort();
      const servedHere = scriptServers ? ['app.hostile.echo'] : [];
      expect(federated).toEqual(expect.arrayContaining(['app.memory.create_entities', 'app.memory.read_graph', 'app.fs.list_directory', 'app.fs.read_text_file', 'app.everything.echo', 'app.remote.echo', 'app.modern.whoami', ...servedHere]));
      // Forbidden globs win over allow; tools no allow glob names are not listed; a lying server's bad entries are dropped.
      for (const absent of ['app.fs.write_file', 'app.fs.move_file', 'app.everything.get-tiny-image', 'app.remote.get-sum', 'app.hostile.noschema', 'app.hostile.bad name!']) expect(names).not.toContain(absent);
      expect(federated.filter((name) => name === 'app.hostile.echo')).toHaveLength(scriptServers ? 1 : 0);
      expect(names).toContain('core.framework.getConfigValue');

      const legacy = (await (await legacyClient('fed')).listTools()).tools.map((tool) => tool.name);
      expect(legacy.filter((name) => name.startsWith('app.')).sort()).toEqual(federated);
      // An app without the mcp capability sees none, and none of another app's servers.
      expect((await (await modernClient('plain')).listTools()).tools.filter((tool) => tool.name.startsWith('app.'))).toEqual([]);
    });

    it('calls real npm servers from a JIT script: memory, filesystem on the sandbox tree, everything', async () => {
      const memory = await post('/memory', { name: 'ada', note: 'likes tea' });
      expect(memory.json.graph.entities).toEqual([{ name: 'ada', entityType: 'person', observations: ['likes tea'] }]);
      const files = await post('/files', { content: 'x' });
      expect(files.status).toBe(200);
      // server-filesystem answers structured content of its own: {content: "..."}.
      expect(JSON.stringify(files.json.allowed)).toMatch(/\/work\/files/);
      expect(files.json.written.error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'mcp', rule: 'forbidden' } });
      expect(JSON.stringify(files.json.made)).toMatch(/created directory/);
      expect(JSON.stringify(files.json.after)).toMatch(/\[DIR\] made/);
      const everything = await post('/everything', { message: 'hello' });
      expect(text(everything.json)).toBe('Echo: hello');
    });

    it('reaches remote servers of both revisions through the SSRF guard, with the header from a secret', async () => {
      expect(text(await one('app.remote.echo', { message: 'far' }))).toBe('Echo: far');
      const whoami = await one('app.modern.whoami');
      // A script gets a tool's structured content: the server's own.
      expect(whoami.ok).toEqual({ era: 'modern' });
      expect(modernAuthorizations.length).toBeGreaterThan(0);
      expect(new Set(modernAuthorizations)).toEqual(new Set([`Bearer ${MODERN_TOKEN}`]));
    });

    if (scriptServers) {
      it('reaches a stdio server of the 2026-07-28 revision with the per-request envelope, and 2025 servers with initialize', async () => {
        expect(text(await one('app.modernstdio.era'))).toBe('served on 2026-07-28 for uhlp-mcp-host');
      });
    } else {
      it("refuses the app's script servers on this driver, saying why, and serves the others", async () => {
        expect((await one('app.hostile.echo', { text: 'x' })).error).toMatchObject({ code: 'UHLP_MCP_SERVER_UNAVAILABLE', status: 503, details: { server: 'app.hostile', cause: 'UHLP_SANDBOX_UNAVAILABLE' } });
        const refused = await (await modernClient('fed')).callTool({ name: 'app.hostile.echo', arguments: { text: 'x' } });
        expect(refused.structuredContent).toMatchObject({ code: 'UHLP_MCP_SERVER_UNAVAILABLE', message: expect.stringMatching(/script server of the app runs on the process and Docker drivers only/) });
        expect(text(await one('app.everything.echo', { message: 'still served' }))).toBe('Echo: still served');
      });
    }

    it('refuses what the capabilities do not grant, listing and calling alike, and keeps apps apart', async () => {
      expect((await one('app.everything.get-tiny-image')).error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'mcp', rule: 'allow' } });
      expect((await one('app.fs.move_file', { source: 'a', destination: 'b' })).error).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { rule: 'forbidden' } });
      expect((await one('app.nowhere.tool')).error).toMatchObject({ code: 'UHLP_MCP_TOOL_NOT_FOUND' });
      // Granted by a glob, but not in the server's list: never sent to the server.
      if (scriptServers) expect((await one('app.hostile.noschema')).error).toMatchObject({ code: 'UHLP_MCP_TOOL_NOT_FOUND' });
      const reach = await (await fetch(`${core.url}/plain/reach`)).json();
      expect(reach).toEqual({ error: { code: 'UHLP_MCP_TOOL_NOT_FOUND', status: 404 } });
      // risk_level: critical holds for federated tools: outside a workflow run that allows it, refused.
      if (scriptServers) expect((await one('app.hostile.slow', { text: '10' })).error).toMatchObject({ code: 'UHLP_TOOL_APPROVAL_REQUIRED' });
      const client = await modernClient('fed');
      const refused = await client.callTool({ name: 'app.fs.write_file', arguments: { path: '/work/files/y', content: 'y' } });
      expect(refused.isError).toBe(true);
      expect(refused.structuredContent).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED' });
    });

    if (scriptServers) {
      it.each([
        ['flood', 'ok', /flooded/],
        ['not-json', 'ok', /after garbage/],
        ['ask-back', 'ok', /got error -32601/],
        ['hang', 'UHLP_MCP_SERVER_TIMEOUT', undefined],
        ['wrong-id', 'UHLP_MCP_SERVER_TIMEOUT', undefined],
        ['huge', 'UHLP_MCP_SERVER_OUTPUT_TOO_LARGE', undefined],
        ['liar', 'UHLP_MCP_SERVER_PROTOCOL_ERROR', undefined],
        ['crash', 'UHLP_MCP_SERVER_CRASHED', undefined],
      ])('contains a hostile server that does %s: %s', async (tool, outcome, answer) => {
        const result = await one(`app.hostile.${tool}`, { text: 'x' });
        if (outcome === 'ok') expect(text(result)).toMatch(answer!);
        else expect(result.error).toMatchObject({ code: outcome, details: { server: 'app.hostile' } });
        // The core and the server keep serving.
        expect(text(await one('app.hostile.echo', { text: 'still here' }))).toBe('echo: still here');
        expect((await (await fetch(`${core.url}/healthz`)).status)).toBe(200);
      });
    }

    it('gives a server killed mid-call a stable code, and a fresh server to the next call', async () => {
      // The app's hostile server sleeps; server-everything's long-running operation reports progress for 3 s.
      const call = scriptServers ? one('app.hostile.sleep', { text: '1400' }) : one('app.everything.trigger-long-running-operation', { duration: 3, steps: 3 });
      let killed = 0;
      const deadline = Date.now() + 5_000;
      while (killed === 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        killed = await options.killServer(core);
      }
      expect(killed).toBeGreaterThan(0);
      expect((await call).error).toMatchObject({ code: 'UHLP_MCP_SERVER_CRASHED' });
      if (scriptServers) expect(text(await one('app.hostile.echo', { text: 'restarted' }))).toBe('echo: restarted');
      else expect(text(await one('app.everything.echo', { message: 'restarted' }))).toBe('Echo: restarted');
    });

    it("records every federated call as evidence of the turn, arguments hashed, and counts it per server and tool", async () => {
      const answer = await post('/one', { tool: 'app.everything.echo', args: { message: 'secret words' } }, { 'X-UHLP-Session': 'new' });
      const sid = answer.headers.get('x-uhlp-session-id')!;
      const ledger = path.join(core.dataDir, 'planes', 'development', 'sessions', sid, 'ledger', 'evidence.jsonl');
      // The ledger is written after the answer: wait for the line.
      const deadline = Date.now() + 10_000;
      while (!existsSync(ledger) || readFileSync(ledger, 'utf8').trim() === '') {
        if (Date.now() > deadline) throw new Error(`no evidence in ${ledger}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const entry = JSON.parse(readFileSync(ledger, 'utf8').trim().split('\n').at(-1)!) as { external_calls: unknown[] };
      expect(entry.external_calls).toEqual([
        { kind: 'mcp', target: 'app.everything.echo', server: 'app.everything', status: 'ok', duration_ms: expect.any(Number), arguments_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) },
      ]);
      expect(readFileSync(ledger, 'utf8')).not.toContain('secret words');
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      expect(metrics).toMatch(/uhlp_mcp_federated_calls_total\{app="fed",server="app.everything",tool="echo",outcome="ok"\} \d+/);
      expect(metrics).toMatch(/uhlp_mcp_federated_call_duration_seconds_count\{app="fed",server="app.everything",tool="echo"\} \d+/);
    });

    it("runs federated tools in an LLM component's tool loop", async () => {
      llm.enqueue(reply.toolCalls([{ name: 'app_everything_echo', arguments: { message: 'from the model' } }]), reply.text('The server said it back.'));
      const answer = await post('/ask', { question: 'echo something' });
      expect(answer).toMatchObject({ status: 200, json: { text: 'The server said it back.' } });
      const offered = (llm.requests.at(-2)!.body.tools as Array<{ function: { name: string } }>).map((tool) => tool.function.name);
      expect(offered.sort()).toEqual(['app_everything_echo', 'app_memory_read_graph']);
      const result = llm.requests.at(-1)!.body.messages!.find((message) => message.role === 'tool');
      expect(String(result!.content)).toContain('Echo: from the model');
    });

    it('runs a federated tool in a workflow tool node', async () => {
      const answer = await post('/flow', {});
      expect(answer.status).toBe(200);
      expect(JSON.stringify(answer.json)).toContain('Echo: from a workflow');
    });

    it('lets the MCP inspector CLI (current release) list and call federated tools with an app token', async () => {
      const installed = await packages.install({ name: '@modelcontextprotocol/inspector', version: '2.12.0', bin: 'mcp-inspector' });
      const { url, token } = await mcpToken('fed');
      const inspector = (...args: string[]): Promise<{ stdout: string }> =>
        run(process.execPath, [path.join(installed.dir, installed.entry), '--cli', url, '--transport', 'http', '--header', `Authorization: Bearer ${token}`, ...args], {
          env: { PATH: process.env.PATH ?? '', HOME: core.dataDir },
          timeout: 60_000,
        });
      const listed = JSON.parse((await inspector('--method', 'tools/list')).stdout) as { tools: Array<{ name: string }> };
      expect(listed.tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['app.memory.read_graph', 'app.everything.echo']));
      expect(listed.tools.map((tool) => tool.name)).not.toContain('app.fs.write_file');
      const called = JSON.parse((await inspector('--method', 'tools/call', '--tool-name', 'app.everything.echo', '--tool-arg', 'message=inspected')).stdout) as { content: Array<{ text: string }> };
      expect(called.content[0]!.text).toBe('Echo: inspected');
    }, 180_000);
  });
}
