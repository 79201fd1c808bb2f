import http from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { unixSocketFetch, unixSocketPost } from './unix-socket-fetch.js';

describe('unixSocketFetch', () => {
  let dir: string;
  let socket: string;
  let server: http.Server;
  let connections: number;
  let seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }>;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'usf-'));
    socket = path.join(dir, 's.sock');
    connections = 0;
    seen = [];
    server = http.createServer((request, response) => {
      let body = '';
      request.setEncoding('utf8');
      request.on('data', (chunk: string) => (body += chunk));
      request.on('end', () => {
        seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
        if (request.url === '/chunked') {
          response.write('{"a":');
          setImmediate(() => response.end('1}'));
          return;
        }
        if (request.url === '/close') response.setHeader('connection', 'close');
        if (request.url === '/slow') return;
        response.writeHead(request.url === '/missing' ? 404 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ echo: body }));
      });
    });
    server.on('connection', () => connections++);
    await new Promise<void>((resolve) => server.listen(socket, resolve));
  });

  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('sends the method, path, query, headers and body, and answers status and body', async () => {
    const fetch = unixSocketFetch(socket);
    const response = await fetch('http://core/mcp?x=1', { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer t' }, body: '{"é":1}' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ echo: '{"é":1}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/mcp?x=1', body: '{"é":1}', headers: { host: 'core', authorization: 'Bearer t', 'content-length': '8' } });
    expect((await fetch('http://core/missing', { method: 'POST', body: '' })).status).toBe(404);
  });

  it('keeps one connection alive for calls one after another, and opens one per call in flight at once', async () => {
    const fetch = unixSocketFetch(socket);
    for (let i = 0; i < 5; i++) expect((await fetch('http://core/mcp', { method: 'POST', body: String(i) })).ok).toBe(true);
    expect(connections).toBe(1);
    const answers = await Promise.all([1, 2, 3].map(async (i) => (await fetch('http://core/mcp', { method: 'POST', body: String(i) })).json()));
    expect(answers).toEqual([{ echo: '1' }, { echo: '2' }, { echo: '3' }]);
    expect(connections).toBe(3);
  });

  it('reads a chunked answer, and opens a new connection after one the server closed', async () => {
    const fetch = unixSocketFetch(socket);
    expect(await (await fetch('http://core/chunked', { method: 'POST', body: '' })).json()).toEqual({ a: 1 });
    expect((await fetch('http://core/close', { method: 'POST', body: '' })).ok).toBe(true);
    expect((await fetch('http://core/mcp', { method: 'POST', body: '' })).ok).toBe(true);
    expect(connections).toBe(2);
  });

  it('refuses a header value that would start a header of its own, and stops a call when its signal aborts', async () => {
    const fetch = unixSocketFetch(socket);
    await expect(fetch('http://core/mcp', { method: 'POST', headers: { 'x-a': 'b\r\nx-evil: 1' } as Record<string, string>, body: '' })).rejects.toThrow();
    const aborter = new AbortController();
    const slow = fetch('http://core/slow', { method: 'POST', body: '', signal: aborter.signal });
    await expect.poll(() => seen.length).toBe(1);
    aborter.abort();
    await expect(slow).rejects.toThrow('aborted');
    expect((await fetch('http://core/mcp', { method: 'POST', body: 'after' })).ok).toBe(true);
  });

  it('rejects when nothing listens on the socket', async () => {
    await expect(unixSocketFetch(path.join(dir, 'none.sock'))('http://core/mcp', { method: 'POST', body: '' })).rejects.toThrow(/ENOENT/);
  });

  it('posts without fetch: the target, lower-case headers and body; the answer status and bytes; a header with CR or LF refused before anything is sent', async () => {
    const post = unixSocketPost(socket);
    const answer = await post('/mcp?y=2', { 'content-type': 'application/json', 'mcp-method': 'tools/call' }, '{"a":1}');
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ echo: '{"a":1}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/mcp?y=2', headers: { host: 'localhost', 'mcp-method': 'tools/call', 'content-length': '7' } });
    await expect(post('/mcp', { authorization: 'Bearer t\r\nx-evil: 1' }, '')).rejects.toThrow(/cannot be sent/);
    expect(seen).toHaveLength(1);
    expect(connections).toBe(1);
  });
});
