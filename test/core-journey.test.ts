/**
 * The whole request path through `uhlp dev`, over real HTTP, with real runner
 * child processes: every result type, every bad input the core must survive,
 * and a clean stop that leaves no sandbox behind.
 */
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from './helpers/wait-for.js';
import { copyFixture, descendants, isAlive, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';

let core: UhlpProcess;

beforeAll(async () => {
  core = await startUhlpDev(copyFixture('journey'));
});

afterAll(async () => {
  await core?.stop();
});

async function get(path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; text: string; json: any }> {
  const response = await fetch(`${core.url}${path}`, init);
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, headers: response.headers, text, json };
}

describe('uhlp dev end to end', () => {
  it('is ready with every pool warm, and reports the invalid app with file, JSON path and reason', async () => {
    const ready = await get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.json.apps.sort()).toEqual(['journey', 'other']);
    expect(ready.json.definitionProblems).toContainEqual(
      expect.objectContaining({ file: 'apps/broken/app.yaml', path: '/spec/pools/0/maxSize' }),
    );
    expect(core.stderr()).toContain('apps/broken/app.yaml');
    expect((await get('/other/hello')).json).toEqual({ hello: 'world' });
  });

  it('passes httpDetails exactly: decoded path parameters, query, headers, path with query', async () => {
    const { status, json } = await get('/j/echo/a%20b%2Fc?x=1&x=2&y=z%20z', { headers: { 'X-Custom': 'yes' } });
    expect(status).toBe(200);
    const details = json.event.httpDetails;
    expect(json.event.source).toBe('http');
    expect(details).toMatchObject({
      method: 'GET',
      path: '/echo/a%20b%2Fc?x=1&x=2&y=z%20z',
      routePattern: '/echo/:p',
      pathParameters: { p: 'a b/c' },
      queryParameters: { x: ['1', '2'], y: 'z z' },
      body: '',
      bodyEncoding: 'utf8',
    });
    expect(details.headers['x-custom']).toBe('yes');
    expect(json).toMatchObject({ appId: 'journey', componentId: 'echo', configuration: { greeting: 'Hi' } });
  });

  it('sends a body that is not UTF-8 as base64, and UTF-8 as text', async () => {
    const bytes = Buffer.from([0xff, 0x00, 0xc3, 0x28]);
    const binary = await get('/j/echo/b', { method: 'POST', body: bytes, headers: { 'content-type': 'application/octet-stream' } });
    expect(binary.json.event.httpDetails.bodyEncoding).toBe('base64');
    expect(Buffer.from(binary.json.event.httpDetails.body, 'base64')).toEqual(bytes);
    const text = await get('/j/echo/t', { method: 'POST', body: 'héllo', headers: { 'content-type': 'text/plain' } });
    expect(text.json.event.httpDetails).toMatchObject({ body: 'héllo', bodyEncoding: 'utf8' });
  });

  it('routes by Host on the full path', async () => {
    // fetch() may not set Host; node:http may.
    const { port, hostname } = new URL(core.url);
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: hostname, port, path: '/echo/h', headers: { Host: 'journey.test:8080' } }, (res) => {
          let data = '';
          res.on('data', (c) => (data += c));
          res.on('end', () => (res.statusCode === 200 ? resolve(data) : reject(new Error(`${res.statusCode} ${data}`))));
        })
        .on('error', reject);
    });
    expect(JSON.parse(body).event.httpDetails.path).toBe('/echo/h');
  });

  it('proxies httpResponse exactly, including binary bodies', async () => {
    const greet = await get('/j/greet/ada');
    expect(greet.status).toBe(201);
    expect(greet.headers.get('x-greeting')).toBe('Hi');
    expect(greet.text).toBe('Hi ada');
    const response = await fetch(`${core.url}/j/binary`);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(Buffer.from(await response.arrayBuffer())).toEqual(Buffer.from([0, 1, 254, 255]));
  });

  it('echoes X-Request-ID, and generates one when absent, on errors too', async () => {
    const given = await get('/j/greet/x', { headers: { 'X-Request-ID': 'trace-me-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-me-123');
    const generated = await get('/nowhere');
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(generated.json.requestId).toBe(generated.headers.get('x-request-id'));
  });

  it('answers 404 for an unknown app and an unknown route', async () => {
    const app = await get('/nowhere/x');
    expect(app.status).toBe(404);
    expect(app.json.code).toBe('UHLP_APP_NOT_FOUND');
    const route = await get('/j/nothing-here');
    expect(route.status).toBe(404);
    expect(route.json).toMatchObject({ code: 'UHLP_ROUTE_NOT_FOUND' });
    expect(route.json.requestId).toBeTruthy();
  });

  it('answers 413 from the Content-Length alone, before any body byte is sent', async () => {
    const { port, hostname } = new URL(core.url);
    const reply = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(port), hostname, () => {
        socket.write(`POST /j/echo/big HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`);
      });
      let data = '';
      socket.on('data', (c) => {
        data += c.toString();
        if (data.includes('}')) {
          socket.destroy();
          resolve(data);
        }
      });
      socket.on('error', reject);
      setTimeout(() => reject(new Error(`no answer; got ${data}`)), 5000);
    });
    expect(reply).toMatch(/^HTTP\/1.1 413/);
    expect(reply).toContain('"code":"UHLP_BODY_TOO_LARGE"');
    expect(reply).toMatch(/x-request-id: \S+/i);
  });

  it("serves the core's own paths and app routes on one port, chunked uploads after 100 Continue, and names what it cannot read", async () => {
    const { port, hostname } = new URL(core.url);
    const socket = net.connect(Number(port), hostname);
    await once(socket, 'connect');
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    /** The next answer on the connection (framed by Content-Length), once it is whole. */
    const nextAnswer = async (): Promise<{ status: number; head: string; body: string }> => {
      let answer: { status: number; head: string; body: string } | undefined;
      await waitFor(() => {
        const text = received.toString('latin1');
        const end = text.indexOf('\r\n\r\n');
        if (end === -1) return false;
        const head = text.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (received.length < end + 4 + length) return false;
        answer = { status: Number(head.slice(9, 12)), head, body: received.subarray(end + 4, end + 4 + length).toString() };
        received = received.subarray(end + 4 + length);
        return true;
      }, { what: 'an answer' });
      return answer!;
    };
    const get = (path: string): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

    socket.write(get('/other/hello'));
    expect(await nextAnswer()).toMatchObject({ status: 200, body: '{"hello":"world"}' });
    // A core path is answered by fastify, and the connection ends with its answer: the app request after it is not read.
    socket.write(get('/readyz') + get('/other/hello'));
    const ready = await nextAnswer();
    expect(ready.status).toBe(200);
    expect(ready.head).toMatch(/connection: close/i);
    await waitFor(() => socket.readableEnded, { what: 'the end of the connection' });
    expect(received.length).toBe(0);

    const fresh = net.connect(Number(port), hostname);
    await once(fresh, 'connect');
    socket.destroy();
    received = Buffer.alloc(0);
    fresh.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    fresh.write('POST /j/echo/up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n');
    await waitFor(() => received.toString().startsWith('HTTP/1.1 100 Continue\r\n\r\n'), { what: '100 Continue' });
    received = received.subarray('HTTP/1.1 100 Continue\r\n\r\n'.length);
    fresh.write('5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n');
    const echoed = await nextAnswer();
    expect(JSON.parse(echoed.body).event.httpDetails).toMatchObject({ body: 'hello world', bodyEncoding: 'utf8' });

    fresh.write(`GET /j/echo/h HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
    const tooLarge = await nextAnswer();
    expect(tooLarge.status).toBe(431);
    expect(JSON.parse(tooLarge.body)).toMatchObject({ code: 'UHLP_REQUEST_HEAD_TOO_LARGE', requestId: expect.any(String) });
    expect(tooLarge.head).toMatch(/connection: close/i);
    fresh.destroy();

    const old = net.connect(Number(port), hostname);
    await once(old, 'connect');
    received = Buffer.alloc(0);
    old.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
    old.write('GET /j/echo/v HTTP/1.7\r\nHost: x\r\n\r\n');
    const version = await nextAnswer();
    expect(version.status).toBe(505);
    expect(JSON.parse(version.body)).toMatchObject({ code: 'UHLP_HTTP_VERSION_NOT_SUPPORTED', details: { field: 'request-line' } });
    old.destroy();
  });

  it('keeps its limits and error answers for an app request after a core path: it is read on a fresh connection, answered as on any other', async () => {
    const { port, hostname } = new URL(core.url);
    /** Sends the bytes on a new connection; the answers it gets (framed by Content-Length), until `count` or the end of the connection. */
    const exchange = async (bytes: string, count: number): Promise<{ answers: { status: number; head: string; body: string }[]; ended: boolean }> => {
      const socket = net.connect(Number(port), hostname);
      await once(socket, 'connect');
      let received = Buffer.alloc(0);
      let ended = false;
      socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
      socket.on('end', () => (ended = true));
      socket.write(bytes);
      const answers: { status: number; head: string; body: string }[] = [];
      await waitFor(
        () => {
          for (;;) {
            const end = received.indexOf('\r\n\r\n');
            if (end === -1) break;
            const head = received.toString('latin1', 0, end);
            const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
            if (received.length < end + 4 + length) break;
            answers.push({ status: Number(head.slice(9, 12)), head, body: received.toString('utf8', end + 4, end + 4 + length) });
            received = received.subarray(end + 4 + length);
          }
          return answers.length >= count || ended;
        },
        { what: `${count} answers or the end of the connection` },
      );
      socket.destroy();
      return { answers, ended };
    };
    /** What an answer says, without what differs from one request to the next (ids, dates). */
    const gist = (answer: { status: number; head: string; body: string }): { status: number; code?: string; closes: boolean } => {
      const code = answer.body.startsWith('{') ? (JSON.parse(answer.body) as { code?: string }).code : undefined;
      return { status: answer.status, ...(code !== undefined ? { code } : {}), closes: /connection: close/i.test(answer.head) };
    };
    const oversize = `GET /other/hello HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`;
    const malformed = 'GET /other/hello HTTP/1.1\r\nHost: x\r\nX-Bad : 1\r\n\r\n';
    const normal = 'GET /other/hello HTTP/1.1\r\nHost: x\r\n\r\n';

    for (const [name, bad, expected] of [
      ['oversize', oversize, { status: 431, code: 'UHLP_REQUEST_HEAD_TOO_LARGE', closes: true }],
      ['malformed', malformed, { status: 400, code: 'UHLP_BAD_REQUEST', closes: true }],
    ] as const) {
      // On a fresh connection: the core's own answer, and the connection ends with it.
      const fresh = [...(await exchange(bad, 1)).answers, ...(await exchange(normal, 1)).answers].map(gist);
      expect(fresh, name).toEqual([expected, { status: 200, closes: false }]);
      // After a core path on the same connection: the core path is answered, the connection ends, and
      // neither request after it is read by anyone.
      const after = await exchange(`GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n${bad}${normal}`, 3);
      expect(after.answers.map(gist), name).toEqual([{ status: 200, closes: true }]);
      expect(after.ended, name).toBe(true);
      // Sent again on a fresh connection, as a client must after `connection: close`: the same answers.
      const again = [...(await exchange(bad, 1)).answers, ...(await exchange(normal, 1)).answers].map(gist);
      expect(again, name).toEqual(fresh);
    }
    // A core path whose body is over the core's limit gets the core's 413, not fastify's.
    const big = await exchange(`POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: ${50 * 1024 * 1024}\r\n\r\n`, 1);
    expect(big.answers.map(gist)).toEqual([{ status: 413, code: 'UHLP_BODY_TOO_LARGE', closes: true }]);
  });

  it('maps a script exception to 500 without a stack trace, and an app error to its status', async () => {
    const failed = await get('/j/fail');
    expect(failed.status).toBe(500);
    expect(failed.json).toMatchObject({ code: 'UHLP_SCRIPT_EXCEPTION', message: 'the script broke' });
    expect(failed.text).not.toMatch(/\bat .*:\d+:\d+/);
    const refused = await get('/j/refuse');
    expect(refused.status).toBe(409);
    expect(refused.json).toMatchObject({ code: 'CONFLICT', message: 'already exists', details: { id: 7 } });
  });

  it('runs a WORKFLOW component as a run of its workflow, its JIT step run by the core', async () => {
    const { status, json } = await get('/j/think');
    expect(status).toBe(200);
    expect(json).toEqual({ component: 'echo', source: 'trigger' });
  });

  it('answers 504 for a script that never resolves, destroys that sandbox, and keeps serving', async () => {
    const started = Date.now();
    const { status, json } = await get('/j/hang');
    expect(status).toBe(504);
    expect(json.code).toBe('UHLP_SANDBOX_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(3000);
    await waitFor(async () => (await get('/j/pid')).status === 200);
  });

  it('answers 502 for a script that exits its process, and replaces the sandbox', async () => {
    const { status, json } = await get('/j/exit');
    expect(status).toBe(502);
    expect(json.code).toBe('UHLP_SANDBOX_DIED');
    await waitFor(async () => (await get('/j/pid')).status === 200, { what: 'fragile pool serving again' });
  });

  it('serves 30 concurrent requests on a pool of at most 4, never running more than 4 at once', async () => {
    const results = await Promise.all(Array.from({ length: 30 }, () => get('/j/slow')));
    expect(results.map((r) => r.status)).toEqual(Array(30).fill(200));
    const events = results.flatMap((r) => [
      { t: r.json.start, d: 1 },
      { t: r.json.end, d: -1 },
    ]);
    events.sort((a, b) => a.t - b.t || a.d - b.d);
    let running = 0;
    let peak = 0;
    for (const e of events) peak = Math.max(peak, (running += e.d));
    expect(peak).toBeLessThanOrEqual(4);
    expect(peak).toBeGreaterThan(1);
  });

  it('exports request, routing, sandbox and pool metrics', async () => {
    const { text } = await get('/metrics');
    expect(text).toMatch(/uhlp_http_requests_total\{app="journey",route="\/echo\/:p",status="200"\} \d+/);
    expect(text).toMatch(/uhlp_routing_duration_seconds_bucket\{le="[^"]+",app="journey"\}/);
    expect(text).toMatch(/uhlp_sandbox_execute_duration_seconds_count\{app="journey",pool="fragile",outcome="timeout"\} 1/);
    expect(text).toMatch(/uhlp_pool_sandboxes\{app="journey",pool="main",state="idle"\} \d+/);
    // Counted once the driver has seen the sandbox exit.
    await waitFor(async () => /uhlp_sandbox_destroyed_total\{app="journey",pool="fragile",cause="timeout"\} 1/.test((await get('/metrics')).text), {
      what: 'the timed-out sandbox counted',
    });
  });

  it('stops cleanly on SIGTERM and leaves no runner process behind', async () => {
    // Runners report pids of their own PID namespace; their host processes are the core's descendants.
    const runners = descendants(core.child.pid!);
    expect(runners.length).toBeGreaterThan(0);
    const code = await core.stop('SIGTERM');
    expect(code).toBe(0);
    // A sandbox's processes end with the core (PR_SET_PDEATHSIG), a moment after it.
    await waitFor(() => runners.every((pid) => !isAlive(pid)), { timeoutMs: 5000, what: `runner processes ${runners.filter(isAlive).join(', ')} gone` });
  });
});
