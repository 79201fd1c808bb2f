/**
 * MCP through the core, side by side in one run (BENCH_ONLY=mcp of bench/run.ts):
 *
 * - a federated tool call (`app.everything.echo` of @modelcontextprotocol/server-everything,
 *   a stdio server in a warm `runner: mcp` sandbox) through the core, as a script's
 *   `ctx.tools.call` sends it (the runner client, over the core's MCP socket), vs the same `tools/call` sent straight to the same server
 *   package over its stdio (a child process, raw JSON-RPC lines: the cheapest a client can be);
 * - a `core.kv.get` call before and after the SDK move: this tree's core and runner
 *   client against the core and runner client of another tree (BENCH_MCP_BEFORE, a
 *   built checkout of the commit before), in interleaved rounds;
 * - its floor: the same call from the same client to a bare HTTP handler on a Unix
 *   socket that checks the bearer token, parses the JSON-RPC body and answers the
 *   same result from a Map (no MCP server, no core): the core's time per call is the
 *   difference.
 *
 * One connection per path, back to back, each round measuring every path in turn.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { PackageCache } from '../src/mcp/federation/package-cache.js';
import { startUhlpCore, type UhlpProcess } from '../test/helpers/uhlp-process.js';
import { writeBenchApp } from './lib/bench-app.js';
import { runLoad, table, type LoadResult } from './lib/load.js';
import { median, round2, round3 } from './lib/numbers.js';

const EVERYTHING = { name: '@modelcontextprotocol/server-everything', version: '2026.8.31' };
const PACKAGE_CACHE = process.env.UHLP_MCP_PACKAGE_CACHE ?? path.join(os.tmpdir(), 'uhlp-bench-mcp-packages');

export interface McpBenchRow {
  readonly path: string;
  readonly round: number;
  readonly result: LoadResult;
}

export interface McpBenchReport {
  readonly rows: McpBenchRow[];
  /** Federated through the core minus straight to the server, medians over rounds, ms. */
  readonly federationAddedMs: { p50: number; p99: number };
  readonly federationRpsRatio: number;
  /** core.kv.get through the core minus the same call on a bare HTTP handler, medians over rounds, ms: the core's time per call. */
  readonly coreCallOverFloorMs: { p50: number; p99: number };
  /** core.kv.get after / before the SDK move (when BENCH_MCP_BEFORE names a tree). */
  readonly coreCallAfterOverBefore?: { p50: number; p99: number; rps: number };
}

