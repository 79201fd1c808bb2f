/**
 * An incremental HTTP/1.1 request parser (RFC 9112), shared by the core's
 * ingress and the jit-runner. It reads strictly what a server must accept and
 * nothing it would have to guess at: a request line, header lines of token
 * names and visible values, then a body framed by Content-Length or by chunked
 * transfer coding. Anything else (an unknown transfer coding, Content-Length
 * beside Transfer-Encoding, a folded or malformed line, a missing or repeated
 * Host, a head or body over its limit) is an HttpRequestError with the status to
 * answer, after which the connection is closed: no framing is guessed, so no
 * request can be smuggled past it.
 *
 * A request's head can be looked at before its body is read (`head()`), so a
 * server can hand the connection, with every byte it has not consumed, to
 * another HTTP server (`unconsumed()`).
 */

import { isHeaderName, isHeaderValue } from './response-head.js';

export type Http1Headers = Record<string, string>;

export interface Http1Head {
  readonly method: string;
  /** The request target as sent, e.g. `/shop/cart?x=1`. */
  readonly target: string;
  /** The path of the target (absolute-form targets are reduced to it). */
  readonly path: string;
  /** The query of the target, without its `?`; empty when there is none. */
  readonly query: string;
  /** HTTP/1.0 rather than HTTP/1.1. */
  readonly http10: boolean;
  /**
   * Lower-cased names. A repeated header is joined with ", " (cookies with "; "),
   * as node:http does; for headers that cannot be lists, the first one is kept.
   */
  readonly headers: Http1Headers;
  /** The connection stays open after the answer (HTTP/1.1 without `Connection: close`, or 1.0 with `keep-alive`). */
  readonly keepAlive: boolean;
  /** The client waits for `100 Continue` before it sends the body. */
  readonly expectContinue: boolean;
  /** Body bytes announced by Content-Length, or `chunked`. */
  readonly bodyLength: number | 'chunked';
}

export interface Http1Request extends Http1Head {
  readonly body: Buffer;
}

export type HttpRequestErrorStatus = 400 | 408 | 413 | 417 | 431 | 501 | 505;

export class HttpRequestError extends Error {
  constructor(
    /** The status to answer with before closing the connection. */
    readonly status: HttpRequestErrorStatus,
    message: string,
    /** The header or part of the request at fault. */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'HttpRequestError';
  }
}

export interface RequestLimits {
  /** Request line and headers (and chunked trailers), bytes; past it: 431. */
  readonly maxHeadBytes: number;
  /** Body, bytes; past it: 413. */
  readonly maxBodyBytes: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');
/** Methods are upper-case letters here: every method HTTP defines is, and a lower-case `get` is a mistake, not a method. */
const REQUEST_LINE = /^([A-Z]+) ([!-~]+) HTTP\/1\.([0-9])$/;
const DIGITS = /^[0-9]{1,15}$/;
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,12})[ \t]*(?:;.*)?$/;
const EMPTY = Buffer.alloc(0);
/** The longest chunk-size line read (size and extensions). */
const MAX_CHUNK_LINE = 4096;

/** Headers whose repeats are dropped rather than joined, as node:http does. */
const FIRST_ONLY = new Set([
  'age',
  'authorization',
  'content-type',
  'etag',
  'expires',
  'from',
  'if-modified-since',
  'if-unmodified-since',
  'last-modified',
  'location',
  'max-forwards',
  'proxy-authorization',
  'referer',
  'retry-after',
  'server',
  'user-agent',
]);

type Chunked = { state: 'size' } | { state: 'data'; remaining: number } | { state: 'data-end' } | { state: 'trailers' };

export class Http1RequestParser {
  /** Bytes not consumed yet, in arrival order; joined only when they are parsed. */
  private parts: Buffer[] = [];
  private size = 0;
  /** The next request's parsed head and its length in bytes, until its body is read. */
  private pending: { head: Http1Head; headBytes: number } | undefined;
  /** Chunked body: decoding state and the chunks decoded so far. */
  private chunked: { state: Chunked; parts: Buffer[]; size: number; trailerBytes: number } | undefined;
  private failed: HttpRequestError | undefined;

