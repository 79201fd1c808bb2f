/**
 * A small HTTP/1.1 server on plain sockets, for the two places where every
 * request of the product passes: the core's ingress and the jit-runner. It is
 * not node:http because node:http's request and response streams cost more
 * than everything the core does with a request; this server parses with
 * request-parser.ts, answers with one write per answer, and does nothing else.
 *
 * Requests on one connection are handed to `onRequest` one at a time and
 * answered in order (pipelined requests wait their turn). A request that cannot
 * be parsed gets `onBadRequest`'s answer and the connection is closed. A client
 * that does not read its answers is not read from. `handOver` gives the requests
 * it asks for to another server (the core's fastify routes), one request at a
 * time: see Http1ServerOptions.handOver.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { listenOn } from '../listen-on.js';
import { RelayedConnection, relayedRequest } from './relayed-connection.js';
import { Http1RequestParser, HttpRequestError, type Http1Head, type Http1Request, type RequestLimits } from './request-parser.js';
import { bodyless, HttpHeaderError, responseHead, type AnswerHeaders } from './response-head.js';

export interface Http1Answer {
  readonly status: number;
  /** Lower-case names; the server writes content-length, date and connection itself. */
  readonly headers?: AnswerHeaders;
  readonly body?: string | Buffer;
  /**
   * A body written as it is produced, instead of `body`: each piece is sent as
   * one chunk (`transfer-encoding: chunked`; to an HTTP/1.0 client, raw, and
   * the connection closes after it). The connection serves its next request
   * once the pieces end.
   */
  readonly stream?: ResponseStream;
}

/** A body produced while it is sent (server-sent events). */
export interface ResponseStream {
  readonly chunks: AsyncIterable<string | Buffer>;
  /** Told when the client goes away before the pieces end (they are not read further). */
  abort?(): void;
}

/** Answers the request it was given; only its first call counts. */
export type Respond = (answer: Http1Answer) => void;

/**
 * Tells a handler when its client goes away (the connection closes) before a
 * plain answer is written, so that work done only for that answer can stop.
 * Answers how to stop listening; nothing is registered until a handler asks.
 */
export type OnClientGone = (listener: () => void) => () => void;

export interface Http1ServerOptions {
  readonly limits: RequestLimits;
  /** One request; call `respond` once, now or later. `onGone` is for a handler whose answer may take a while. */
  readonly onRequest: (request: Http1Request, respond: Respond, onGone: OnClientGone) => void;
  /** The answer to a request that cannot be read; the connection closes after it. */
  readonly onBadRequest: (error: HttpRequestError) => Http1Answer;
  /**
   * Looks at each request's head before its body is read: a function returned
   * here is given the request, once it is whole, as a connection of its own
   * (emit it as node:http's `connection`), and the client's connection ends
   * with that answer.
   *
   * Why not hand over the client's socket itself: the other server would then
   * parse every later request on it with its own parser, limits and error
   * answers. Relayed, it sees only the one request this server has read within
   * its own limits, re-written with `connection: close`; a later request on the
   * same connection is never read (RFC 9112 9.6: after `close`, a server reads
   * no further request), so the client sends it again on a fresh connection,
   * where this server's parser reads it like any other.
   */
  readonly handOver?: (head: Http1Head) => ((connection: Duplex) => void) | undefined;
  /**
   * Called when `onRequest` throws or an answer's head cannot be built (an
   * HttpHeaderError); the client gets a bare 500 and the connection closes.
   */
  readonly onError?: (error: unknown) => void;
  /** An idle connection, or one that stops sending mid-request, is closed after this long. @defaultValue 72000 */
  readonly keepAliveTimeoutMs?: number;
  /** A request must arrive whole within this long of its first byte, else 408. @defaultValue 60000 */
  readonly requestTimeoutMs?: number;
}

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
const BARE_500 = 'HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';

export class Http1Server {
  readonly server: net.Server;
  private readonly connections = new Set<Http1Connection>();
  private closing = false;
  /** Called when the last connection is gone, once closing. */
  private drained: (() => void) | undefined;

