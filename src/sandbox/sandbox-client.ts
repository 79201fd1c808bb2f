/**
 * The core's HTTP connections to one sandbox runner, on its Unix socket or
 * loopback port. This is the hottest path of the core, so it is a small
 * HTTP/1.1 client of its own rather than a general one: keep-alive connections,
 * one request at a time on each (a sandbox runs as many requests at once as its
 * pool allows, each on its own connection), the request written with one
 * system call, and the answer framed by http1-response-parser. Every failure
 * says whether the request can have reached the runner (`connect` cannot).
 * An answer is never buffered past `maxResponseBytes`: the read stops there and
 * the connection is dropped.
 */
import net from 'node:net';
import { EXECUTE_PATH, REQUEST_ID_HEADER } from '../contract/execute-contract.js';
import { Http1ResponseParser, ResponseTooLargeError, type ParsedResponse } from '../shared/http1/response-parser.js';
import type { SandboxEndpoint } from './sandbox-driver.js';

export interface RawResponse {
  status: number;
  body: Buffer;
}

/**
 * Why a call to the runner did not produce a usable HTTP answer: no answer in
 * time, no connection, a dropped connection, an answer that is not HTTP/1.1 as
 * the core reads it (`bad-response`), or one over the size limit (`too-large`).
 */
export type TransportFailure = 'timeout' | 'connect' | 'dropped' | 'bad-response' | 'too-large';

export class SandboxTransportError extends Error {
  /** Safe facts for the client's error answer (the limit of a `too-large` answer). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    readonly failure: TransportFailure,
    message: string,
    options?: { cause?: unknown; details?: Readonly<Record<string, unknown>> },
  ) {
    super(message, options);
    this.name = 'SandboxTransportError';
    this.details = options?.details;
  }
}

export interface SandboxClientOptions {
  /**
   * Largest answer body read from the runner, in bytes. A larger one fails as
   * `too-large`: from its Content-Length before the body is read, or as soon as a
   * chunked body passes it.
   * @defaultValue DEFAULT_MAX_RESPONSE_BYTES (8 MiB)
   */
  readonly maxResponseBytes?: number;
}

/** What the core reads of one sandbox answer when nothing else is configured. */
export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** Where every connection's reads land; each read is copied out before the next one (reads are synchronous callbacks). */
const READ_BUFFER = Buffer.alloc(64 * 1024);

/** Idle connections older than this are not reused: the runner closes its side after 60 s. */
const IDLE_REUSE_MS = 30_000;
const CONNECT_TIMEOUT_MS = 2_000;
/** Header values the core forwards must not be able to start a header of their own. */
const SAFE_HEADER_VALUE = /^[\x20-\x7e]{1,256}$/;

interface Exchange {
  readonly parser: Http1ResponseParser;
  readonly resolve: (response: RawResponse) => void;
  readonly reject: (error: SandboxTransportError) => void;
  readonly timer: NodeJS.Timeout;
}

/** One keep-alive connection; it carries at most one exchange at a time. */
class Connection {
  readonly socket: net.Socket;
  connected = false;
  idleSince = 0;
  exchange: Exchange | undefined;

  constructor(
    endpoint: SandboxEndpoint,
    /** Called when an exchange ends with the connection reusable, or when the connection is gone. */
    private readonly settled: (connection: Connection) => void,
    private readonly maxResponseBytes: number,
  ) {
    // Answers are read into one buffer shared by every connection and copied out,
    // rather than through the socket's stream: the hottest read of the core.
    const onread = {
      buffer: READ_BUFFER,
      callback: (bytes: number): boolean => {
        this.onData(Buffer.from(READ_BUFFER.subarray(0, bytes)));
        return true;
      },
    };
    this.socket =
      endpoint.kind === 'unix'
        ? net.connect({ path: endpoint.socketPath, onread })
        : net.connect({ host: endpoint.host, port: endpoint.port, noDelay: true, onread });
    const connectTimer = setTimeout(() => this.fail('connect', `cannot connect within ${CONNECT_TIMEOUT_MS} ms`), CONNECT_TIMEOUT_MS);
    this.socket.once('connect', () => {
      this.connected = true;
      clearTimeout(connectTimer);
    });
    this.socket.on('end', () => this.onEnd());
    this.socket.on('error', (error: NodeJS.ErrnoException) => {
      // Before the connection is up, nothing of the request reached the runner.
      this.fail(this.connected ? 'dropped' : 'connect', `${this.connected ? 'connection dropped' : 'cannot connect'}: ${error.code ?? 'EIO'}`, error);
    });
    this.socket.on('close', () => {
      clearTimeout(connectTimer);
      this.fail('dropped', 'the connection closed before the answer');
    });
  }

  /** Starts an exchange; the answer or the failure settles it. */
  begin(request: string, timeoutMs: number): Promise<RawResponse> {
    return new Promise<RawResponse>((resolve, reject) => {
      const timer = setTimeout(() => this.fail('timeout', `no answer within ${timeoutMs} ms`), timeoutMs);
      this.exchange = { parser: new Http1ResponseParser({ maxBodyBytes: this.maxResponseBytes }), resolve, reject, timer };
      this.socket.ref();
      this.socket.write(request);
    });
  }

  fail(failure: TransportFailure, message: string, cause?: unknown, details?: Readonly<Record<string, unknown>>): void {
    const exchange = this.exchange;
    this.exchange = undefined;
    // Destroying the socket is what stops the read: nothing more of the answer is taken in.
    if (!this.socket.destroyed) this.socket.destroy();
    if (exchange) {
      clearTimeout(exchange.timer);
      exchange.reject(new SandboxTransportError(failure, message, { cause, ...(details !== undefined ? { details } : {}) }));
    }
    this.settled(this);
  }

