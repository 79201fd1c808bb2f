import { once } from 'node:events';
import type http from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../../../test/helpers/wait-for.js';
import { createHandOverServer } from './hand-over-server.js';
import { Http1Server, type Http1Answer, type Http1ServerOptions, type Respond } from './http1-server.js';
import { HttpRequestError, type Http1Request, type RequestLimits } from './request-parser.js';
import { HttpHeaderError, type AnswerHeaders } from './response-head.js';

const LIMITS: RequestLimits = { maxHeadBytes: 1024, maxBodyBytes: 64 };


interface RawAnswer {
  readonly status: number;
  /** Lower-cased names. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

/**
 * A client on a raw socket: writes bytes as given and frames what comes back
 * by Content-Length (interim and bodyless answers, and answers to HEAD, have no
 * body), so that pipelined answers, 100 Continue and bare heads can be told apart.
 */
class RawClient {
  readonly answers: RawAnswer[] = [];
  /** The server ended its side. */
  ended = false;
  closed = false;
  private buffer: Buffer = Buffer.alloc(0);
  private failure: Error | undefined;

  constructor(
    readonly socket: net.Socket,
    /** Indexes of the answers that are to HEAD requests. */
    private readonly noBodyFor: ReadonlySet<number>,
  ) {
    socket.on('data', (chunk: Buffer) => {
      this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
      try {
        this.frame();
      } catch (error) {
        this.failure = error as Error;
      }
    });
    socket.on('end', () => (this.ended = true));
    socket.on('close', () => (this.closed = true));
    // A reset from a server that closed is the end of the story, not a failure of the test.
    socket.on('error', () => {});
  }

  send(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** The answer at `index`, once it has arrived. */
  async answer(index: number): Promise<RawAnswer> {
    await this.until(() => this.answers.length > index, `answer ${index}`);
    return this.answers[index]!;
  }

  async until(condition: () => boolean, what: string, timeoutMs?: number): Promise<void> {
    await waitFor(
      () => {
        // An answer the client cannot read is named when the wait ends.
        if (this.failure) throw this.failure;
        return condition();
      },
      { what, ...(timeoutMs !== undefined ? { timeoutMs } : {}) },
    );
  }

  private frame(): void {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const [statusLine, ...lines] = this.buffer.toString('latin1', 0, end).split('\r\n');
      const status = /^HTTP\/1\.1 (\d{3}) [^\r\n]*$/.exec(statusLine!);
      if (!status) throw new Error(`not a status line: ${JSON.stringify(statusLine)}`);
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        if (colon <= 0) throw new Error(`not a header line: ${JSON.stringify(line)}`);
        const name = line.slice(0, colon).toLowerCase();
        if (name in headers) throw new Error(`header ${name} sent twice`);
        headers[name] = line.slice(colon + 1).trim();
      }
      if ('transfer-encoding' in headers) throw new Error('a chunked answer');
      const code = Number(status[1]);
      const bodyless = code < 200 || code === 204 || code === 304 || this.noBodyFor.has(this.answers.length);
      if (!bodyless && headers['content-length'] === undefined) throw new Error(`answer ${this.answers.length} has no content-length`);
      const length = bodyless ? 0 : Number(headers['content-length']);
      if (this.buffer.length < end + 4 + length) return;
      this.answers.push({ status: code, headers, body: this.buffer.toString('utf8', end + 4, end + 4 + length) });
      this.buffer = this.buffer.subarray(end + 4 + length);
    }
  }
}

interface Served {
  readonly server: Http1Server;
  /** The server's side of each connection, in the order they came. */
  readonly sockets: net.Socket[];
  readonly connect: (options?: { noBodyFor?: number[] }) => Promise<RawClient>;
}

const servers: Http1Server[] = [];
const clients: RawClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) client.socket.destroy();
  for (const server of servers.splice(0)) {
    server.destroyConnections();
    await server.close();
  }
});

/** Answers with its status and the error's message. */
const plainBadRequest = (error: HttpRequestError): Http1Answer => ({ status: error.status, headers: { 'content-type': 'text/plain' }, body: error.message });