  constructor(private readonly limits: RequestLimits) {}

  /** Bytes from the connection; parsed by head() and next(). */
  push(chunk: Buffer): void {
    this.parts.push(chunk);
    this.size += chunk.length;
  }

  /** Bytes received and not consumed yet. */
  get bufferedBytes(): number {
    return this.size;
  }

  /** A request has begun to arrive and is not whole yet (or bytes wait to be parsed). */
  get partial(): boolean {
    return this.size > 0 || this.pending !== undefined || this.chunked !== undefined;
  }

  /** Everything not consumed yet, as one buffer (joined here, once per parse). */
  private get buffer(): Buffer {
    if (this.parts.length > 1) this.parts = [Buffer.concat(this.parts, this.size)];
    return this.parts[0] ?? EMPTY;
  }

  private set buffer(rest: Buffer) {
    this.parts = rest.length === 0 ? [] : [rest];
    this.size = rest.length;
  }

  /**
   * The head of the next request, once it has arrived; its body need not have.
   * Throws HttpRequestError, and keeps throwing it.
   */
  head(): Http1Head | undefined {
    if (this.failed) throw this.failed;
    if (this.pending) return this.pending.head;
    try {
      return this.parseHead()?.head;
    } catch (error) {
      if (error instanceof HttpRequestError) this.failed = error;
      throw error;
    }
  }

  /**
   * The next complete request, or undefined while more bytes are needed. Throws
   * HttpRequestError, and keeps throwing it: the connection cannot be read further.
   */
  next(): Http1Request | undefined {
    if (this.failed) throw this.failed;
    try {
      const pending = this.pending ?? this.parseHead();
      if (!pending) return undefined;
      const body = pending.head.bodyLength === 'chunked' ? this.readChunked(pending) : this.readLength(pending.headBytes, pending.head.bodyLength);
      if (!body) return undefined;
      this.pending = undefined;
      const head = pending.head;
      // Field by field: a spread of the head costs about a microsecond per request.
      return {
        method: head.method,
        target: head.target,
        path: head.path,
        query: head.query,
        http10: head.http10,
        headers: head.headers,
        keepAlive: head.keepAlive,
        expectContinue: head.expectContinue,
        bodyLength: head.bodyLength,
        body,
      };
    } catch (error) {
      if (error instanceof HttpRequestError) this.failed = error;
      throw error;
    }
  }

  /** Every byte not consumed yet, the pending request's head included. The parser is spent. */
  unconsumed(): Buffer {
    const rest = this.buffer;
    this.buffer = EMPTY;
    this.pending = undefined;
    this.failed = new HttpRequestError(400, 'the connection was handed over');
    return rest;
  }

  private parseHead(): { head: Http1Head; headBytes: number } | undefined {
    if (this.size === 0) return undefined;
    let buffer = this.buffer;
    // A client may send empty lines between requests (RFC 9112, section 2.2).
    if (buffer[0] === 0x0d || buffer[0] === 0x0a) {
      let start = 0;
      while (start < buffer.length && (buffer[start] === 0x0d || buffer[start] === 0x0a)) start++;
      this.buffer = buffer = buffer.subarray(start);
    }
    const end = buffer.indexOf(HEAD_END);
    if (end === -1 || end + 4 > this.limits.maxHeadBytes) {
      if (buffer.length > this.limits.maxHeadBytes) throw new HttpRequestError(431, `the request head is over ${this.limits.maxHeadBytes} bytes`);
      return undefined;
    }
    this.pending = { head: parseHeadText(buffer.toString('latin1', 0, end), this.limits), headBytes: end + 4 };
    return this.pending;
  }

  private readLength(headLength: number, bodyLength: number): Buffer | undefined {
    // Checked before joining: a large body arriving in many chunks is joined once, whole.
    if (this.size < headLength + bodyLength) return undefined;
    const buffer = this.buffer;
    this.buffer = buffer.length === headLength + bodyLength ? EMPTY : buffer.subarray(headLength + bodyLength);
    return bodyLength === 0 ? EMPTY : buffer.subarray(headLength, headLength + bodyLength);
  }

