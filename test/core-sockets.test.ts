/**
 * The core's own sockets are not a way in, through real cores:
 * - `uhlp dev` (the std-body host runs as its child): a rogue client on the
 *   spine socket can register neither tool.shell.exec nor tool.web.fetch,
 *   receives no shell call, and cannot stop the core; the Unix socket mounted
 *   into containers (mcp.sock) answers /mcp and 404 for everything else, while
 *   the TCP listener serves every route;
 * - `uhlp start` / `uhlp stop`: stop still works through the spine, with the
 *   secret read from the data directory, after a rogue's exit was refused.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { LineSplitter } from '../src/spine/json-lines.js';
import { readSpineSecret, spineSecretPath } from '../src/spine/spine-secret.js';
import { copyFixture, isAlive, startUhlpDev, UHLP_BIN, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

const run = promisify(execFile);

/** A client of the spine socket that knows no secret: what a script or another local program could do. */
class RoguePeer {
  readonly lines: Array<Record<string, unknown>> = [];
  private constructor(private readonly socket: net.Socket) {
    const splitter = new LineSplitter(1 << 20);
    socket.on('data', (chunk: Buffer) => {
      for (const line of splitter.push(chunk).lines) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    });
  }

  static async connect(socketPath: string): Promise<RoguePeer> {
    const socket = net.connect(socketPath);
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    return new RoguePeer(socket);
  }

  send(message: Record<string, unknown>): void {
    this.socket.write(`${JSON.stringify(message)}\n`);
  }

  /** Sends and waits for the next line the core answers. */
  async ask(message: Record<string, unknown>): Promise<Record<string, unknown>> {
    const before = this.lines.length;
    this.send(message);
    await waitFor(() => this.lines.length > before, { what: 'an answer on the spine' });
    return this.lines[before]!;
  }

  get open(): boolean {
    return !this.socket.destroyed && !this.socket.readableEnded;
  }

  close(): void {
    this.socket.destroy();
  }
}

/** One HTTP request over a Unix socket. */
function overUnix(
  socketPath: string,
  method: string,
  target: string,
  options: { headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const request = http.request({ socketPath, method, path: target, headers: options.headers, agent: false }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text }));
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The core's sockets for a data directory, as the core computes them. */
function socketsOf(definitionsDir: string, dataDir: string): { spine: string; mcp: string; secret: string } {
  const { spineSocket } = loadConfig(definitionsDir, { 'data-dir': dataDir }, {});
  return { spine: spineSocket, mcp: path.join(path.dirname(spineSocket), 'mcp.sock'), secret: spineSecretPath(spineSocket) };
}