  private onData(chunk: Buffer): void {
    const exchange = this.exchange;
    // Bytes nobody asked for: the connection is out of step.
    if (!exchange) return this.fail('dropped', 'unexpected bytes on an idle connection');
    let response: ParsedResponse | undefined;
    try {
      response = exchange.parser.push(chunk);
    } catch (error) {
      if (error instanceof ResponseTooLargeError) {
        return this.fail('too-large', error.message, error, {
          limitBytes: error.limitBytes,
          ...(error.declaredBytes !== undefined ? { declaredBytes: error.declaredBytes } : {}),
        });
      }
      return this.fail('bad-response', `the answer is not HTTP/1.1 as the core reads it: ${(error as Error).message}`, error);
    }
    if (response) this.complete(exchange, response);
  }

  private onEnd(): void {
    const exchange = this.exchange;
    if (!exchange) return this.fail('dropped', 'closed while idle');
    let response: ParsedResponse;
    try {
      response = exchange.parser.end();
    } catch (error) {
      return this.fail('dropped', 'the connection closed before the answer', error);
    }
    this.complete(exchange, { ...response, close: true });
  }

  private complete(exchange: Exchange, response: ParsedResponse): void {
    clearTimeout(exchange.timer);
    this.exchange = undefined;
    if (response.close) {
      this.socket.destroy();
    } else {
      this.idleSince = performance.now();
      this.socket.unref();
    }
    this.settled(this);
    exchange.resolve({ status: response.status, body: response.body });
  }
}

export class SandboxClient {
  private readonly idle: Connection[] = [];
  private readonly live = new Set<Connection>();
  private closed = false;

  private readonly maxResponseBytes: number;

  constructor(
    private readonly endpoint: SandboxEndpoint,
    options: SandboxClientOptions = {},
  ) {
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  }

  /**
   * Sends one /execute. Rejects with SandboxTransportError when no HTTP answer
   * arrives in time, or as dropped when `signal` aborts (the connection is cut,
   * and the caller destroys the sandbox: a cancelled workflow run's execution).
   */
  execute(body: string, requestId: string, timeoutMs: number, traceId?: string, signal?: AbortSignal): Promise<RawResponse> {
    if (!SAFE_HEADER_VALUE.test(requestId)) return Promise.reject(new Error('the request id cannot be sent as a header'));
    let head =
      `POST ${EXECUTE_PATH} HTTP/1.1\r\nhost: sandbox\r\ncontent-type: application/json\r\naccept: application/json\r\n` +
      `${REQUEST_ID_HEADER}: ${requestId}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    if (traceId !== undefined && SAFE_HEADER_VALUE.test(traceId)) head += `x-trace-id: ${traceId}\r\n`;
    if (signal === undefined) return this.send(`${head}\r\n${body}`, timeoutMs);
    if (signal.aborted) return Promise.reject(new SandboxTransportError('dropped', 'the execution was cancelled before it was sent'));
    if (this.closed) return Promise.reject(new SandboxTransportError('connect', 'the client is closed'));
    const connection = this.checkout();
    const onAbort = (): void => connection.fail('dropped', 'the execution was cancelled');
    signal.addEventListener('abort', onAbort, { once: true });
    return connection.begin(`${head}\r\n${body}`, timeoutMs).finally(() => signal.removeEventListener('abort', onAbort));
  }

  /** Sends one call to a `runner: mcp` sandbox (POST /mcp, contract/mcp-host-wire.ts). */
  mcp(body: string, timeoutMs: number): Promise<RawResponse> {
    const head = `POST /mcp HTTP/1.1\r\nhost: sandbox\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n`;
    return this.send(`${head}\r\n${body}`, timeoutMs);
  }

  /** GET /healthz; true when the runner answers 200 in time. */
  async probe(timeoutMs: number): Promise<boolean> {
    return (await this.health(timeoutMs)) !== undefined;
  }

  /** GET /healthz: how many executions the runner is running; undefined when it does not answer 200 in time. */
  async health(timeoutMs: number): Promise<{ running: number; busy: boolean } | undefined> {
    try {
      const response = await this.send('GET /healthz HTTP/1.1\r\nhost: sandbox\r\n\r\n', timeoutMs);
      if (response.status !== 200) return undefined;
      const body = JSON.parse(response.body.toString('utf8')) as { running?: unknown; busy?: unknown };
      return { running: typeof body.running === 'number' ? body.running : 0, busy: body.busy === true };
    } catch {
      return undefined;
    }
  }

  /** Closes every connection; a request in flight fails as dropped. */
  close(): void {
    this.closed = true;
    for (const connection of [...this.live]) connection.fail('dropped', 'the client was closed');
  }

  private send(request: string, timeoutMs: number): Promise<RawResponse> {
    if (this.closed) return Promise.reject(new SandboxTransportError('connect', 'the client is closed'));
    return this.checkout().begin(request, timeoutMs);
  }

  /** The most recently used idle connection that is still good, or a new one. */
  private checkout(): Connection {
    const now = performance.now();
    while (this.idle.length > 0) {
      const connection = this.idle.pop()!;
      if (!connection.socket.destroyed && now - connection.idleSince < IDLE_REUSE_MS) return connection;
      connection.fail('dropped', 'idle too long');
    }
    const connection = new Connection(this.endpoint, (c) => this.settled(c), this.maxResponseBytes);
    this.live.add(connection);
    return connection;
  }

  private settled(connection: Connection): void {
    const index = this.idle.indexOf(connection);
    if (index !== -1) this.idle.splice(index, 1);
    if (connection.socket.destroyed || this.closed) this.live.delete(connection);
    else this.idle.push(connection);
  }
}