  constructor(options: Http1ServerOptions) {
    // Half-open: a client that ends its side after a request still gets the answer.
    this.server = net.createServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
      const connection = new Http1Connection(socket, options, this);
      this.connections.add(connection);
      socket.once('close', () => this.release(connection));
    });
  }

  /** True once close() was called: connections end after the answer in progress. */
  get isClosing(): boolean {
    return this.closing;
  }

  /** Listens on a TCP host and port, or on a Unix socket path. */
  listen(options: net.ListenOptions): Promise<net.AddressInfo | string> {
    return listenOn(this.server, options);
  }

  /**
   * Stops accepting connections, closes idle ones, lets each busy one finish the
   * answer in progress, and resolves once every connection it serves is gone.
   * Connections handed over are the other server's to close.
   */
  close(): Promise<void> {
    this.closing = true;
    this.server.close();
    const drained = new Promise<void>((resolve) => (this.drained = resolve));
    for (const connection of this.connections) connection.closeWhenIdle();
    if (this.connections.size === 0) this.drained!();
    return drained;
  }

  /** Destroys every connection at once, answers in progress included. */
  destroyConnections(): void {
    for (const connection of this.connections) connection.socket.destroy();
  }

  /** Forgets a connection that closed or that another server took over. */
  release(connection: Http1Connection): void {
    if (this.connections.delete(connection) && this.connections.size === 0) this.drained?.();
  }
}

class Http1Connection {
  private readonly parser: Http1RequestParser;
  /** A request is with the handler and not answered yet. */
  private busy = false;
  private pumping = false;
  /** No more requests are read: the answer in progress (if any) is the last. */
  private ending = false;
  private peerEnded = false;
  /** The current request's 100 Continue was sent. */
  private continued = false;
  /** When the first byte of a request not yet whole arrived (performance.now()), 0 when none. */
  private partialSince = 0;
  private readonly keepAliveTimeoutMs: number;
  private readonly requestTimeoutMs: number;
  /** Reading stopped: the handler has the request, and what follows it already fills a head. */
  private heldBack = false;
  /** Who takes the request being read (handOver's answer for its head); null: this server's handler; undefined: not asked yet. */
  private taker: ((connection: Duplex) => void) | null | undefined;
  private readonly onData = (chunk: Buffer): void => {
    // After the last answer, what a client sends is not read.
    if (this.ending) return;
    this.parser.push(chunk);
    if (this.busy) {
      // Pipelined bytes wait for the answer in progress, but no more than a head's worth.
      if (this.parser.bufferedBytes > this.options.limits.maxHeadBytes && !this.heldBack) {
        this.heldBack = true;
        this.socket.pause();
      }
      return;
    }
    this.pump();
  };
  private readonly onEnd = (): void => {
    this.peerEnded = true;
    this.pump();
  };
  private readonly onError = (): void => {
    this.socket.destroy();
  };
  private readonly onTimeout = (): void => {
    // A running request has its own timeout, in the handler; only a silent client is dropped here.
    if (!this.busy) this.socket.destroy();
  };
  /** One function per connection, not per request: most handlers never ask. */
  private readonly onGone: OnClientGone = (listener) => {
    const socket = this.socket;
    if (socket.destroyed) {
      queueMicrotask(listener);
      return () => {};
    }
    socket.once('close', listener);
    return () => socket.off('close', listener);
  };

  constructor(
    readonly socket: net.Socket,
    private readonly options: Http1ServerOptions,
    private readonly owner: Http1Server,
  ) {
    this.parser = new Http1RequestParser(options.limits);
    this.keepAliveTimeoutMs = options.keepAliveTimeoutMs ?? 72_000;
    this.requestTimeoutMs = options.requestTimeoutMs ?? 60_000;
    socket.on('data', this.onData);
    socket.on('end', this.onEnd);
    socket.on('error', this.onError);
    socket.on('timeout', this.onTimeout);
    socket.setTimeout(this.keepAliveTimeoutMs);
  }