describe('the core under uhlp dev', () => {
  let core: UhlpProcess;
  let sockets: { spine: string; mcp: string; secret: string };
  const rogues: RoguePeer[] = [];

  beforeAll(async () => {
    const defs = copyFixture('sockets');
    core = await startUhlpDev(defs);
    sockets = socketsOf(defs, core.dataDir);
  });

  afterAll(async () => {
    for (const rogue of rogues) rogue.close();
    await core?.stop();
  });

  async function rogue(): Promise<RoguePeer> {
    const made = await RoguePeer.connect(sockets.spine);
    rogues.push(made);
    return made;
  }

  it('keeps a 256-bit secret in a 0600 file beside a 0600 spine socket, and off the std-body host command line and environment', () => {
    expect(statSync(sockets.spine).mode & 0o777).toBe(0o600);
    expect(statSync(sockets.secret).mode & 0o777).toBe(0o600);
    const secret = readSpineSecret(sockets.secret)!;
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const hosts = readdirSync('/proc')
      .filter((entry) => /^\d+$/.test(entry))
      .filter((pid) => {
        try {
          const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
          return cmdline.includes('std-body/main.js') && cmdline.includes(sockets.spine);
        } catch {
          return false;
        }
      });
    expect(hosts).toHaveLength(1);
    expect(readFileSync(`/proc/${hosts[0]}/cmdline`, 'utf8')).not.toContain(secret);
    expect(readFileSync(`/proc/${hosts[0]}/environ`, 'utf8')).not.toContain(secret);
  });

  it('refuses a rogue registration of the std-body routes; shell calls still reach the std-body host only', async () => {
    const peer = await rogue();
    const attempts: Array<Record<string, unknown>> = [
      { affordance_key: 'tool.shell.exec', capability_handle: 'cap.std.shell' },
      { affordance_key: 'tool.shell.exec', capability_handle: 'cap.std.shell', secret: 'guessed' },
      { affordance_key: 'tool.shell.exec', capability_handle: 'cap.std.shell', secret: '0'.repeat(64) },
      { affordance_key: 'tool.web.fetch', capability_handle: 'cap.std.web.fetch' },
      { affordance_key: 'tool.evil', capability_handle: 'cap.std.shell' },
    ];
    for (const attempt of attempts) {
      expect(await peer.ask({ type: 'endpoint_register', ...attempt })).toMatchObject({
        type: 'error',
        code: 'UHLP_SPINE_FORBIDDEN',
        affordance_key: attempt['affordance_key'],
      });
    }
    // Other affordances still register without a secret.
    expect(await peer.ask({ type: 'endpoint_register', affordance_key: 'chat.reply.emit', capability_handle: 'cap.chat' })).toMatchObject({
      type: 'endpoint_registered',
    });

    const response = await fetch(`${core.url}/shelly/echo/through-the-host`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ stdout: 'through-the-host\n' });
    expect(peer.lines.filter((line) => line['type'] === 'endpoint_invoke')).toEqual([]);
    expect(peer.open).toBe(true);
    await waitFor(() => (core.stderr().match(/UHLP_SPINE_FORBIDDEN/g)?.length ?? 0) >= attempts.length, { what: 'the refusals in the core log' });
  });

  it('refuses a rogue exit and keeps serving', async () => {
    const peer = await rogue();
    expect(await peer.ask({ type: 'exit' })).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });
    expect(await peer.ask({ type: 'exit', secret: 'f'.repeat(64) })).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });
    expect(core.child.exitCode).toBeNull();
    expect(isAlive(core.child.pid!)).toBe(true);
    expect((await fetch(`${core.url}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${core.url}/shelly/echo/still-here`)).json()).toEqual({ stdout: 'still-here\n' });
  });

  it.each([
    ['GET', '/metrics'],
    ['GET', '/readyz'],
    ['GET', '/healthz'],
    ['POST', '/_uhlp/dev/mcp-token'],
    ['POST', '/_uhlp/mcp-token'],
    ['GET', '/shelly/echo/app-path'],
    ['GET', '/'],
    ['POST', '/mcp/'],
    ['POST', '/%6dcp'],
    ['POST', '/mcp/../metrics'],
    ['POST', 'http://localhost/mcp'],
  ])('answers %s %s on mcp.sock with 404 UHLP_ROUTE_NOT_FOUND', async (method, target) => {
    const answer = await overUnix(sockets.mcp, method, target, { headers: { 'content-type': 'application/json' }, body: method === 'POST' ? '{"appId":"shelly"}' : undefined });
    expect(answer.status).toBe(404);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    const body = JSON.parse(answer.text) as { code: string; requestId: string };
    expect(body.code).toBe('UHLP_ROUTE_NOT_FOUND');
    expect(body.requestId).toBe(answer.headers['x-request-id']);
    expect(answer.text).not.toContain('uhlp_mcp_');
  });

  it('serves every route on TCP as before (operator routes on the operator listener), and /mcp on mcp.sock', async () => {
    expect((await fetch(`${core.url}/metrics`)).status).toBe(200);
    expect((await fetch(`${core.url}/readyz`)).status).toBe(200);
    const minted = await fetch(`${core.operatorUrl}/_uhlp/dev/mcp-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"appId":"shelly"}' });
    expect(minted.status).toBe(200);
    const { token } = (await minted.json()) as { token: string };

    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const initialize = await overUnix(sockets.mcp, 'POST', '/mcp', {
      headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'sockets-test', version: '1.0.0' } } }),
    });
    expect(initialize.status, initialize.text).toBe(200);
    expect(JSON.parse(initialize.text)).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: expect.any(Object) } });
    const tools = await overUnix(sockets.mcp, 'POST', '/mcp?probe=1', { headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }) });
    expect(tools.status, tools.text).toBe(200);
    expect((JSON.parse(tools.text) as { result: { tools: Array<{ name: string }> } }).result.tools.map((tool) => tool.name)).toContain('core.linux.executeCommand');
    // Without a token /mcp is reached, and refuses.
    const anonymous = await overUnix(sockets.mcp, 'POST', '/mcp', { headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.text)).toMatchObject({ code: 'UHLP_MCP_UNAUTHORIZED' });
  });
});

describe('uhlp start / stop with a rogue on the spine', () => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-sockets-'));
  const defs = copyFixture('sockets');

  async function uhlp(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    try {
      const { stdout, stderr } = await run(process.execPath, [UHLP_BIN, ...args], { env: { ...process.env, UHLP_LOG_LEVEL: 'info' } });
      return { code: 0, stdout, stderr };
    } catch (error) {
      const e = error as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  }

  afterAll(async () => {
    await uhlp('stop', '--data-dir', dataDir);
  });

  it('stops the core through the spine with the secret, after refusing a rogue exit', async () => {
    const started = await uhlp('start', defs, '--data-dir', dataDir, '--port', '0', '--log-level', 'info');
    expect(started.code, started.stderr).toBe(0);
    const status = JSON.parse((await uhlp('status', '--data-dir', dataDir, '--json')).stdout) as { url: string; core: { pid: number }; socket: { path: string } };
    // The separately started host read the secret file and registered both routes.
    expect(await (await fetch(`${status.url}/shelly/echo/started`)).json()).toEqual({ stdout: 'started\n' });

    const peer = await RoguePeer.connect(status.socket.path);
    try {
      expect(await peer.ask({ type: 'exit' })).toMatchObject({ type: 'error', code: 'UHLP_SPINE_FORBIDDEN' });
      expect(await peer.ask({ type: 'endpoint_register', affordance_key: 'tool.shell.exec', capability_handle: 'cap.std.shell' })).toMatchObject({
        code: 'UHLP_SPINE_FORBIDDEN',
      });
    } finally {
      peer.close();
    }
    expect(isAlive(status.core.pid)).toBe(true);
    expect((await fetch(`${status.url}/healthz`)).status).toBe(200);
    const secret = readSpineSecret(spineSecretPath(status.socket.path));
    expect(secret).toMatch(/^[0-9a-f]{64}$/);

    const stopped = await uhlp('stop', '--data-dir', dataDir);
    expect(stopped.code, stopped.stdout).toBe(0);
    expect(stopped.stdout).toMatch(/core exited; std-body stopped/);
    expect(isAlive(status.core.pid)).toBe(false);
    const coreLog = readFileSync(path.join(dataDir, 'logs', 'core.log'), 'utf8');
    // Stopped by its exit message (not the signal fallback), and the rogue's attempt is in the log.
    expect(coreLog).toContain('exit requested on the spine socket');
    expect(coreLog).toContain('UHLP_SPINE_FORBIDDEN');
    expect(coreLog).not.toContain(secret);
    expect(readFileSync(path.join(dataDir, 'logs', 'std-body.log'), 'utf8')).not.toContain(secret);
  });
});
