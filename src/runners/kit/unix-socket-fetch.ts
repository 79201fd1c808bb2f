/**
 * POSTs to one Unix socket, whatever the URL's host. Sandboxes have no network;
 * they reach the core's MCP endpoint through its socket mounted in, with the
 * path of `context.mcp_endpoint`.
 *
 * Every LLM turn and workflow step makes at least one such call, so it speaks
 * HTTP/1.1 itself over kept-alive connections, the answer framed by the shared
 * parser (shared/http1/response-parser.ts): node:http's client (a ClientRequest,
 * an agent, an IncomingMessage stream per call) and the WHATWG Response and
 * Headers of a fetch took about as much of the runner's CPU as the rest of its
 * turn. One request is in flight on a connection at a time; concurrent calls
 * open more connections, and an idle one is reused by the next call.
 * `unixSocketFetch` puts the same connections in fetch's shape (status and
 * body, no headers) for callers that hold a fetch.
 */
import net from 'node:net';
import { isHeaderName, isHeaderValue } from '../../shared/http1/response-head.js';
import { Http1ResponseParser, type ParsedResponse } from '../../shared/http1/response-parser.js';

/** Idle connections older than this are not reused: the core closes its side of an idle connection after 72 s. */
const IDLE_REUSE_MS = 30_000;

interface Exchange {
  readonly parser: Http1ResponseParser;
  readonly resolve: (response: ParsedResponse) => void;
  readonly reject: (error: Error) => void;
}

/** One kept-alive connection to the socket; it carries one exchange at a time. */
class Connection {
  readonly socket: net.Socket;
  idleSince = 0;
  private exchange: Exchange | undefined;

  constructor(
    socketPath: string,
    /** Called when an exchange ends with the connection reusable, or when the connection is gone. */
    private readonly settled: (connection: Connection, reusable: boolean) => void,
  ) {
    this.socket = net.connect({ path: socketPath });
    this.socket.on('data', (chunk: Buffer) => this.onData(chunk));
    this.socket.on('end', () => this.onEnd());
    this.socket.on('error', (error: NodeJS.ErrnoException) => this.fail(error));
    this.socket.on('close', () => this.fail(new Error('the connection closed before the answer')));
  }

  /** Sends the whole request (head and body in one write: one system call for a typical tool call). */
  send(request: string): Promise<ParsedResponse> {
    return new Promise<ParsedResponse>((resolve, reject) => {
      this.exchange = { parser: new Http1ResponseParser(), resolve, reject };
      this.socket.ref();
      this.socket.write(request);
    });
  }

  /** Ends the exchange under way (if any) with `error`, and the connection. */
  fail(error: Error): void {
    const exchange = this.exchange;
    this.exchange = undefined;
    if (!this.socket.destroyed) this.socket.destroy();
    this.settled(this, false);
    exchange?.reject(error);
  }

  private onData(chunk: Buffer): void {
    const exchange = this.exchange;
    // Bytes nobody asked for: the connection is out of step.
    if (exchange === undefined) return this.fail(new Error('unexpected bytes on an idle connection'));
    let response: ParsedResponse | undefined;
    try {
      response = exchange.parser.push(chunk);
    } catch (error) {
      return this.fail(error as Error);
    }
    if (response !== undefined) this.complete(exchange, response);
  }

  private onEnd(): void {
    const exchange = this.exchange;
    if (exchange === undefined) return this.fail(new Error('closed while idle'));
    let response: ParsedResponse;
    try {
      response = exchange.parser.end();
    } catch (error) {
      return this.fail(error as Error);
    }
    this.complete(exchange, { ...response, close: true });
  }

  private complete(exchange: Exchange, response: ParsedResponse): void {
    this.exchange = undefined;
    if (response.close) this.socket.destroy();
    else {
      this.idleSince = performance.now();
      // An idle connection must not keep the runner alive.
      this.socket.unref();
    }
    this.settled(this, !response.close);
    exchange.resolve(response);
  }
}

/** One POST and its answer: what the tools client sends to the MCP endpoint. */
export type SocketPost = (target: string, headers: Readonly<Record<string, string>>, body: string, signal?: AbortSignal) => Promise<{ status: number; body: Buffer }>;

/**
 * POSTs to the socket: `target` is the request target (path and query), the
 * headers are lower-case names; host and content-length are written here.
 * No WHATWG Request, Headers or Response is built on this path.
 */
export function unixSocketPost(socketPath: string): SocketPost {
  const idle: Connection[] = [];
  const settled = (connection: Connection, reusable: boolean): void => {
    const at = idle.indexOf(connection);
    if (at !== -1) idle.splice(at, 1);
    if (reusable) idle.push(connection);
  };
  const take = (): Connection => {
    for (let connection = idle.pop(); connection !== undefined; connection = idle.pop()) {
      if (!connection.socket.destroyed && performance.now() - connection.idleSince < IDLE_REUSE_MS) return connection;
      connection.socket.destroy();
    }
    return new Connection(socketPath, settled);
  };

  return async (target, headers, body, signal) => {
    let head = `POST ${target} HTTP/1.1\r\nhost: ${headers['host'] ?? 'localhost'}\r\n`;
    for (const name in headers) {
      const value = headers[name]!;
      // A value with CR or LF would start a header of its own: refused, as fetch and node:http refuse it.
      if (!isHeaderName(name) || !isHeaderValue(value)) throw new TypeError(`the header ${name} cannot be sent`);
      if (name !== 'host' && name !== 'content-length' && name !== 'transfer-encoding' && name !== 'connection') head += `${name}: ${value}\r\n`;
    }
    head += `content-length: ${Buffer.byteLength(body)}\r\n\r\n`;
    signal?.throwIfAborted();
    const connection = take();
    const onAbort = (): void => connection.fail(new Error('aborted'));
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await connection.send(`${head}${body}`);
      return { status: response.status, body: response.body };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  };
}

/** The same connections in `fetch`'s shape, for callers that hold a fetch (only POST carries a body). */
export function unixSocketFetch(socketPath: string): typeof fetch {
  const post = unixSocketPost(socketPath);
  return (async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    if ((init?.method ?? 'GET') !== 'POST') throw new TypeError('unixSocketFetch sends POST requests only');
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
    const response = await post(`${url.pathname}${url.search}`, { ...headers, host: url.host }, typeof init?.body === 'string' ? init.body : '', init?.signal ?? undefined);
    const status = response.status;
    // The parser's Buffer is a Uint8Array over an ArrayBuffer of its own (Buffer.concat or a socket read).
    return new Response(status === 204 || status === 304 ? null : (response.body as Uint8Array<ArrayBuffer>), { status });
  }) as typeof fetch;
}
