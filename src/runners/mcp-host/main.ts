/**
 * Entry point of the mcp-host, the program inside every sandbox of a
 * `runner: mcp` pool: it runs one stdio MCP server in its own process (the
 * server's module is imported after its stdio is replaced, see
 * stdio-bridge.ts), opens the MCP session with it (`server/discover` for a
 * 2026-07-28 server, else the `initialize` handshake), and then answers the
 * core's calls on its socket, one at a time.
 *
 *   node dist/runners/mcp-host/main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
 *        --server-entry FILE [--server-arg ARG]... [--server-env NAME=VALUE]... [--work-dir DIR] [--niceness N] [--exit-on-stdin-close]
 *
 * `{work}` in a server argument is the sandbox's writable tree. The ready line
 * is printed once the server has answered its opening: a warm sandbox is a
 * server that is up. A server that exits, or throws out of its promise chain,
 * ends the sandbox, and its pool starts another.
 */
import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { MCP_HOST_PATH, type McpHostAnswer, type McpHostCall, type McpHostHealth } from '../../contract/mcp-host-wire.js';
import { Http1Server } from '../../shared/http1/http1-server.js';
import { StdioBridge } from './stdio-bridge.js';

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
const OPENING_TIMEOUT_MS = 15_000;
const CLIENT_INFO = { name: 'uhlp-mcp-host', version: '0.1.0' };
const JSON_HEADERS = { 'content-type': 'application/json' };

const { values } = parseArgs({
  options: {
    listen: { type: 'string' },
    'server-entry': { type: 'string' },
    'server-arg': { type: 'string', multiple: true, default: [] },
    'server-env': { type: 'string', multiple: true, default: [] },
    'work-dir': { type: 'string' },
    niceness: { type: 'string', default: '0' },
    concurrency: { type: 'string', default: '1' },
    'mcp-socket': { type: 'string' },
    // The app's revisions: where a server that is a script of the app is found (--server-entry names it).
    definitions: { type: 'string' },
    'definitions-via-mcp': { type: 'boolean', default: false },
    'exit-on-stdin-close': { type: 'boolean', default: false },
    'drain-on-sigterm': { type: 'boolean', default: false },
  },
});
const listen = values.listen;
const entry = values['server-entry'];
if (listen === undefined || entry === undefined) throw new Error('usage: mcp-host --listen unix:<path>|tcp:<host>:<port> --server-entry <file> [--server-arg <arg>]...');
const niceness = Number(values.niceness);
if (niceness > 0) os.setPriority(Math.min(19, os.getPriority() + niceness));
const workDir = values['work-dir'] ?? process.cwd();

// The real stdio: the ready line goes out on it, and its end (the core went away) ends us.
const realStdout = process.stdout;
if (values['exit-on-stdin-close'] === true) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('error', () => process.exit(0));
  process.stdin.resume();
}
const bridge = new StdioBridge();
Object.defineProperty(process, 'stdin', { value: bridge.stdin, configurable: true, writable: true });
Object.defineProperty(process, 'stdout', { value: bridge.stdout, configurable: true, writable: true });
// A server that logs with console.log would write into its own protocol stream: its logs go to stderr.
console.log = console.info = console.debug = (...args: unknown[]): void => void process.stderr.write(`${args.map(String).join(' ')}\n`);

let protocolVersion = LEGACY;
let busy = false;

/** Adds the 2026-07-28 envelope to a request's params when the server speaks that revision. */
function withEnvelope(params: Record<string, unknown>): Record<string, unknown> {
  if (protocolVersion !== MODERN) return params;
  const meta = { ...(params['_meta'] as Record<string, unknown> | undefined), 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO };
  return { ...params, _meta: meta };
}

async function open(): Promise<void> {
  const discover = await bridge.call('server/discover', { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': CLIENT_INFO } }, 2_000, 1024 * 1024);
  const versions = (discover.result?.['supportedVersions'] ?? []) as unknown[];
  if (Array.isArray(versions) && versions.includes(MODERN)) {
    protocolVersion = MODERN;
    return;
  }
  const init = await bridge.call('initialize', { protocolVersion: LEGACY, capabilities: {}, clientInfo: CLIENT_INFO }, OPENING_TIMEOUT_MS, 1024 * 1024);
  if (init.result === undefined) throw new Error(`the MCP server did not answer initialize: ${init.failure?.message ?? init.rpcError?.message ?? 'no result'}`);
  protocolVersion = typeof init.result['protocolVersion'] === 'string' ? init.result['protocolVersion'] : LEGACY;
  bridge.notify('notifications/initialized');
}

const server = new Http1Server({
  limits: { maxHeadBytes: 16 * 1024, maxBodyBytes: 8 * 1024 * 1024 },
  onBadRequest: (error) => ({ status: error.status, headers: JSON_HEADERS, body: JSON.stringify({ error: error.message }) }),
  onRequest: (request, respond) => {
    if (request.method === 'GET' && request.target === '/healthz') {
      const health: McpHostHealth = { status: 'ok', busy, running: busy ? 1 : 0, protocolVersion };
      respond({ status: 200, headers: JSON_HEADERS, body: JSON.stringify(health) });
      return;
    }
    if (request.method !== 'POST' || request.target !== MCP_HOST_PATH) {
      respond({ status: 404, headers: JSON_HEADERS, body: JSON.stringify({ error: `${request.method} ${request.target}` }) });
      return;
    }
    if (busy) {
      respond({ status: 429, headers: JSON_HEADERS, body: JSON.stringify({ error: 'busy' }) });
      return;
    }
    let call: McpHostCall;
    try {
      call = JSON.parse(request.body.toString('utf8')) as McpHostCall;
    } catch {
      respond({ status: 400, headers: JSON_HEADERS, body: JSON.stringify({ error: 'the body is not JSON' }) });
      return;
    }
    busy = true;
    void bridge
      .call(call.method, withEnvelope(call.params ?? {}), call.timeoutMs, call.maxOutputBytes)
      .then((answer: McpHostAnswer) => respond({ status: 200, headers: JSON_HEADERS, body: JSON.stringify(answer) }))
      .finally(() => {
        busy = false;
      });
  },
});

// The server's arguments, with the sandbox's paths in place.
const args = values['server-arg'].map((arg) => arg.replaceAll('{work}', workDir));
for (const arg of args) if (arg.startsWith(`${workDir}/`)) mkdirSync(arg, { recursive: true });
for (const variable of values['server-env']) {
  const equals = variable.indexOf('=');
  if (equals > 0) process.env[variable.slice(0, equals)] = variable.slice(equals + 1).replaceAll('{work}', workDir);
}
process.argv = [process.argv[0]!, path.resolve(entry), ...args];
await import(pathToFileURL(path.resolve(entry)).href);
await open();
const target = listen.startsWith('unix:') ? { path: listen.slice('unix:'.length) } : (() => {
  const tcp = /^tcp:(.+):(\d+)$/.exec(listen);
  if (!tcp) throw new Error(`--listen must be unix:<path> or tcp:<host>:<port>, got "${listen}"`);
  return { host: tcp[1]!, port: Number(tcp[2]) };
})();
server.server.listen(target, () => {
  realStdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid, protocolVersion })}\n`);
});
