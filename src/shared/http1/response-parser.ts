/**
 * An incremental HTTP/1.1 response parser for the core's sandbox connections.
 * The core sends one request at a time on a connection (no pipelining), so a
 * connection only ever parses the one answer it waits for: status, the headers
 * the core acts on, and a body framed by Content-Length, chunked encoding, or
 * the end of the connection. Anything else is a protocol error, and the caller
 * drops the connection.
 *
 * A sandbox runs code nobody vetted, so its answer is hostile input: every
 * header line is checked with the one header grammar (response-head.ts), the
 * framing headers are found by name wherever they are, a second Content-Length
 * or Transfer-Encoding is refused rather than guessed at, and the body is
 * bounded: past `maxBodyBytes` the parser throws ResponseTooLargeError, from the
 * Content-Length before any of the body is read, or as soon as a chunked (or
 * connection-framed) body passes the limit.
 */
import { isHeaderName, isHeaderValue } from './response-head.js';

export interface ParsedResponse {
  status: number;
  body: Buffer;
  /** The runner asked to close the connection (`Connection: close` or HTTP/1.0). */
  close: boolean;
}

export class HttpProtocolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HttpProtocolError';
  }
}

/** The answer's body is over the parser's `maxBodyBytes`; nothing past the limit was kept. */
export class ResponseTooLargeError extends Error {
  constructor(
    readonly limitBytes: number,
    /** The Content-Length (or chunk size) that announced it, when the answer said so up front. */
    readonly declaredBytes?: number,
  ) {
    super(
      declaredBytes === undefined
        ? `the answer's body passed the limit of ${limitBytes} bytes`
        : `the answer announces ${declaredBytes} body bytes, over the limit of ${limitBytes}`,
    );
    this.name = 'ResponseTooLargeError';
  }
}

export interface ResponseParserOptions {
  /**
   * Largest body accepted, in bytes. Keeps a runaway or hostile sandbox from
   * making the core buffer its answer without bound.
   * @defaultValue unbounded
   */
  readonly maxBodyBytes?: number;
}

/** Larger heads are refused: a runner's answer head is a few hundred bytes. */
const MAX_HEAD_BYTES = 64 * 1024;
const CRLF = Buffer.from('\r\n');
const HEAD_END = Buffer.from('\r\n\r\n');

type Framing = { kind: 'length'; remaining: number } | { kind: 'chunked' } | { kind: 'until-close' };

export class Http1ResponseParser {
  private buffered: Buffer | undefined;
  private status = 0;
  private close = false;
  private framing: Framing | undefined;
  private readonly bodyParts: Buffer[] = [];
  private bodyBytes = 0;
  private readonly maxBodyBytes: number;
  /** Chunked: bytes of the current chunk still to read (then its CRLF), or -1 before a size line. */
  private chunkRemaining = -1;
  private done = false;

  constructor(options: ResponseParserOptions = {}) {
    this.maxBodyBytes = options.maxBodyBytes ?? Number.POSITIVE_INFINITY;
  }

  /**
   * Feeds bytes from the socket. Returns the response once it is complete,
   * undefined while more bytes are needed; throws HttpProtocolError.
   */
  push(chunk: Buffer): ParsedResponse | undefined {
    if (this.done) throw new HttpProtocolError('bytes after the end of the response');
    this.buffered = this.buffered === undefined ? chunk : Buffer.concat([this.buffered, chunk]);
    if (this.framing === undefined && !this.parseHead()) return undefined;
    return this.parseBody();
  }

  /** The connection ended: completes a body framed by the end of the connection, else throws. */
  end(): ParsedResponse {
    if (this.framing?.kind === 'until-close' && !this.done) {
      if (this.buffered !== undefined) this.addBody(this.buffered);
      return this.finish();
    }
    throw new HttpProtocolError('the connection closed before the response was complete');
  }

