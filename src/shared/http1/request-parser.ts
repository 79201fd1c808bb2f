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
 * It is never looser than node:http's own parser (llhttp, strict mode): every
 * request llhttp refuses, it refuses too. Only SP and HTAB are trimmed from a
 * value; CR, LF, NUL and every other control inside one are refused; a bare LF
 * or CR never ends a line; chunk sizes and extensions follow RFC 9112 with no
 * whitespace, as llhttp reads them. Where llhttp takes something RFC 9112 does
 * not (an empty chunk-extension name, two spaces in the request line, HTTP/0.9),
 * this parser refuses it. test/http1/request-framing.test.ts proves the rule
 * against node:http with a corpus of malformed requests
 * (test/fixtures/http1-corpus/) and generated ones.
 *
 * A request's head can be looked at before its body is read (`head()`), so a
 * server can decide who serves a request (and answer 100 Continue) before its
 * body comes.
 */

import { METHODS as NODE_METHODS } from 'node:http';
import { FIELD_VALUE, HEX_VALUE, QDTEXT, QUOTED_PAIR, TARGET, TOKEN } from './byte-classes.js';

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
  /**
   * Body limits of their own for the requests to some paths (exactly as the
   * request line names them, query aside), instead of maxBodyBytes: the core's
   * MCP endpoint takes what its tools accept, which is more than an app request.
   * @defaultValue none
   */
  readonly bodyLimitsByPath?: ReadonlyMap<string, number>;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const EMPTY = Buffer.alloc(0);
const HTAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const SP = 0x20;
const QUOTE = 0x22;
const COLON = 0x3a;
const SEMICOLON = 0x3b;
const EQUALS = 0x3d;
const BACKSLASH = 0x5c;
/** `chunked`, lower case. */
const CHUNKED = Buffer.from('chunked');
/** The longest chunk-size line read (size and extensions). */
const MAX_CHUNK_LINE = 4096;
/**
 * Chunk-extension bytes one request may send in all. node:http allows 16 KiB
 * per chunk; the core, 4 KiB per line (MAX_CHUNK_LINE) and this much per
 * request, so that what it reads of them is bounded by the request rather than
 * by its number of chunks.
 */
const MAX_CHUNK_EXTENSIONS = 16 * 1024;
/**
 * Header lines in one head. node:http hands its handler the first 1000 and
 * drops the others without a word; the core refuses the request instead (431),
 * so that no handler of either server sees a header the other would not.
 */
const MAX_HEADER_LINES = 1000;

/**
 * The methods node:http's parser (llhttp) takes in an HTTP/1.x request line,
 * and no other: case-sensitive, so `get` is refused. CONNECT is refused
 * besides: the core opens no tunnels.
 */
const METHODS: ReadonlySet<string> = new Set(NODE_METHODS.filter((method) => method !== 'CONNECT'));

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

/** A request whose head is parsed and whose body is still to read. */
interface Pending {
  readonly head: Http1Head;
  headBytes: number;
  /** Its path's body limit (RequestLimits.bodyLimitsByPath), else maxBodyBytes. */
  readonly bodyLimit: number;
}

type Chunked = { state: 'size' } | { state: 'data'; remaining: number } | { state: 'data-end' } | { state: 'trailers' };

export class Http1RequestParser {
  /** Bytes not consumed yet, in arrival order; joined only when they are parsed. */
  private parts: Buffer[] = [];
  private size = 0;
  /** The next request's parsed head, its length in bytes and its body limit, until its body is read. */
  private pending: Pending | undefined;
  /** Chunked body: decoding state and the chunks decoded so far. */
  private chunked: { state: Chunked; parts: Buffer[]; size: number; trailerBytes: number; extensionBytes: number } | undefined;
  private failed: HttpRequestError | undefined;
  /** The largest body any request may have: a Content-Length past it is refused before the path's own limit is known. */
  private readonly ceiling: number;

  constructor(private readonly limits: RequestLimits) {
    this.ceiling = Math.max(limits.maxBodyBytes, ...(limits.bodyLimitsByPath?.values() ?? []));
  }

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

