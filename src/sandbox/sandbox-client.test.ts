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

function client(where: string, maxResponseBytes?: number): SandboxClient {
  const c = new SandboxClient({ kind: 'unix', socketPath: where }, maxResponseBytes !== undefined ? { maxResponseBytes } : {});
  closers.push(() => c.close());
  return c;
}

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => 'answered',
    (error: unknown) => (error instanceof SandboxTransportError ? error.failure : String(error)),
  );

describe('SandboxClient', () => {
  it('cuts an /execute when its signal aborts: the runner sees the connection closed, the caller a dropped transport', async () => {
    let closed = false;
    const where = await rawRunner((socket) => socket.once('close', () => (closed = true)));
    const c = client(where);
    const cutter = new AbortController();
    const pending = failure(c.execute('{}', 'req-cut', 30_000, undefined, cutter.signal));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const started = performance.now();
    cutter.abort();
    expect(await pending).toBe('dropped');
    expect(performance.now() - started).toBeLessThan(1_000);
    await expect.poll(() => closed, { timeout: 2_000 }).toBe(true);
    // An execution whose run was cancelled before it was sent is never sent.
    expect(await failure(c.execute('{}', 'req-late', 30_000, undefined, cutter.signal))).toBe('dropped');
  });

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
    expect(await failure(client(garbage).execute('{}', 'r', 1000))).toBe('bad-response');
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
  describe('answers over the size limit', () => {
    const LIMIT = 256 * 1024;
    /** Far past anything the client may take in: what an endless stream would reach if it were read on. */
    const ENDLESS = 512 * 1024 * 1024;

    /**
     * A runner that answers with `head` and then writes body bytes as fast as the
     * client reads them, until the connection goes or ENDLESS bytes are out.
     */
    async function floodingRunner(head: string, piece: (size: number) => Buffer): Promise<{ path: string; written: () => number; closed: Promise<void> }> {
      let written = 0;
      let markClosed!: () => void;
      const closed = new Promise<void>((resolve) => (markClosed = resolve));
      const where = await rawRunner((socket) => {
        socket.on('error', () => undefined);
        socket.once('close', () => markClosed());
        socket.write(head);
        const pump = (): void => {
          while (!socket.destroyed && written < ENDLESS) {
            const chunk = piece(64 * 1024);
            written += chunk.length;
            if (!socket.write(chunk)) {
              socket.once('drain', pump);
              return;
            }
          }
        };
        pump();
      });
      return { path: where, written: () => written, closed };
    }

    it('refuses a Content-Length over the limit from the head and stops reading', async () => {
      const runner = await floodingRunner(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${300 * 1024 * 1024}\r\n\r\n`, (size) => Buffer.alloc(size, 0x78));
      const error = await client(runner.path, LIMIT)
        .execute('{}', 'r', 10_000)
        .then(
          () => undefined,
          (e: unknown) => e as SandboxTransportError,
        );
      expect(error).toBeInstanceOf(SandboxTransportError);
      expect(error).toMatchObject({ failure: 'too-large', details: { limitBytes: LIMIT, declaredBytes: 300 * 1024 * 1024 } });
      await runner.closed;
      // What the runner got out is what the kernel's socket buffers held, nowhere near the answer.
      expect(runner.written()).toBeLessThan(32 * 1024 * 1024);
    });

    it('refuses a chunked answer as soon as it grows past the limit and stops reading', async () => {
      const chunk = (size: number): Buffer => Buffer.concat([Buffer.from(`${size.toString(16)}\r\n`), Buffer.alloc(size, 0x79), Buffer.from('\r\n')]);
      const runner = await floodingRunner('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n', chunk);
      const error = await client(runner.path, LIMIT)
        .execute('{}', 'r', 10_000)
        .then(
          () => undefined,
          (e: unknown) => e as SandboxTransportError,
        );
      expect(error).toMatchObject({ failure: 'too-large', details: { limitBytes: LIMIT } });
      await runner.closed;
      expect(runner.written()).toBeLessThan(32 * 1024 * 1024);
    });

    it("refuses a node:http runner's streamed answer past the limit, and takes one of exactly the limit", async () => {
      const runner = await fakeRunner((req, res) => {
        req.resume();
        const size = req.headers['x-request-id'] === 'big' ? LIMIT + 1 : LIMIT;
        // Streamed in pieces: node:http frames it chunked.
        for (let sent = 0; sent < size; sent += 1000) res.write(Buffer.alloc(Math.min(1000, size - sent), 0x7a));
        res.end();
      });
      const c = client(runner.path, LIMIT);
      expect(await failure(c.execute('{}', 'big', 5000))).toBe('too-large');
      const exact = await c.execute('{}', 'exact', 5000);
      expect(exact.body.length).toBe(LIMIT);
      // The refused answer's connection was dropped, not reused.
      expect(runner.connections()).toBe(2);
    });

    it('reads answers up to 8 MiB by default', async () => {
      const size = 8 * 1024 * 1024;
      const runner = await fakeRunner((req, res) => {
        req.resume();
        res.end(Buffer.alloc(req.headers['x-request-id'] === 'over' ? size + 1 : size, 0x61));
      });
      const c = client(runner.path);
      expect((await c.execute('{}', 'at', 5000)).body.length).toBe(size);
      expect(await failure(c.execute('{}', 'over', 5000))).toBe('too-large');
    });
  });
});