  /** Reads no more requests; ends the connection now when idle, else after the answer in progress. */
  closeWhenIdle(): void {
    this.ending = true;
    if (!this.busy) this.endSocket();
  }

  /**
   * Ends our side. A client normally closes its side in turn; a closing server
   * does not wait for that, once what it wrote is out.
   */
  private endSocket(): void {
    const socket = this.socket;
    if (this.owner.isClosing) {
      if (socket.writableFinished) {
        socket.destroy();
        return;
      }
      socket.once('finish', () => socket.destroy());
    }
    socket.end();
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (!this.busy && !this.ending) {
        if (this.heldBack) {
          this.heldBack = false;
          this.socket.resume();
        }
        // A client that does not read its answers is not read from either.
        if (this.socket.writableNeedDrain) {
          this.socket.pause();
          this.socket.once('drain', () => {
            this.socket.resume();
            this.pump();
          });
          return;
        }
        if (!this.nextRequest()) return;
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Starts the next request when it is whole; false when more bytes are needed or the connection is done. */
  private nextRequest(): boolean {
    let request: Http1Request | undefined;
    try {
      const head = this.parser.head();
      if (head !== undefined) {
        if (this.taker === undefined) this.taker = this.options.handOver?.(head) ?? null;
        request = this.parser.next();
        if (request === undefined && head.expectContinue && !this.continued) {
          this.continued = true;
          this.socket.write(CONTINUE);
        }
      }
    } catch (error) {
      if (!(error instanceof HttpRequestError)) throw error;
      this.answer(this.options.onBadRequest(error), true, false, false);
      return false;
    }
    if (request === undefined) {
      if (this.peerEnded) {
        // Nothing more will come: a request cut short is answered, and the connection ends.
        if (this.parser.partial) this.answer(this.options.onBadRequest(new HttpRequestError(400, 'the connection ended in the middle of a request')), true, false, false);
        else {
          this.ending = true;
          this.endSocket();
        }
      } else if (this.parser.partial) this.checkRequestTimeout();
      return false;
    }
    this.partialSince = 0;
    this.continued = false;
    const taker = this.taker;
    this.taker = undefined;
    if (taker !== null && taker !== undefined) {
      this.relay(request, taker);
      return false;
    }
    this.busy = true;
    let answered = false;
    const keepAlive = request.keepAlive;
    const http10 = request.http10;
    const head = request.method === 'HEAD';
    try {
      this.options.onRequest(
        request,
        (answer) => {
          if (answered) return;
          answered = true;
          this.busy = false;
          if (answer.stream !== undefined) {
            this.busy = true;
            void this.answerStream(answer, answer.stream, !keepAlive || http10 || this.ending, head).then(() => {
              this.busy = false;
              this.pump();
            });
            return;
          }
          this.answer(answer, !keepAlive || this.owner.isClosing || this.ending, http10 && keepAlive, head);
          this.pump();
        },
        this.onGone,
      );
    } catch (error) {
      if (!answered) this.fail(error);
      return false;
    }
    return true;
  }

  /** A bare 500 and the end of the connection: the request could not be answered properly. */
  private fail(error: unknown): void {
    this.options.onError?.(error);
    this.ending = true;
    if (this.socket.destroyed) return;
    this.socket.write(BARE_500);
    this.endSocket();
  }

  /** A request that keeps arriving past the request timeout is answered 408. */
  private checkRequestTimeout(): void {
    const now = performance.now();
    if (this.partialSince === 0) this.partialSince = now;
    else if (now - this.partialSince > this.requestTimeoutMs) {
      this.answer(this.options.onBadRequest(new HttpRequestError(408, `the request did not arrive within ${this.requestTimeoutMs} ms`)), true, false, false);
    }
  }

  private answer(answer: Http1Answer, close: boolean, http10KeepAlive: boolean, omitBody: boolean): void {
    const socket = this.socket;
    if (socket.destroyed) return;
    if (close) this.ending = true;
    const body = answer.body ?? '';
    const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
    let head: string;
    try {
      head = responseHead(answer.status, answer.headers, { contentLength: length, close, http10KeepAlive });
    } catch (error) {
      if (!(error instanceof HttpHeaderError)) throw error;
      this.fail(error);
      return;
    }
    if (omitBody || length === 0 || bodyless(answer.status)) socket.write(head, 'latin1');
    else if (typeof body === 'string' && isAscii(head)) socket.write(head + body);
    else {
      // One system call for head and body.
      socket.cork();
      socket.write(head, 'latin1');
      socket.write(body);
      socket.uncork();
    }
    if (close) this.endSocket();
  }

  /**
   * Writes a streamed answer: the head once the turn of the event loop that
   * answered has ended (see below), then each piece as it comes
   * (waiting for the socket to drain when the client reads slowly), then the
   * last chunk. A client that goes away stops the reading of the pieces.
   */
  private async answerStream(answer: Http1Answer, stream: ResponseStream, close: boolean, omitBody: boolean): Promise<void> {
    const socket = this.socket;
    if (close) this.ending = true;
    let head: string;
    try {
      // HTTP/1.0 has no chunks: there the body ends with the connection.
      head = responseHead(
        answer.status,
        answer.headers,
        close ? { contentLength: 0, close: true, http10KeepAlive: false, untilClose: true } : { contentLength: 0, close: false, http10KeepAlive: false, chunked: true },
      );
    } catch (error) {
      if (!(error instanceof HttpHeaderError)) throw error;
      stream.abort?.();
      this.fail(error);
      return;
    }
    // The head waits for this turn of the event loop to end: the work the stream waits for (a sandbox's request,
    // started with the answer) is sent first, and the head's write then delays nothing the first piece needs.
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (socket.destroyed) {
      stream.abort?.();
      return;
    }
    socket.write(head, 'latin1');
    let gone = false;
    const onClose = (): void => {
      gone = true;
      stream.abort?.();
    };
    socket.once('close', onClose);
    try {
      if (!omitBody) {
        for await (const piece of stream.chunks) {
          if (gone || socket.destroyed) break;
          const length = typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
          if (length === 0) continue;
          const written = close ? socket.write(piece) : socket.write(`${length.toString(16)}\r\n${typeof piece === 'string' ? piece : piece.toString('latin1')}\r\n`, typeof piece === 'string' ? 'utf8' : 'latin1');
          if (!written && !socket.destroyed) await new Promise<void>((resolve) => socket.once('drain', resolve).once('close', resolve));
        }
      } else stream.abort?.();
      if (!omitBody && !gone && !socket.destroyed && !close) socket.write('0\r\n\r\n');
    } catch (error) {
      this.options.onError?.(error);
      this.ending = true;
      socket.destroy();
      return;
    } finally {
      socket.off('close', onClose);
    }
    if (close || this.owner.isClosing) {
      this.ending = true;
      this.endSocket();
    }
  }

  /** Gives the request to `taker` as a connection of its own; this connection ends with its answer. */
  private relay(request: Http1Request, taker: (connection: Duplex) => void): void {
    const socket = this.socket;
    this.busy = true;
    // Nothing after this request is read: what the client sends meanwhile is dropped, and the socket
    // keeps being read, so that closing it does not reset the answer still on its way.
    this.ending = true;
    if (this.heldBack) {
      this.heldBack = false;
      socket.resume();
    }
    // The connection is the other server's to finish (Http1Server.close() does not wait for it).
    this.owner.release(this);
    const connection = new RelayedConnection(socket, relayedRequest(request), () => {
      this.busy = false;
      this.endSocket();
    });
    socket.once('close', () => connection.destroy());
    taker(connection);
  }
}

const NON_ASCII = /[^\x00-\x7f]/;

/** Most heads are ASCII; one that is not must be written as Latin-1, apart from a UTF-8 body. */
function isAscii(text: string): boolean {
  return !NON_ASCII.test(text);
}