interface Caller {
  call(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** The bench app; without federation for a tree from before it. */
function benchApp(federated: boolean): string {
  const mcp = federated
    ? `    - { name: everything, runner: mcp, minWarm: 1, maxSize: 1, limits: { memoryMb: 256 } }
  mcpServers:
    - { name: everything, stdio: { pool: everything, package: { name: "${EVERYTHING.name}", version: ${EVERYTHING.version} }, args: [stdio] } }
`
    : '';
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools:
    - { name: p, minWarm: 0, maxSize: 1 }
${mcp}  components: [{ id: noop, handler: JIT, pool: p, jit: { script: scripts/noop.mjs } }]
  capabilities:
    kv: { prefixes: ["b:"], ops: [get] }
${federated ? '    mcp: { allow: [app.everything.echo] }\n' : ''}`,
    { 'scripts/noop.mjs': 'export default () => null;\n' },
  );
}

/** A core of `tree` (this one by default) with the bench app, and a client as that tree's runners make it. */
async function startCore(tree: string, definitions: string): Promise<{ core: UhlpProcess; caller: Caller }> {
  const core = await startUhlpCore('dev', definitions, [], 180_000, undefined, { UHLP_MCP_PACKAGE_CACHE: PACKAGE_CACHE, UHLP_LOG_LEVEL: 'error' }, path.join(tree, 'bin', 'uhlp.js'));
  const deadline = Date.now() + 120_000;
  while ((await fetch(`${core.url}/readyz`)).status !== 200) {
    if (Date.now() > deadline) throw new Error('the bench app did not get ready');
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  const minted = (await (
    await fetch(`${core.operatorUrl}/_uhlp/dev/mcp-token`, { method: 'POST', body: JSON.stringify({ appId: 'bench' }), headers: { 'content-type': 'application/json' } })
  ).json()) as { mcp_url: string; token: string };
  // Each tree's own runner client, over the core's Unix socket: what a script in a sandbox of that tree sends.
  const kit = path.join(tree, 'dist', 'runners', 'kit');
  const { ExecutionTools } = (await import(pathToFileURL(path.join(kit, 'tools-client.js')).href)) as typeof import('../src/runners/kit/tools-client.js');
  const { unixSocketFetch } = (await import(pathToFileURL(path.join(kit, 'unix-socket-fetch.js')).href)) as typeof import('../src/runners/kit/unix-socket-fetch.js');
  return { core, caller: new ExecutionTools({ endpoint: minted.mcp_url, token: minted.token, fetch: unixSocketFetch(path.join(core.dataDir, 'mcp.sock')) }) };
}

/**
 * The floor of a core.* call: a bare HTTP handler on a Unix socket answering `core.kv.get` as the core does
 * (bearer token checked, the JSON-RPC body parsed, the value looked up, the structured result), called by
 * this tree's runner client over the same kind of socket.
 */
async function startBareHandler(): Promise<{ caller: Caller; close(): void }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-bare-mcp-'));
  const socket = path.join(dir, 'mcp.sock');
  const token = 'bare-token';
  const values = new Map<string, unknown>();
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      if (request.headers.authorization !== `Bearer ${token}`) {
        response.writeHead(401, { 'content-type': 'application/json' }).end('{"code":"UHLP_MCP_UNAUTHORIZED","message":"unauthorized"}');
        return;
      }
      const rpc = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: number; params: { name: string; arguments: { key: string } } };
      const structured = { value: values.get(rpc.params.arguments.key) ?? null };
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, result: { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured } }));
    });
  });
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  const kit = path.join(process.cwd(), 'dist', 'runners', 'kit');
  const { ExecutionTools } = (await import(pathToFileURL(path.join(kit, 'tools-client.js')).href)) as typeof import('../src/runners/kit/tools-client.js');
  const { unixSocketFetch } = (await import(pathToFileURL(path.join(kit, 'unix-socket-fetch.js')).href)) as typeof import('../src/runners/kit/unix-socket-fetch.js');
  return {
    caller: new ExecutionTools({ endpoint: 'http://localhost/mcp', token, fetch: unixSocketFetch(socket) }),
    close: () => {
      server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** server-everything over its own stdio, raw JSON-RPC lines, one call at a time. */
async function startDirectServer(): Promise<{ call(args: Record<string, unknown>): Promise<unknown>; close(): void }> {
  const installed = await new PackageCache(PACKAGE_CACHE, { env: process.env }).install(EVERYTHING);
  const child = spawn(process.execPath, [path.join(installed.dir, installed.entry), 'stdio'], { stdio: ['pipe', 'pipe', 'ignore'] });
  const waiting = new Map<number, (message: unknown) => void>();
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as { id?: number };
    if (typeof message.id === 'number') waiting.get(message.id)?.(message);
  });
  let next = 1;
  const request = (method: string, params: Record<string, unknown>): Promise<unknown> =>
    new Promise((resolve) => {
      const id = next++;
      waiting.set(id, (message) => {
        waiting.delete(id);
        resolve(message);
      });
      child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  await request('initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } });
  child.stdin!.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })}\n`);
  return { call: (args) => request('tools/call', { name: 'echo', arguments: args }), close: () => child.kill() };
}


export async function benchMcp(durationMs: number, rounds: number): Promise<McpBenchReport> {
  const after = await startCore(process.cwd(), benchApp(true));
  const beforeTree = process.env.BENCH_MCP_BEFORE;
  if (beforeTree !== undefined && !existsSync(path.join(beforeTree, 'dist', 'runners', 'kit', 'tools-client.js'))) {
    throw new Error(`BENCH_MCP_BEFORE=${beforeTree} is not a built tree (npm ci && npm run build there)`);
  }
  const before = beforeTree !== undefined ? await startCore(beforeTree, benchApp(false)) : undefined;
  const direct = await startDirectServer();
  const bare = await startBareHandler();
  const echo = { message: 'x' };
  const kvGet = { key: 'b:x' };
  const paths: Array<[string, () => Promise<boolean>]> = [
    ['federated echo through the core', async () => (await after.caller.call('app.everything.echo', echo))['content'] !== undefined],
    ['the same echo straight to the server', async () => (await direct.call(echo)) !== undefined],
    ['core.kv.get after the SDK move', async () => (await after.caller.call('core.kv.get', kvGet))['value'] === null],
    ['core.kv.get on a bare HTTP handler (the floor)', async () => (await bare.caller.call('core.kv.get', kvGet))['value'] === null],
    ...(before !== undefined ? ([['core.kv.get before the SDK move', async () => (await before.caller.call('core.kv.get', kvGet))['value'] === null]] as Array<[string, () => Promise<boolean>]>) : []),
  ];
  const rows: McpBenchRow[] = [];
  try {
    // Warm every path (JIT, connections, the server's own first call) before anything is measured.
    for (const [, send] of paths) await runLoad(send, 1, 1000);
    for (let round = 1; round <= rounds; round++) {
      for (const [name, send] of paths) rows.push({ path: name, round, result: await runLoad(send, 1, durationMs) });
    }
  } finally {
    direct.close();
    bare.close();
    await after.core.stop();
    await before?.core.stop();
  }
  const of = (name: string, pick: (result: LoadResult) => number): number => median(rows.filter((row) => row.path === name).map((row) => pick(row.result)));
  const federated = 'federated echo through the core';
  const straight = 'the same echo straight to the server';
  return {
    rows,
    federationAddedMs: { p50: round2(of(federated, (r) => r.p50Ms) - of(straight, (r) => r.p50Ms)), p99: round2(of(federated, (r) => r.p99Ms) - of(straight, (r) => r.p99Ms)) },
    federationRpsRatio: round2(of(federated, (r) => r.rps) / of(straight, (r) => r.rps)),
    coreCallOverFloorMs: {
      p50: round3(of('core.kv.get after the SDK move', (r) => r.p50Ms) - of('core.kv.get on a bare HTTP handler (the floor)', (r) => r.p50Ms)),
      p99: round3(of('core.kv.get after the SDK move', (r) => r.p99Ms) - of('core.kv.get on a bare HTTP handler (the floor)', (r) => r.p99Ms)),
    },
    ...(before !== undefined
      ? {
          coreCallAfterOverBefore: {
            p50: round2(of('core.kv.get after the SDK move', (r) => r.p50Ms) / of('core.kv.get before the SDK move', (r) => r.p50Ms)),
            p99: round2(of('core.kv.get after the SDK move', (r) => r.p99Ms) / of('core.kv.get before the SDK move', (r) => r.p99Ms)),
            rps: round2(of('core.kv.get after the SDK move', (r) => r.rps) / of('core.kv.get before the SDK move', (r) => r.rps)),
          },
        }
      : {}),
  };
}

/** The report as a table: each path's medians over the rounds. */
export function mcpBenchTable(report: McpBenchReport): string {
  const names = [...new Set(report.rows.map((row) => row.path))];
  const rows = names.map((name) => {
    const mine = report.rows.filter((row) => row.path === name).map((row) => row.result);
    return {
      path: name,
      'calls/s': Math.round(median(mine.map((r) => r.rps))),
      'p50 ms': median(mine.map((r) => r.p50Ms)),
      'p99 ms': median(mine.map((r) => r.p99Ms)),
      errors: mine.reduce((sum, r) => sum + r.errors, 0),
    };
  });
  const coreLine =
    report.coreCallAfterOverBefore !== undefined
      ? `core.kv.get after/before the SDK move: p50 x${report.coreCallAfterOverBefore.p50}, p99 x${report.coreCallAfterOverBefore.p99}, calls/s x${report.coreCallAfterOverBefore.rps}\n`
      : 'core.kv.get before the SDK move: set BENCH_MCP_BEFORE to a built tree of the commit before\n';
  const over = report.coreCallOverFloorMs;
  const floorLine = `core.kv.get through the core - on a bare HTTP handler: p50 +${over.p50} ms (target <= 0.15 ms: ${over.p50 <= 0.15 ? 'ok' : 'MISSED'}), p99 +${over.p99} ms\n`;
  return `${table(rows)}\n\nfederation - direct: p50 +${report.federationAddedMs.p50} ms, p99 +${report.federationAddedMs.p99} ms, calls/s x${report.federationRpsRatio} (target: p50 +0.5 ms at most)\n${floorLine}${coreLine}`;
}