  private parseHead(): Pending | undefined {
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
    const head = parseHead(buffer, end, this.ceiling);
    const bodyLimit = this.limits.bodyLimitsByPath?.get(head.path) ?? this.limits.maxBodyBytes;
    if (typeof head.bodyLength === 'number' && head.bodyLength > bodyLimit) throw new HttpRequestError(413, `the body is over ${bodyLimit} bytes`, 'body');
    this.pending = { head, headBytes: end + 4, bodyLimit };
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
  private readChunked(pending: Pending): Buffer | undefined {
    if (!this.chunked) {
      this.chunked = { state: { state: 'size' }, parts: [], size: 0, trailerBytes: 0, extensionBytes: 0 };
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
      if (state.state === 'data-end') {
        // Exactly CRLF after the data: refused at the first byte that is not.
        if (buffer.length === 0) return undefined;
        if (buffer[0] !== CR || (buffer.length > 1 && buffer[1] !== LF)) throw new HttpRequestError(400, 'a chunk is not followed by CRLF', 'transfer-encoding');
        if (buffer.length === 1) return undefined;
        this.buffer = buffer.subarray(2);
        chunked.state = { state: 'size' };
        continue;
      }
      const lineEnd = buffer.indexOf('\r\n');
      if (lineEnd === -1) {
        if (state.state === 'trailers' ? chunked.trailerBytes + buffer.length > this.limits.maxHeadBytes : buffer.length > MAX_CHUNK_LINE) {
          throw new HttpRequestError(state.state === 'trailers' ? 431 : 400, 'a chunk-size line or trailer section is too long', 'transfer-encoding');
        }
        return undefined;
      }
      if (state.state === 'size') {
        if (lineEnd > MAX_CHUNK_LINE) throw new HttpRequestError(400, 'a chunk-size line or trailer section is too long', 'transfer-encoding');
        // chunk-size = 1*HEXDIG, leading zeros allowed, no sign, no prefix, no whitespace (RFC 9112, section 7.1).
        let size = 0;
        let i = 0;
        for (; i < lineEnd; i++) {
          const digit = HEX_VALUE[buffer[i]!]!;
          if (digit === 255) break;
          // Past the limit the digits still have to be digits; the value no longer matters.
          if (size <= pending.bodyLimit) size = size * 16 + digit;
        }
        if (i === 0 || (i < lineEnd && buffer[i] !== SEMICOLON)) throw new HttpRequestError(400, 'a chunk-size line is malformed', 'transfer-encoding');
        if (i < lineEnd) {
          chunked.extensionBytes += lineEnd - i;
          if (chunked.extensionBytes > MAX_CHUNK_EXTENSIONS) throw new HttpRequestError(413, `the chunk extensions are over ${MAX_CHUNK_EXTENSIONS} bytes`, 'transfer-encoding');
          if (!validChunkExtensions(buffer, i, lineEnd)) throw new HttpRequestError(400, 'a chunk extension is malformed', 'transfer-encoding');
        }
        this.buffer = buffer.subarray(lineEnd + 2);
        chunked.size += size;
        if (chunked.size > pending.bodyLimit) throw new HttpRequestError(413, `the body is over ${pending.bodyLimit} bytes`, 'body');
        chunked.state = size === 0 ? { state: 'trailers' } : { state: 'data', remaining: size };
        continue;
      }
      // Trailers are checked, then dropped: nothing downstream asks for them.
      if (lineEnd === 0) {
        this.buffer = buffer.subarray(2);
        const body = Buffer.concat(chunked.parts, chunked.size);
        this.chunked = undefined;
        return body;
      }
      chunked.trailerBytes += lineEnd + 2;
      if (chunked.trailerBytes > this.limits.maxHeadBytes) throw new HttpRequestError(431, 'the trailer section is too long', 'transfer-encoding');
      checkTrailerLine(buffer, 0, lineEnd);
      this.buffer = buffer.subarray(lineEnd + 2);
    }
  }
}

/** The request line is not `METHOD target HTTP/1.x`. */
function badRequestLine(): HttpRequestError {
  return new HttpRequestError(400, 'the request line is not "METHOD target HTTP/1.x"', 'request-line');
}

/**
 * Parses a request head, `end` being the offset of its final CRLFCRLF, and
 * checks its framing. One pass over the bytes, each checked against a table;
 * the head is made a string once (Latin-1: one character per byte, at the same
 * offsets), and names and values are slices of it.
 */
function parseHead(buffer: Buffer, end: number, ceiling: number): Http1Head {
  const text = buffer.toString('latin1', 0, end + 2);
  // The request line: method SP request-target SP HTTP-version CRLF, one SP each (RFC 9112, section 3).
  let i = 0;
  while (TOKEN[buffer[i]!] === 1) i++;
  if (i === 0 || buffer[i] !== SP) throw badRequestLine();
  const method = text.slice(0, i);
  if (!METHODS.has(method)) {
    throw new HttpRequestError(400, method === 'CONNECT' ? 'CONNECT is not supported' : `"${method.slice(0, 32)}" is not an HTTP method`, 'request-line');
  }
  const targetStart = ++i;
  while (TARGET[buffer[i]!] === 1) i++;
  if (i === targetStart || buffer[i] !== SP) throw badRequestLine();
  const target = text.slice(targetStart, i);
  i++;
  if (
    i + 8 > end ||
    buffer[i] !== 0x48 ||
    buffer[i + 1] !== 0x54 ||
    buffer[i + 2] !== 0x54 ||
    buffer[i + 3] !== 0x50 ||
    buffer[i + 4] !== 0x2f ||
    buffer[i + 6] !== 0x2e ||
    buffer[i + 8] !== CR ||
    buffer[i + 9] !== LF
  ) {
    throw badRequestLine();
  }
  const major = buffer[i + 5]!;
  const minor = buffer[i + 7]!;
  if (major !== 0x31 || minor < 0x30 || minor > 0x39) throw badRequestLine();
  if (minor > 0x31) throw new HttpRequestError(505, `HTTP/1.${minor - 0x30} is not supported`, 'request-line');
  const http10 = minor === 0x30;
  i += 10;

  // No prototype: a header named `constructor` or `__proto__` is a header like any other.
  const headers: Http1Headers = Object.create(null);
  let hosts = 0;
  let contentLength = -1;
  let transferEncodings = 0;
  let chunked = false;
  let connection = '';
  let expect: string | undefined;
  let upgrade = false;
  let line = 1;
  // Header lines up to the empty line at end + 2: name ":" OWS value OWS CRLF (RFC 9112, section 5).
  while (i < end + 2) {
    if (++line > MAX_HEADER_LINES + 1) throw new HttpRequestError(431, `the request has more than ${MAX_HEADER_LINES} header lines`);
    const nameStart = i;
    while (TOKEN[buffer[i]!] === 1) i++;
    // No whitespace before the colon, and no folded continuation line (which starts with one).
    if (i === nameStart || buffer[i] !== COLON) throw new HttpRequestError(400, `header line ${line} is malformed`, `line ${line}`);
    const name = text.slice(nameStart, i);
    i++;
    // Only SP and HTAB are trimmed (RFC 9110, section 5.5); a VT, FF or NBSP is part of the value, or refused.
    while (buffer[i] === SP || buffer[i] === HTAB) i++;
    const valueStart = i;
    let valueEnd = i;
    let byte = buffer[i]!;
    while (FIELD_VALUE[byte] === 1) {
      i++;
      if (byte !== SP && byte !== HTAB) valueEnd = i;
      byte = buffer[i]!;
    }
    // A CR, LF, NUL or other control inside a value, or a CR not followed by LF: never a line end of ours.
    if (byte !== CR || buffer[i + 1] !== LF) throw new HttpRequestError(400, `header "${name}" has a control character`, name.toLowerCase());
    const value = text.slice(valueStart, valueEnd);
    const key = name.toLowerCase();
    switch (key) {
      case 'host':
        hosts++;
        break;
      case 'content-length':
        // Sent twice is refused even with the same value, as llhttp does: one framing, stated once.
        if (contentLength !== -1) throw new HttpRequestError(400, 'content-length is sent more than once', key);
        contentLength = parseContentLength(buffer, valueStart, valueEnd, ceiling);
        break;
      case 'transfer-encoding':
        transferEncodings++;
        chunked = isChunked(buffer, valueStart, valueEnd, i);
        break;
      case 'connection':
        connection += `,${value.toLowerCase()}`;
        break;
      case 'expect':
        expect = value.toLowerCase();
        break;
      case 'upgrade':
        upgrade = value !== '';
        break;
    }
    const existing = headers[key];
    if (existing === undefined) headers[key] = value;
    else if (!FIRST_ONLY.has(key)) headers[key] = `${existing}${key === 'cookie' ? '; ' : ', '}${value}`;
    i += 2;
  }
  if (hosts > 1) throw new HttpRequestError(400, 'the host header is sent more than once', 'host');
  if (hosts === 0 && !http10) throw new HttpRequestError(400, 'an HTTP/1.1 request needs a host header', 'host');

  let bodyLength: number | 'chunked' = 0;
  if (transferEncodings > 0) {
    if (contentLength !== -1) throw new HttpRequestError(400, 'content-length and transfer-encoding are both sent', 'transfer-encoding');
    if (http10) throw new HttpRequestError(400, 'transfer-encoding is not HTTP/1.0', 'transfer-encoding');
    // chunked, alone and once: no coding the core would have to undo, and no list to read two ways.
    if (transferEncodings > 1 || !chunked) {
      throw new HttpRequestError(501, `transfer-encoding "${headers['transfer-encoding']}" is not supported; send chunked or a content-length`, 'transfer-encoding');
    }
    bodyLength = 'chunked';
  } else if (contentLength !== -1) {
    bodyLength = contentLength;
  }
  if (expect !== undefined && expect !== '100-continue') throw new HttpRequestError(417, `expectation "${expect}" is not supported`, 'expect');

  const tokens = connection === '' ? [] : connection.split(',').map((token) => token.trim());
  const { path, query } = splitTarget(target, method);
  // An upgrade the core does not take still ends the connection: what follows may be another protocol,
  // and node:http reads nothing after it either.
  const upgrades = upgrade && tokens.includes('upgrade');
  return {
    method,
    target,
    path,
    query,
    http10,
    headers,
    keepAlive: !upgrades && (http10 ? tokens.includes('keep-alive') : !tokens.includes('close')),
    expectContinue: expect === '100-continue' && !http10 && bodyLength !== 0,
    bodyLength,
  };
}

/**
 * A Content-Length value: digits between optional whitespace (spaces and tabs,
 * RFC 9110 5.6.1's OWS, as llhttp 9.3 of Node 24 reads it). Past `ceiling`
 * (the largest body limit) the value is no longer computed, however many digits
 * it has: the caller refuses it with 413 once it knows the request's own limit.
 */
function parseContentLength(buffer: Buffer, start: number, end: number, ceiling: number): number {
  let length = 0;
  for (let i = start; i < end; i++) {
    const digit = buffer[i]! - 0x30;
    if (digit < 0 || digit > 9) throw new HttpRequestError(400, 'content-length is not a number', 'content-length');
    // Past the limit the digits still have to be digits; the value no longer matters.
    if (length <= ceiling) length = length * 10 + digit;
  }
  if (start === end) throw new HttpRequestError(400, 'content-length is not a number', 'content-length');
  return length;
}

/** A Transfer-Encoding value that is `chunked` in any case, then spaces only (llhttp refuses a tab there). */
function isChunked(buffer: Buffer, start: number, end: number, lineEnd: number): boolean {
  if (end - start !== CHUNKED.length) return false;
  for (let i = 0; i < CHUNKED.length; i++) if ((buffer[start + i]! | 0x20) !== CHUNKED[i]) return false;
  return !hasTab(buffer, end, lineEnd);
}

/** A tab among the spaces and tabs that end a value. */
function hasTab(buffer: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (buffer[i] === HTAB) return true;
  return false;
}

/**
 * The extensions of a chunk-size line, from its first `;` to its CR:
 * `*( ";" token [ "=" ( token / quoted-string ) ] )` with no whitespace
 * anywhere, as RFC 9112 (section 7.1.1) and llhttp both read them. (RFC 9112
 * allows whitespace around `;` and `=`; llhttp refuses it, so the core does.)
 */
function validChunkExtensions(buffer: Buffer, start: number, end: number): boolean {
  let i = start;
  while (i < end) {
    // At a `;`.
    const nameStart = ++i;
    while (i < end && TOKEN[buffer[i]!] === 1) i++;
    if (i === nameStart) return false;
    if (i === end) return true;
    if (buffer[i] === SEMICOLON) continue;
    if (buffer[i] !== EQUALS) return false;
    i++;
    if (buffer[i] === QUOTE && i < end) {
      i++;
      for (;;) {
        if (i >= end) return false;
        const byte = buffer[i]!;
        if (byte === QUOTE) break;
        if (byte === BACKSLASH) {
          i++;
          if (i >= end || QUOTED_PAIR[buffer[i]!] !== 1) return false;
        } else if (QDTEXT[byte] !== 1) return false;
        i++;
      }
      i++;
    } else {
      const valueStart = i;
      while (i < end && TOKEN[buffer[i]!] === 1) i++;
      if (i === valueStart) return false;
    }
    if (i < end && buffer[i] !== SEMICOLON) return false;
  }
  return true;
}

/** A trailer line (`start` to its CR): a header line whose name is not one of framing or connection. */
function checkTrailerLine(buffer: Buffer, start: number, end: number): void {
  let i = start;
  while (i < end && TOKEN[buffer[i]!] === 1) i++;
  if (i === start || i === end || buffer[i] !== COLON) throw new HttpRequestError(400, 'a trailer line is malformed', 'transfer-encoding');
  const name = buffer.toString('latin1', start, i).toLowerCase();
  // llhttp refuses framing headers in trailers; the core refuses `connection` too rather than let a trailer close it.
  if (name === 'content-length' || name === 'transfer-encoding' || name === 'connection') {
    throw new HttpRequestError(400, `a ${name} trailer is not allowed`, 'transfer-encoding');
  }
  for (i++; i < end; i++) if (FIELD_VALUE[buffer[i]!] !== 1) throw new HttpRequestError(400, `trailer "${name}" has a control character`, 'transfer-encoding');
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
