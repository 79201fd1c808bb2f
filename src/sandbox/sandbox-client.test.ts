import http from 'node:http';
import net from 'node:net';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SandboxClient, SandboxTransportError } from './sandbox-client.js';

const closers: Array<() => void> = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

function socketPath(): string {
  return path.join(mkdtempSync(path.join(os.tmpdir(), 'uhlp-sc-')), 'r.sock');
}

/** A Node HTTP server on a Unix socket, standing in for a runner. */
async function fakeRunner(handler: http.RequestListener): Promise<{ path: string; connections: () => number }> {
  const where = socketPath();
  let connections = 0;
  const server = http.createServer(handler);
  server.on('connection', () => (connections += 1));
  await new Promise<void>((resolve) => server.listen(where, resolve));
  closers.push(() => server.close());
  return { path: where, connections: () => connections };
}

/** A raw socket server that answers each connection with `reply`. */
async function rawRunner(reply: (socket: net.Socket) => void): Promise<string> {
  const where = socketPath();
  const server = net.createServer((socket) => socket.once('data', () => reply(socket)));
  await new Promise<void>((resolve) => server.listen(where, resolve));
  closers.push(() => server.close());
  return where;
}

function client(where: string): SandboxClient {
  const c = new SandboxClient({ kind: 'unix', socketPath: where });
  closers.push(() => c.close());
  return c;
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => 'answered',
    (error: unknown) => (error instanceof SandboxTransportError ? error.failure : String(error)),
  );

describe('SandboxClient', () => {
  it('sends /execute with the request id and keeps the connection alive', async () => {
    const seen: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
    const runner = await fakeRunner((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ headers: req.headers, body });
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: body }));
      });
    });
    const c = client(runner.path);
    for (let i = 0; i < 3; i++) {
      const answer = await c.execute(`{"n":${i},"s":"é"}`, `req-${i}`, 1000, 'trace-1');
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body.toString())).toEqual({ echo: `{"n":${i},"s":"é"}` });
    }
    expect(seen[2]!.headers).toMatchObject({ 'x-request-id': 'req-2', 'x-trace-id': 'trace-1', 'content-type': 'application/json' });
    expect(runner.connections()).toBe(1);
  });

  it('opens a connection per concurrent request and reuses them afterwards', async () => {
    const runner = await fakeRunner((req, res) => {
      req.resume();
      req.on('end', () => setTimeout(() => res.end('ok'), 20));
    });
    const c = client(runner.path);
    await Promise.all([1, 2, 3].map((i) => c.execute('{}', `r${i}`, 1000)));
    await Promise.all([4, 5, 6].map((i) => c.execute('{}', `r${i}`, 1000)));
    expect(runner.connections()).toBe(3);
  });

  it('reads chunked answers and answers that end with the connection', async () => {
    const chunked = await fakeRunner((req, res) => {
      req.resume();
      res.write('ab');
      setTimeout(() => res.end('cd'), 5);
    });
    expect((await client(chunked.path).execute('{}', 'r', 1000)).body.toString()).toBe('abcd');
    const untilClose = await rawRunner((socket) => socket.end('HTTP/1.1 200 OK\r\n\r\nwhole'));
    expect((await client(untilClose).execute('{}', 'r', 1000)).body.toString()).toBe('whole');
  });

  it('tells connect failures, drops and timeouts apart', async () => {
    expect(await failure(client(path.join(os.tmpdir(), 'uhlp-no-such.sock')).execute('{}', 'r', 1000))).toBe('connect');
    const dropper = await rawRunner((socket) => socket.destroy());
    expect(await failure(client(dropper).execute('{}', 'r', 1000))).toBe('dropped');
    const garbage = await rawRunner((socket) => socket.write('SSH-2.0\r\n\r\n'));
    expect(await failure(client(garbage).execute('{}', 'r', 1000))).toBe('dropped');
    const silent = await rawRunner(() => undefined);
    const started = performance.now();
    expect(await failure(client(silent).execute('{}', 'r', 150))).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('does not reuse a connection the runner closed, and probes /healthz', async () => {
    const runner = await fakeRunner((req, res) => {
      req.resume();
      res.setHeader('connection', 'close');
      res.end(req.url === '/healthz' ? '{"status":"ok"}' : 'x');
    });
    const c = client(runner.path);
    expect(await c.probe(1000)).toBe(true);
    expect((await c.execute('{}', 'a', 1000)).status).toBe(200);
    expect((await c.execute('{}', 'b', 1000)).status).toBe(200);
    expect(runner.connections()).toBe(3);
    expect(await client(path.join(os.tmpdir(), 'uhlp-no-such.sock')).probe(200)).toBe(false);
  });

  it('refuses a request id that would break the header block', async () => {
    const runner = await fakeRunner((_req, res) => res.end());
    await expect(client(runner.path).execute('{}', 'a\r\nx-evil: 1', 1000)).rejects.toThrow(/cannot be sent as a header/);
  });

  it('fails requests in flight when closed', async () => {
    const silent = await rawRunner(() => undefined);
    const c = client(silent);
    const pending = failure(c.execute('{}', 'r', 5000));
    await new Promise((r) => setTimeout(r, 20));
    c.close();
    expect(await pending).toBe('dropped');
  });
});