  private parseHead(): boolean {
    const buffer = this.buffered!;
    const end = buffer.indexOf(HEAD_END);
    if (end === -1) {
      if (buffer.length > MAX_HEAD_BYTES) throw new HttpProtocolError('the response head is too large');
      return false;
    }
    const head = buffer.toString('latin1', 0, end);
    // "HTTP/1.x NNN" then an optional reason phrase.
    if (!head.startsWith('HTTP/1.') || (head[7] !== '0' && head[7] !== '1') || head[8] !== ' ' || !/^\d{3}$/.test(head.slice(9, 12))) {
      throw new HttpProtocolError('not an HTTP/1.x status line');
    }
    if (head.length > 12 && head[12] !== ' ' && head[12] !== '\r') throw new HttpProtocolError('not an HTTP/1.x status line');
    const statusLineEnd = head.indexOf('\r\n');
    if (!isHeaderValue(head.slice(12, statusLineEnd === -1 ? head.length : statusLineEnd))) throw new HttpProtocolError('a control character in the status line');
    this.status = Number(head.slice(9, 12));
    const http10 = head[7] === '0';
    let length: number | undefined;
    let chunked = false;
    let closeToken = false;
    let keepAliveToken = false;
    let lineStart = statusLineEnd;
    while (lineStart !== -1) {
      lineStart += 2;
      const lineEnd = head.indexOf('\r\n', lineStart);
      const line = lineEnd === -1 ? head.slice(lineStart) : head.slice(lineStart, lineEnd);
      lineStart = lineEnd;
      const colon = line.indexOf(':');
      const name = colon === -1 ? '' : line.slice(0, colon);
      // A token, nothing else: no space before the colon, no folded continuation
      // line, so that no header can hide from the names checked below.
      if (!isHeaderName(name)) throw new HttpProtocolError('a malformed header line');
      const value = trimOws(line.slice(colon + 1));
      // No CR, LF, NUL or other control inside a value: a bare LF is not a line end here.
      if (!isHeaderValue(value)) throw new HttpProtocolError(`header "${name}" has an invalid value`);
      switch (name.toLowerCase()) {
        case 'content-length':
          // A second one is refused even when it agrees: one answer, one framing.
          if (length !== undefined) throw new HttpProtocolError('more than one Content-Length');
          if (!/^\d{1,15}$/.test(value)) throw new HttpProtocolError('a bad Content-Length');
          length = Number(value);
          break;
        case 'transfer-encoding':
          if (chunked) throw new HttpProtocolError('more than one Transfer-Encoding');
          // The only coding the core reads; "gzip, chunked" would hand it bytes it cannot use.
          if (value.toLowerCase() !== 'chunked') throw new HttpProtocolError(`transfer encoding "${value}" is not supported`);
          chunked = true;
          break;
        case 'connection':
          for (const token of value.toLowerCase().split(',')) {
            const trimmed = trimOws(token);
            if (trimmed === 'close') closeToken = true;
            else if (trimmed === 'keep-alive') keepAliveToken = true;
          }
          break;
      }
    }
    this.close = closeToken || (http10 && !keepAliveToken);
    if (chunked && length !== undefined) throw new HttpProtocolError('both Content-Length and chunked encoding');
    const rest = buffer.subarray(end + HEAD_END.length);
    this.buffered = rest.length > 0 ? rest : undefined;
    if (this.status < 200) throw new HttpProtocolError(`interim response ${this.status} is not expected`);
    if (this.status === 204 || this.status === 304) this.framing = { kind: 'length', remaining: 0 };
    else if (chunked) this.framing = { kind: 'chunked' };
    else if (length !== undefined) {
      // Refused from the header: not one byte of an answer that cannot be kept is read.
      if (length > this.maxBodyBytes) throw new ResponseTooLargeError(this.maxBodyBytes, length);
      this.framing = { kind: 'length', remaining: length };
    } else {
      this.framing = { kind: 'until-close' };
      this.close = true;
    }
    return true;
  }

  private parseBody(): ParsedResponse | undefined {
    const framing = this.framing!;
    if (framing.kind === 'until-close') {
      const part = this.buffered;
      this.buffered = undefined;
      if (part !== undefined) this.addBody(part);
      return undefined;
    }
    if (framing.kind === 'length') {
      const available = this.buffered?.length ?? 0;
      if (available > framing.remaining) throw new HttpProtocolError('bytes after the end of the response');
      if (available > 0) this.addBody(this.buffered!);
      framing.remaining -= available;
      this.buffered = undefined;
      return framing.remaining === 0 ? this.finish() : undefined;
    }
    return this.parseChunks();
  }

  private parseChunks(): ParsedResponse | undefined {
    while (this.buffered !== undefined && this.buffered.length > 0) {
      const buffer = this.buffered;
      if (this.chunkRemaining === -1) {
        const lineEnd = buffer.indexOf(CRLF);
        if (lineEnd === -1) {
          if (buffer.length > 1024) throw new HttpProtocolError('a chunk size line is too long');
          return undefined;
        }
        const sizeText = buffer.toString('latin1', 0, lineEnd).split(';')[0]!.trim();
        if (!/^[0-9a-fA-F]{1,12}$/.test(sizeText)) throw new HttpProtocolError('a bad chunk size');
        const size = parseInt(sizeText, 16);
        // A chunk that would pass the limit is refused from its size line, before its data.
        if (this.bodyBytes + size > this.maxBodyBytes) throw new ResponseTooLargeError(this.maxBodyBytes);
        if (size === 0) {
          // Last chunk: no trailers expected, just the final CRLF.
          const trailerEnd = buffer.indexOf(CRLF, lineEnd + 2);
          if (trailerEnd === -1) return undefined;
          if (trailerEnd !== lineEnd + 2) throw new HttpProtocolError('trailers are not supported');
          if (trailerEnd + 2 !== buffer.length) throw new HttpProtocolError('bytes after the end of the response');
          this.buffered = undefined;
          return this.finish();
        }
        this.chunkRemaining = size;
        this.buffered = buffer.subarray(lineEnd + 2);
        continue;
      }
      if (this.chunkRemaining > 0) {
        const take = Math.min(this.chunkRemaining, buffer.length);
        this.addBody(buffer.subarray(0, take));
        this.chunkRemaining -= take;
        this.buffered = buffer.subarray(take);
        continue;
      }
      // The chunk's data is read: its CRLF follows.
      if (buffer.length < 2) return undefined;
      if (buffer[0] !== 13 || buffer[1] !== 10) throw new HttpProtocolError('a chunk is not followed by CRLF');
      this.chunkRemaining = -1;
      this.buffered = buffer.subarray(2);
    }
    this.buffered = undefined;
    return undefined;
  }

  /** Keeps a piece of the body, or throws once the body would pass the limit. */
  private addBody(part: Buffer): void {
    this.bodyBytes += part.length;
    if (this.bodyBytes > this.maxBodyBytes) {
      this.bodyParts.length = 0;
      throw new ResponseTooLargeError(this.maxBodyBytes);
    }
    this.bodyParts.push(part);
  }

  private finish(): ParsedResponse {
    this.done = true;
    const body = this.bodyParts.length === 1 ? this.bodyParts[0]! : Buffer.concat(this.bodyParts);
    return { status: this.status, body, close: this.close };
  }
}

/** Optional whitespace around a header value (RFC 9110, section 5.6.3): spaces and tabs, nothing else. */
function trimOws(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && (text.charCodeAt(start) === 0x20 || text.charCodeAt(start) === 0x09)) start++;
  while (end > start && (text.charCodeAt(end - 1) === 0x20 || text.charCodeAt(end - 1) === 0x09)) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}