async function serve(options: Partial<Http1ServerOptions> & Pick<Http1ServerOptions, 'onRequest'>): Promise<Served> {
  const server = new Http1Server({ limits: LIMITS, onBadRequest: plainBadRequest, ...options });
  servers.push(server);
  const sockets: net.Socket[] = [];
  server.server.on('connection', (socket: net.Socket) => sockets.push(socket));
  const { port } = (await server.listen({ host: '127.0.0.1', port: 0 })) as net.AddressInfo;
  const connect = async (connectOptions: { noBodyFor?: number[] } = {}): Promise<RawClient> => {
    const socket = net.connect({ host: '127.0.0.1', port });
    await once(socket, 'connect');
    const client = new RawClient(socket, new Set(connectOptions.noBodyFor ?? []));
    clients.push(client);
    return client;
  };
  return { server, sockets, connect };
}

const get = (path: string, headers = ''): string => `GET ${path} HTTP/1.1\r\nhost: t\r\n${headers}\r\n`;
const post = (path: string, body: string, headers = ''): string => `POST ${path} HTTP/1.1\r\nhost: t\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;
const text = (body: string, status = 200): Http1Answer => ({ status, headers: { 'content-type': 'text/plain' }, body });

/** Answers each request with its path (or its body, when it has one), and records the requests. */
function echo(seen: Http1Request[]): Http1ServerOptions['onRequest'] {
  return (request, respond) => {
    seen.push(request);
    respond(text(request.body.length > 0 ? request.body.toString() : request.path));
  };
}

describe('Http1Server', () => {
  it('answers pipelined requests in order: a slow first answer comes before a fast second one', async () => {
    const seen: string[] = [];
    let slow: Respond | undefined;
    const { sockets, connect } = await serve({
      onRequest: (request, respond) => {
        seen.push(request.path);
        if (request.path === '/slow') slow = respond;
        else respond(text(request.path));
      },
    });
    const client = await connect();
    const requests = get('/slow') + get('/fast') + get('/faster');
    client.send(requests);
    await waitFor(() => slow !== undefined && sockets[0]!.bytesRead === requests.length, { what: 'every request to arrive' });
    // The next requests wait their turn: the handler does not see them while the first is unanswered.
    expect(seen).toEqual(['/slow']);
    expect(client.answers).toEqual([]);
    slow!(text('/slow'));
    await client.answer(2);
    expect(client.answers.map((answer) => answer.body)).toEqual(['/slow', '/fast', '/faster']);
    expect(seen).toEqual(['/slow', '/fast', '/faster']);
    expect(client.ended).toBe(false);
  });

  it("writes a streamed answer's head once the turn of the event loop that answered has ended: work started with the answer is sent first", async () => {
    const order: string[] = [];
    const served = await serve({
      onRequest: (_request, respond) => {
        respond({ status: 200, headers: { 'content-type': 'text/event-stream' }, stream: { chunks: (async function* () { yield 'data: 1\n\n'; })() } });
        // What the stream waits for, started with the answer a few promise steps deep (a turn reaching its sandbox's request).
        let chain = Promise.resolve();
        for (let i = 0; i < 20; i++) chain = chain.then(() => undefined);
        void chain.then(() => order.push('work'));
      },
    });
    served.server.server.on('connection', (socket: net.Socket) => {
      const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
      socket.write = ((...args: unknown[]) => {
        if (String(args[0]).startsWith('HTTP/1.1 200')) order.push('head');
        return write(...args);
      }) as typeof socket.write;
    });
    const client = await served.connect();
    client.send(get('/events'));
    await waitFor(() => order.includes('head'), { what: 'the head' });
    expect(order).toEqual(['work', 'head']);
  });

  it('counts only the first call of respond', async () => {
    const { connect } = await serve({
      onRequest: (request, respond) => {
        respond(text(`first ${request.path}`));
        respond(text(`second ${request.path}`, 500));
      },
    });
    const client = await connect();
    client.send(get('/a') + get('/b'));
    await client.answer(1);
    expect(client.answers.map((answer) => [answer.status, answer.body])).toEqual([
      [200, 'first /a'],
      [200, 'first /b'],
    ]);
  });

  it('tells a handler that asked when its client goes away before the answer, and not after it stopped listening', async () => {
    const told: string[] = [];
    const seen: string[] = [];
    let stop: (() => void) | undefined;
    const { sockets, connect } = await serve({
      onRequest: (request, _respond, onGone) => {
        seen.push(request.path);
        const off = onGone(() => told.push(request.path));
        if (request.path === '/quiet') stop = off;
      },
    });
    const quiet = await connect();
    quiet.send(get('/quiet'));
    await waitFor(() => stop !== undefined, { what: 'the first request at the handler' });
    stop!();
    // Reset, not ended: a client that only half-closes still gets its answer, so it has not gone away.
    quiet.socket.resetAndDestroy();
    await waitFor(() => sockets[0]!.destroyed, { what: 'the first connection to close' });
    const gone = await connect();
    gone.send(get('/gone'));
    await waitFor(() => seen.includes('/gone'), { what: 'the second request at the handler' });
    expect(told).toEqual([]);
    gone.socket.resetAndDestroy();
    await waitFor(() => told.length > 0, { what: 'the handler to be told' });
    expect(told).toEqual(['/gone']);
  });

  it.each([
    { name: 'keeps an HTTP/1.1 connection', request: get('/first'), connection: undefined, closes: false },
    { name: 'answers `connection: close` with it, then closes', request: get('/first', 'connection: close\r\n'), connection: 'close', closes: true },
    { name: 'closes an HTTP/1.0 connection', request: 'GET /first HTTP/1.0\r\n\r\n', connection: 'close', closes: true },
    {
      name: 'keeps an HTTP/1.0 connection that asks for keep-alive, and says so',
      request: 'GET /first HTTP/1.0\r\nconnection: keep-alive\r\n\r\n',
      connection: 'keep-alive',
      closes: false,
    },
  ])('$name', async ({ request, connection, closes }) => {
    const seen: Http1Request[] = [];
    const { connect } = await serve({ onRequest: echo(seen) });
    const client = await connect();
    client.send(request + get('/second'));
    const first = await client.answer(0);
    expect(first).toMatchObject({ status: 200, body: '/first' });
    expect(first.headers.connection).toBe(connection);
    expect(first.headers.date).toMatch(/ GMT$/);
    if (closes) {
      await client.until(() => client.ended, 'the server to end the connection');
      expect(client.answers).toHaveLength(1);
      expect(seen.map((each) => each.path)).toEqual(['/first']);
    } else {
      expect((await client.answer(1)).body).toBe('/second');
      // Still open: a request sent after the answers is served too.
      client.send(get('/third'));
      expect((await client.answer(2)).body).toBe('/third');
      expect(client.ended).toBe(false);
    }
  });

  it('answers HEAD with the content-length of the body it does not send', async () => {
    const { connect } = await serve({ onRequest: (request, respond) => respond(text(`hello ${request.method}`)) });
    const client = await connect({ noBodyFor: [0] });
    // Were the body sent, the GET's answer would not frame.
    client.send(`HEAD / HTTP/1.1\r\nhost: t\r\n\r\n${get('/')}`);
    const head = await client.answer(0);
    expect(head).toMatchObject({ status: 200, body: '' });
    expect(head.headers['content-length']).toBe('10');
    expect(await client.answer(1)).toMatchObject({ status: 200, body: 'hello GET' });
  });

  it.each([204, 304])('answers %i without content-length or body', async (status) => {
    const { connect } = await serve({ onRequest: (request, respond) => respond(request.path === '/none' ? text('dropped', status) : text('next')) });
    const client = await connect();
    client.send(get('/none') + get('/next'));
    const bodyless = await client.answer(0);
    expect(bodyless.status).toBe(status);
    expect(bodyless.headers).not.toHaveProperty('content-length');
    expect(await client.answer(1)).toMatchObject({ status: 200, body: 'next' });
  });

  it('reads a chunked request body that arrives in pieces', async () => {
    const seen: Http1Request[] = [];
    const { sockets, connect } = await serve({ onRequest: echo(seen) });
    const client = await connect();
    let sent = 0;
    for (const piece of ['POST /up HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n', '5\r\nhel', 'lo\r\n6\r\n world\r\n', '0\r\n', '\r\n']) {
      client.send(piece);
      sent += piece.length;
      await waitFor(() => sockets[0]!.bytesRead === sent, { what: 'the piece to arrive' });
    }
    expect(await client.answer(0)).toMatchObject({ status: 200, body: 'hello world' });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ bodyLength: 'chunked', headers: { 'transfer-encoding': 'chunked' } });
  });

  it('sends 100 Continue to a client that waits for it, once per request, then the answer', async () => {
    const seen: Http1Request[] = [];
    const { connect } = await serve({ onRequest: echo(seen) });
    const client = await connect();
    for (const [round, body] of ['hello', 'again'].entries()) {
      client.send(`POST /up HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\ncontent-length: ${body.length}\r\n\r\n`);
      expect((await client.answer(2 * round)).status).toBe(100);
      expect(seen).toHaveLength(round);
      client.send(body);
      expect(await client.answer(2 * round + 1)).toMatchObject({ status: 200, body });
    }
    expect(client.answers.map((answer) => answer.status)).toEqual([100, 200, 100, 200]);
  });

  it('answers 413 instead of 100 Continue when the announced body is over the limit, then closes', async () => {
    const seen: Http1Request[] = [];
    const { connect } = await serve({ onRequest: echo(seen) });
    const client = await connect();
    client.send(`POST /up HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\ncontent-length: ${LIMITS.maxBodyBytes + 1}\r\n\r\n`);
    const answer = await client.answer(0);
    expect(answer.status).toBe(413);
    expect(answer.headers.connection).toBe('close');
    await client.until(() => client.ended, 'the server to end the connection');
    expect(client.answers).toHaveLength(1);
    expect(seen).toEqual([]);
  });

  it.each([
    { name: 'a malformed header line', request: 'GET / HTTP/1.1\r\nhost: t\r\nbad header\r\n\r\n', status: 400 },
    { name: 'an HTTP version other than 1.0 and 1.1', request: 'GET / HTTP/1.2\r\nhost: t\r\n\r\n', status: 505 },
    { name: 'an unknown transfer coding', request: 'POST / HTTP/1.1\r\nhost: t\r\ntransfer-encoding: gzip\r\n\r\n', status: 501 },
    { name: 'a body over the limit', request: post('/', 'x'.repeat(LIMITS.maxBodyBytes + 1)), status: 413 },
    { name: 'an expectation other than 100-continue', request: get('/', 'expect: teapot\r\n'), status: 417 },
    { name: 'a head over the limit', request: get('/', `x-big: ${'x'.repeat(LIMITS.maxHeadBytes)}\r\n`), status: 431 },
  ])('answers $name with onBadRequest, closes, and ignores the requests after it', async ({ request, status }) => {
    const seen: Http1Request[] = [];
    const errors: HttpRequestError[] = [];
    const { connect } = await serve({
      onRequest: echo(seen),
      onBadRequest: (error) => {
        errors.push(error);
        return plainBadRequest(error);
      },
    });
    const client = await connect();
    client.send(get('/before') + request + get('/after'));
    expect(await client.answer(0)).toMatchObject({ status: 200, body: '/before' });
    const bad = await client.answer(1);
    expect(bad.status).toBe(status);
    expect(bad.headers.connection).toBe('close');
    expect(bad.body).toBe(errors[0]?.message);
    await client.until(() => client.ended, 'the server to end the connection');
    expect(client.answers).toHaveLength(2);
    expect(errors.map((error) => error.status)).toEqual([status]);
    expect(seen.map((each) => each.path)).toEqual(['/before']);
  });

  it.each<{ name: string; headers: AnswerHeaders; header: string }>([
    { name: 'a value with CR LF', headers: { 'x-bad': 'a\r\nset-cookie: stolen=1' }, header: 'x-bad' },
    { name: 'a name that is not a token', headers: { 'x bad': '1' }, header: 'x bad' },
    { name: 'a framing header', headers: { 'content-length': '3' }, header: 'content-length' },
  ])('answers a bare 500 and calls onError for $name, then closes', async ({ headers, header }) => {
    const seen: Http1Request[] = [];
    const answerErrors: unknown[] = [];
    const { connect } = await serve({
      onRequest: (request, respond) => {
        seen.push(request);
        respond({ status: 200, headers, body: 'never sent' });
      },
      onError: (error) => answerErrors.push(error),
    });
    const client = await connect();
    client.send(get('/bad') + get('/after'));
    const answer = await client.answer(0);
    expect(answer).toEqual({ status: 500, headers: { 'content-length': '0', connection: 'close' }, body: '' });
    await client.until(() => client.ended, 'the server to end the connection');
    expect(client.answers).toHaveLength(1);
    expect(answerErrors).toHaveLength(1);
    expect(answerErrors[0]).toBeInstanceOf(HttpHeaderError);
    expect((answerErrors[0] as HttpHeaderError).header).toBe(header);
    expect(seen).toHaveLength(1);
  });

  it('answers a bare 500 and calls onError when the handler throws, then closes', async () => {
    const errors: unknown[] = [];
    const { connect } = await serve({
      onRequest: () => {
        throw new Error('handler bug');
      },
      onError: (error) => errors.push(error),
    });
    const client = await connect();
    client.send(get('/bad') + get('/after'));
    expect(await client.answer(0)).toMatchObject({ status: 500 });
    await client.until(() => client.ended, 'the server to end the connection');
    expect(client.answers).toHaveLength(1);
    expect(errors).toEqual([new Error('handler bug')]);
  });

  describe('hand-over', () => {
    /** A node:http server that serves the requests relayed to it, and the Http1Server that relays `/core` ones. */
    async function serveWithCore(answerWhen: (answer: () => void) => void): Promise<Served & { seen: string[]; core: http.Server; relayed: http.IncomingMessage[] }> {
      const relayed: http.IncomingMessage[] = [];
      const core = createHandOverServer((request, response) => {
        relayed.push(request);
        const parts: Buffer[] = [];
        request.on('data', (part: Buffer) => parts.push(part));
        request.on('end', () => {
          response.setHeader('x-served-by', 'node');
          response.end(`${request.method} ${request.url} ${Buffer.concat(parts).toString()}`);
        });
      }, 5_000);
      const seen: string[] = [];
      const served = await serve({
        onRequest: (request, respond) => {
          seen.push(request.path);
          const answer = { status: 200, headers: { 'x-served-by': 'http1' }, body: request.path };
          answerWhen(() => respond(answer));
        },
        handOver: (head) => (head.path.startsWith('/core') ? (connection) => core.emit('connection', connection) : undefined),
      });
      return { ...served, seen, core, relayed };
    }

    it.each([
      { name: 'answered at once', answerWhen: (answer: () => void): void => answer() },
      { name: 'answered later', answerWhen: (answer: () => void): void => void setImmediate(answer) },
    ])('relays the request to node:http, then ends the connection: nothing after it is read ($name)', async ({ answerWhen }) => {
      const { connect, seen, relayed } = await serveWithCore(answerWhen);
      const client = await connect();
      client.send(get('/app') + post('/core/echo', 'ping') + get('/app/again') + 'NOT HTTP\r\n\r\n');
      expect(await client.answer(0)).toMatchObject({ body: '/app', headers: { 'x-served-by': 'http1' } });
      expect(await client.answer(1)).toMatchObject({ status: 200, body: 'POST /core/echo ping', headers: { 'x-served-by': 'node', connection: 'close' } });
      await client.until(() => client.ended, 'the end of the connection');
      expect(client.answers).toHaveLength(2);
      expect(seen).toEqual(['/app']);
      expect(relayed.map((request) => request.url)).toEqual(['/core/echo']);
    });

    it('relays what its own parser read, within its own limits: a chunked body as one with a length, an oversize one refused', async () => {
      const { connect, relayed } = await serveWithCore((answer) => answer());
      const client = await connect();
      client.send('POST /core/up?x=1 HTTP/1.1\r\nhost: t\r\nx-a: 1\r\nx-a: 2\r\ntransfer-encoding: chunked\r\n\r\n2;e=1\r\nhe\r\n3\r\nllo\r\n0\r\nx-t: 1\r\n\r\n');
      expect(await client.answer(0)).toMatchObject({ body: 'POST /core/up?x=1 hello', headers: { 'x-served-by': 'node' } });
      expect(relayed[0]!.headers).toEqual({ host: 't', 'x-a': '1, 2', 'content-length': '5', connection: 'close' });
      expect(relayed[0]!.socket.remoteAddress).toBe('127.0.0.1');

      const big = await connect();
      big.send(post('/core/up', 'x'.repeat(LIMITS.maxBodyBytes + 1)));
      // This server's answer (onBadRequest's), not node:http's.
      expect(await big.answer(0)).toMatchObject({ status: 413, body: `the body is over ${LIMITS.maxBodyBytes} bytes`, headers: { connection: 'close' } });
      expect(relayed).toHaveLength(1);
    });

    it('sends 100 Continue itself, and relays the body that follows', async () => {
      const { connect, relayed } = await serveWithCore((answer) => answer());
      const client = await connect();
      client.send('POST /core/up HTTP/1.1\r\nhost: t\r\nexpect: 100-continue\r\ncontent-length: 4\r\n\r\n');
      expect(await client.answer(0)).toMatchObject({ status: 100 });
      client.send('ping');
      expect(await client.answer(1)).toMatchObject({ status: 200, body: 'POST /core/up ping' });
      expect(client.answers).toHaveLength(2);
      expect(relayed[0]!.headers.expect).toBeUndefined();
    });

    it('relays the request of a client that ended its side after it', async () => {
      const { connect, seen } = await serveWithCore((answer) => answer());
      const client = await connect();
      client.socket.end(get('/app') + post('/core/echo', 'ping'));
      await client.until(() => client.closed, 'the end of the connection');
      expect(seen).toEqual(['/app']);
      expect(client.answers.map((answer) => answer.headers['x-served-by'])).toEqual(['http1', 'node']);
      expect(client.answers[1]).toMatchObject({ status: 200, body: 'POST /core/echo ping' });
    });

    it("leaves a relayed connection to node:http: closing does not wait for it, and node:http's closing ends it", async () => {
      const { server, connect, core } = await serveWithCore((answer) => answer());
      // A relay node:http has not answered yet (a long MCP stream, say), and tracks: it listens.
      const held: http.ServerResponse[] = [];
      core.removeAllListeners('request');
      core.on('request', (_request: http.IncomingMessage, response: http.ServerResponse) => held.push(response));
      await new Promise<void>((resolve) => core.listen(0, '127.0.0.1', resolve));
      const client = await connect();
      client.send(get('/core/stream'));
      await client.until(() => held.length === 1, 'the relayed request');
      await server.close();
      expect(client.closed).toBe(false);
      core.closeAllConnections();
      await client.until(() => client.closed, 'the end of the connection');
      expect(client.answers).toHaveLength(0);
      await new Promise<void>((resolve) => core.close(() => resolve()));
    });
  });

  describe('timeouts', () => {
    it('answers 408 to a request that keeps arriving past the request timeout, then closes', async () => {
      const requestTimeoutMs = 50;
      const seen: Http1Request[] = [];
      const errors: HttpRequestError[] = [];
      const { connect } = await serve({
        onRequest: echo(seen),
        onBadRequest: (error) => {
          errors.push(error);
          return plainBadRequest(error);
        },
        requestTimeoutMs,
      });
      const client = await connect();
      const started = performance.now();
      client.send('GET /slow HTTP/1.1\r\nhost: t\r\nx-pad: ');
      // One byte at a time, each keeping the head incomplete (and the socket busy), until the server gives up on it.
      await client.until(() => {
        if (client.answers.length === 0) client.send('a');
        return client.answers.length > 0;
      }, 'the 408');
      const answer = client.answers[0]!;
      expect(answer.status).toBe(408);
      expect(answer.headers.connection).toBe('close');
      expect(performance.now() - started).toBeGreaterThanOrEqual(requestTimeoutMs);
      await client.until(() => client.ended, 'the server to end the connection');
      expect(errors.map((error) => error.status)).toEqual([408]);
      expect(seen).toEqual([]);
    });

    // Every write ends on a chunk boundary, so no byte is ever left unparsed between them.
    it('answers 408 to a chunked body that keeps arriving past the request timeout', async () => {
      const requestTimeoutMs = 50;
      const { connect } = await serve({ onRequest: echo([]), requestTimeoutMs, limits: { ...LIMITS, maxBodyBytes: 1_000_000 } });
      const client = await connect();
      client.send('POST /slow HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n');
      await client.until(
        () => {
          if (client.answers.length === 0) client.send('1\r\na\r\n');
          return client.answers.length > 0;
        },
        'the 408',
        20 * requestTimeoutMs,
      );
      expect(client.answers[0]!.status).toBe(408);
    });

    it('closes an idle connection after the keep-alive timeout', async () => {
      const { connect } = await serve({ onRequest: echo([]), keepAliveTimeoutMs: 50 });
      const client = await connect();
      client.send(get('/once'));
      expect((await client.answer(0)).body).toBe('/once');
      await client.until(() => client.closed, 'the server to close the idle connection');
    });

    it('keeps a connection whose request outlasts the keep-alive timeout, and answers it', async () => {
      let respond: Respond | undefined;
      const { sockets, connect } = await serve({ onRequest: (_request, later) => (respond = later), keepAliveTimeoutMs: 50 });
      const client = await connect();
      client.send(get('/long'));
      await waitFor(() => respond !== undefined, { what: 'the request' });
      await once(sockets[0]!, 'timeout');
      respond!(text('done'));
      expect((await client.answer(0)).body).toBe('done');
      expect(client.closed).toBe(false);
    });
  });

  it('stops reading from a client that does not read its answers', async () => {
    const requests = 64;
    const requestBody = 'q'.repeat(32 * 1024);
    const answerBytes = 256 * 1024;
    /** For each request handed over: whether the socket still needed draining then. */
    const neededDrain: boolean[] = [];
    const { sockets, connect } = await serve({
      limits: { maxHeadBytes: 1024, maxBodyBytes: requestBody.length },
      onRequest: (request, respond) => {
        neededDrain.push(sockets[0]!.writableNeedDrain);
        respond(text(request.path.padEnd(answerBytes, '.')));
      },
    });
    const client = await connect();
    client.socket.pause();
    let sent = 0;
    for (let i = 0; i < requests; i++) {
      const request = post(`/${i}`, requestBody);
      client.send(request);
      sent += request.length;
    }
    const server = sockets[0]!;
    await waitFor(() => server.isPaused() && server.writableNeedDrain, { what: 'the server to stop reading' });
    // Paused with answers still to write: far from every request was read, and fewer were handed over.
    expect(server.bytesRead).toBeLessThan(sent);
    expect(neededDrain.length).toBeLessThan(requests);
    client.socket.resume();
    await client.until(() => client.answers.length === requests, 'every answer', 10_000);
    expect(client.answers.map((answer) => answer.body.slice(0, answer.body.indexOf('.')))).toEqual(Array.from({ length: requests }, (_, i) => `/${i}`));
    expect(neededDrain).toEqual(Array.from({ length: requests }, () => false));
  });

  it('does not buffer without bound what a client sends while its request is with the handler', async () => {
    const { sockets, connect } = await serve({ onRequest: () => {} });
    const client = await connect();
    client.send(get('/held'));
    const flood = Buffer.alloc(4 * 1024 * 1024, 'a');
    client.send(flood);
    const server = sockets[0]!;
    await waitFor(() => server.isPaused() || server.destroyed || server.bytesRead >= flood.length, { what: 'the server to stop reading or to read everything' });
    expect(server.bytesRead).toBeLessThan(flood.length);
  });

  describe('close', () => {
    it('ends idle connections, lets a busy one finish its answer with `connection: close`, then resolves', async () => {
      const seen: string[] = [];
      let busyRespond: Respond | undefined;
      const served = await serve({
        onRequest: (request, respond) => {
          seen.push(request.path);
          if (request.path === '/busy') busyRespond = respond;
          else respond(text(request.path));
        },
      });
      const idle = await served.connect();
      idle.send(get('/idle'));
      expect((await idle.answer(0)).headers.connection).toBeUndefined();
      const busy = await served.connect();
      busy.send(get('/busy') + get('/never'));
      await waitFor(() => busyRespond !== undefined, { what: 'the busy request' });

      let closed = false;
      const closing = served.server.close().then(() => (closed = true));
      expect(served.server.isClosing).toBe(true);
      await idle.until(() => idle.ended, 'the idle connection to end');
      await expect(served.connect()).rejects.toThrow(/ECONNREFUSED/);
      expect(closed).toBe(false);
      expect(busy.ended).toBe(false);

      busyRespond!(text('done'));
      await closing;
      const answer = await busy.answer(0);
      expect(answer.body).toBe('done');
      expect(answer.headers.connection).toBe('close');
      await busy.until(() => busy.ended, 'the busy connection to end');
      expect(busy.answers).toHaveLength(1);
      expect(seen).toEqual(['/idle', '/busy']);
    });

    it('resolves at once without connections', async () => {
      const { server } = await serve({ onRequest: echo([]) });
      await server.close();
      expect(server.server.listening).toBe(false);
    });
  });
});
