/**
 * One request, read whole by the Http1Server's parser, given to another HTTP
 * server (node:http) as a connection of its own: its readable side carries that
 * request, written anew from what was parsed, with `content-length` framing and
 * `connection: close`; what the other server writes goes to the client's socket;
 * when the other server ends its side, the relay is done (`onEnd`).
 *
 * So the other server never parses a byte from the network: it sees only a
 * request this server has framed, within this server's limits. Its own parser
 * (its limits, its error answers) never meets a client, and the bytes the
 * client sent after that request are never read by it.
 */
import { Duplex } from 'node:stream';
import type net from 'node:net';
import type { Http1Request } from './request-parser.js';

/** Hop-by-hop and framing headers: the relayed request carries its own. */
const NOT_RELAYED = new Set(['connection', 'content-length', 'expect', 'keep-alive', 'transfer-encoding']);

/** The request as the other server reads it: the same method, target, version and headers; its body, whole. */
export function relayedRequest(request: Http1Request): Buffer {
  let head = `${request.method} ${request.target} HTTP/1.${request.http10 ? 0 : 1}\r\n`;
  for (const name in request.headers) if (!NOT_RELAYED.has(name)) head += `${name}: ${request.headers[name]}\r\n`;
  // A body was announced (Content-Length or chunked): its length now, even when it is 0.
  if (request.bodyLength !== 0) head += `content-length: ${request.body.length}\r\n`;
  head += 'connection: close\r\n\r\n';
  return request.body.length === 0 ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), request.body]);
}

export class RelayedConnection extends Duplex {
  // What fastify and node:http read of a socket: the client's addresses (a loopback check, a log line),
  // read when the relay starts (a socket that has closed no longer tells them).
  readonly remoteAddress: string | undefined;
  readonly remotePort: number | undefined;
  readonly remoteFamily: string | undefined;
  readonly localAddress: string | undefined;
  readonly localPort: number | undefined;
  /** The other server ended its side after its answer: the client's connection ends gracefully, not by a reset. */
  private answered = false;

  constructor(
    private readonly socket: net.Socket,
    request: Buffer,
    /** Called once the other server has written its last byte and ended its side. */
    private readonly onEnd: () => void,
  ) {
    super();
    this.remoteAddress = socket.remoteAddress;
    this.remotePort = socket.remotePort;
    this.remoteFamily = socket.remoteFamily;
    this.localAddress = socket.localAddress;
    this.localPort = socket.localPort;
    this.push(request);
  }

  override _read(): void {
    // The request was pushed whole; nothing more comes until the answer is out.
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.socket.write(chunk, encoding)) callback();
    else this.socket.once('drain', () => callback());
  }

  override _writev(chunks: { chunk: Buffer; encoding: BufferEncoding }[], callback: (error?: Error | null) => void): void {
    this.socket.cork();
    let flushed = true;
    for (const { chunk, encoding } of chunks) flushed = this.socket.write(chunk, encoding);
    this.socket.uncork();
    if (flushed) callback();
    else this.socket.once('drain', () => callback());
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.answered = true;
    this.onEnd();
    callback();
    // The other server sees the end of this connection, and forgets it.
    this.push(null);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Destroyed before its answer was whole (the other server closing, or failing): so is the client's connection.
    if (!this.answered) this.socket.destroy();
    callback(error);
  }
}