  /** Decodes what has arrived of a chunked body; the body once its last chunk and trailers are in. */
  private readChunked(pending: { headBytes: number }): Buffer | undefined {
    if (!this.chunked) {
      this.chunked = { state: { state: 'size' }, parts: [], size: 0, trailerBytes: 0 };
      this.buffer = this.buffer.subarray(pending.headBytes);
      pending.headBytes = 0;
    }
    const chunked = this.chunked;
    for (;;) {
      const buffer = this.buffer;
      const state = chunked.state;
      if (state.state === 'data') {
        if (buffer.length === 0) return undefined;
        const take = Math.min(state.remaining, buffer.length);
        chunked.parts.push(buffer.subarray(0, take));
        this.buffer = buffer.subarray(take);
        state.remaining -= take;
        if (state.remaining === 0) chunked.state = { state: 'data-end' };
        continue;
      }
      const lineEnd = buffer.indexOf('\r\n');
      if (lineEnd === -1) {
        if (state.state === 'trailers' ? chunked.trailerBytes + buffer.length > this.limits.maxHeadBytes : buffer.length > MAX_CHUNK_LINE) {
          throw new HttpRequestError(state.state === 'trailers' ? 431 : 400, 'a chunk-size line or trailer section is too long', 'transfer-encoding');
        }
        return undefined;
      }
      const line = buffer.toString('latin1', 0, lineEnd);
      this.buffer = buffer.subarray(lineEnd + 2);
      if (state.state === 'data-end') {
        if (lineEnd !== 0) throw new HttpRequestError(400, 'a chunk is longer than its size', 'transfer-encoding');
        chunked.state = { state: 'size' };
      } else if (state.state === 'size') {
        const match = CHUNK_SIZE.exec(line);
        if (!match) throw new HttpRequestError(400, 'a chunk-size line is malformed', 'transfer-encoding');
        const size = Number.parseInt(match[1]!, 16);
        chunked.size += size;
        if (chunked.size > this.limits.maxBodyBytes) throw new HttpRequestError(413, `the body is over ${this.limits.maxBodyBytes} bytes`, 'body');
        chunked.state = size === 0 ? { state: 'trailers' } : { state: 'data', remaining: size };
      } else {
        // Trailers are read and dropped: nothing downstream asks for them.
        if (lineEnd === 0) {
          const body = Buffer.concat(chunked.parts, chunked.size);
          this.chunked = undefined;
          return body;
        }
        chunked.trailerBytes += lineEnd + 2;
        if (chunked.trailerBytes > this.limits.maxHeadBytes) throw new HttpRequestError(431, 'the trailer section is too long', 'transfer-encoding');
        if (!validHeaderLine(line)) throw new HttpRequestError(400, 'a trailer line is malformed', 'transfer-encoding');
      }
    }
  }
}

function validHeaderLine(line: string): boolean {
  const colon = line.indexOf(':');
  return colon > 0 && isHeaderName(line.slice(0, colon)) && isHeaderValue(line.slice(colon + 1));
}

/** Parses a request head (without its final CRLFCRLF) and checks its framing. */
function parseHeadText(text: string, limits: RequestLimits): Http1Head {
  let lineEnd = text.indexOf('\r\n');
  const requestLine = REQUEST_LINE.exec(lineEnd === -1 ? text : text.slice(0, lineEnd));
  if (!requestLine) throw new HttpRequestError(400, 'the request line is not "METHOD target HTTP/1.x"', 'request-line');
  if (requestLine[3] !== '0' && requestLine[3] !== '1') throw new HttpRequestError(505, `HTTP/1.${requestLine[3]} is not supported`, 'request-line');
  const http10 = requestLine[3] === '0';
  const method = requestLine[1]!;
  const target = requestLine[2]!;

  // No prototype: a header named `constructor` or `__proto__` is a header like any other.
  const headers: Http1Headers = Object.create(null);
  let hosts = 0;
  let contentLength: string | undefined;
  let transferEncoding: string | undefined;
  let connection = '';
  let expect: string | undefined;
  let line = 1;
  while (lineEnd !== -1) {
    const start = lineEnd + 2;
    lineEnd = text.indexOf('\r\n', start);
    const raw = lineEnd === -1 ? text.slice(start) : text.slice(start, lineEnd);
    line++;
    const colon = raw.indexOf(':');
    const name = colon > 0 ? raw.slice(0, colon) : '';
    // No whitespace before the colon, no folded continuation lines (RFC 9112, section 5).
    if (!isHeaderName(name)) throw new HttpRequestError(400, `header line ${line} is malformed`, `line ${line}`);
    const value = raw.slice(colon + 1).trim();
    if (!isHeaderValue(value)) throw new HttpRequestError(400, `header "${name}" has a control character`, name.toLowerCase());
    const key = name.toLowerCase();
    switch (key) {
      case 'host':
        hosts++;
        break;
      case 'content-length':
        if (!DIGITS.test(value)) throw new HttpRequestError(400, 'content-length is not a number', key);
        if (contentLength !== undefined && contentLength !== value) throw new HttpRequestError(400, 'content-length is sent twice with different values', key);
        contentLength = value;
        break;
      case 'transfer-encoding':
        transferEncoding = transferEncoding === undefined ? value : `${transferEncoding},${value}`;
        break;
      case 'connection':
        connection += `,${value.toLowerCase()}`;
        break;
      case 'expect':
        expect = value.toLowerCase();
        break;
    }
    const existing = headers[key];
    if (existing === undefined) headers[key] = value;
    else if (!FIRST_ONLY.has(key)) headers[key] = `${existing}${key === 'cookie' ? '; ' : ', '}${value}`;
  }
  if (hosts > 1) throw new HttpRequestError(400, 'the host header is sent more than once', 'host');
  if (hosts === 0 && !http10) throw new HttpRequestError(400, 'an HTTP/1.1 request needs a host header', 'host');

  let bodyLength: number | 'chunked' = 0;
  if (transferEncoding !== undefined) {
    if (contentLength !== undefined) throw new HttpRequestError(400, 'content-length and transfer-encoding are both sent', 'transfer-encoding');
    if (http10) throw new HttpRequestError(400, 'transfer-encoding is not HTTP/1.0', 'transfer-encoding');
    if (transferEncoding.trim().toLowerCase() !== 'chunked') throw new HttpRequestError(501, `transfer-encoding "${transferEncoding}" is not supported; send chunked or a content-length`, 'transfer-encoding');
    bodyLength = 'chunked';
  } else if (contentLength !== undefined) {
    bodyLength = Number(contentLength);
    if (bodyLength > limits.maxBodyBytes) throw new HttpRequestError(413, `the body is over ${limits.maxBodyBytes} bytes`, 'body');
  }
  if (expect !== undefined && expect !== '100-continue') throw new HttpRequestError(417, `expectation "${expect}" is not supported`, 'expect');

  const tokens = connection === '' ? [] : connection.split(',').map((token) => token.trim());
  const { path, query } = splitTarget(target, method);
  return {
    method,
    target,
    path,
    query,
    http10,
    headers,
    keepAlive: http10 ? tokens.includes('keep-alive') : !tokens.includes('close'),
    expectContinue: expect === '100-continue' && !http10 && bodyLength !== 0,
    bodyLength,
  };
}

/**
 * Path and query of a request target: origin-form as is, absolute-form reduced
 * to its path, `*` for OPTIONS. Throws HttpRequestError (400) for anything else.
 */
export function splitTarget(target: string, method: string): { path: string; query: string } {
  let start = 0;
  if (target.charCodeAt(0) !== 0x2f) {
    if (target === '*' && method === 'OPTIONS') return { path: '*', query: '' };
    const authority = /^https?:\/\/[^/?#]+/i.exec(target);
    if (!authority) throw new HttpRequestError(400, 'the request target is not a path', 'request-line');
    start = authority[0].length;
  }
  // A fragment is never sent; one that is is not part of the query.
  const hash = target.indexOf('#', start);
  const end = hash === -1 ? target.length : hash;
  const q = target.indexOf('?', start);
  if (q === -1 || q > end) return { path: start === end ? '/' : target.slice(start, end), query: '' };
  return { path: start === q ? '/' : target.slice(start, q), query: target.slice(q + 1, end) };
}
