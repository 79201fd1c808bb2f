/**
 * An incremental HTTP/1.1 request parser for the jit-runner. The runner's only
 * clients are the core's sandbox client and probes: requests with a
 * Content-Length body or none. So it reads exactly that, strictly: a request line,
 * header lines of token names and visible values, an optional Content-Length, and
 * that many body bytes. Anything else (a Transfer-Encoding, a folded or malformed
 * line, a head or body over its limit) is an HttpRequestError with the status to
 * answer, after which the connection is closed: no framing is guessed.
 */

export interface ParsedRequest {
  readonly method: string;
  /** The request target as sent, e.g. `/execute`. */
  readonly target: string;
  /** `x-request-id`, when sent once. */
  readonly requestId: string | undefined;
  /** The connection stays open after the answer (HTTP/1.1 without `Connection: close`, or 1.0 with `keep-alive`). */
  readonly keepAlive: boolean;
  readonly body: Buffer;
}

export class HttpRequestError extends Error {
  constructor(
    /** The status to answer with before closing the connection. */
    readonly status: 400 | 413 | 431 | 501 | 505,
    message: string,
  ) {
    super(message);
    this.name = 'HttpRequestError';
  }
}

export interface RequestLimits {
  /** Request line and headers, bytes; past it: 431. */
  readonly maxHeadBytes: number;
  /** Body, bytes; past it: 413. */
  readonly maxBodyBytes: number;
}

const HEAD_END = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^([A-Z]+) ([!-~]+) HTTP\/1\.([0-9])$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible characters, spaces and tabs: no CR, LF or other controls can reach a header value. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const DIGITS = /^[0-9]{1,15}$/;

interface Head {
  method: string;
  target: string;
  requestId: string | undefined;
  keepAlive: boolean;
  bodyLength: number;
}

export class Http1RequestParser {
  /** Bytes not parsed yet, in arrival order; joined only when a head or a whole body is there. */
  private parts: Buffer[] = [];
  private partsLength = 0;
  /** The request whose body is being read, once its head is parsed. */
  private head: Head | undefined;
  private failed: HttpRequestError | undefined;

  constructor(private readonly limits: RequestLimits) {}

  /** Bytes from the connection; parsed by next(). */
  push(chunk: Buffer): void {
    this.parts.push(chunk);
    this.partsLength += chunk.length;
  }

  /**
   * The next complete request, or undefined while more bytes are needed. Throws
   * HttpRequestError, and keeps throwing it: the connection cannot be read further.
   */
  next(): ParsedRequest | undefined {
    if (this.failed) throw this.failed;
    try {
      if (this.head === undefined && !this.parseHead()) return undefined;
      return this.takeBody();
    } catch (error) {
      if (error instanceof HttpRequestError) this.failed = error;
      throw error;
    }
  }

  /** Everything not parsed yet, as one buffer. */
  private joined(): Buffer {
    if (this.parts.length > 1) this.parts = [Buffer.concat(this.parts, this.partsLength)];
    return this.parts[0] ?? Buffer.alloc(0);
  }

  /** Drops the first `count` bytes of what is not parsed yet (joined() first). */
  private consume(count: number): void {
    if (count === 0) return;
    const rest = this.parts[0]!.subarray(count);
    this.parts = rest.length > 0 ? [rest] : [];
    this.partsLength = rest.length;
  }

  private parseHead(): boolean {
    if (this.partsLength === 0) return false;
    // A client may send empty lines between requests (RFC 9112, section 2.2).
    let buffer = this.joined();
    let start = 0;
    while (start + 1 < buffer.length && buffer[start] === 0x0d && buffer[start + 1] === 0x0a) start += 2;
    if (start > 0) {
      this.consume(start);
      buffer = this.joined();
    }
    const end = buffer.indexOf(HEAD_END);
    if (end === -1) {
      if (buffer.length > this.limits.maxHeadBytes) throw new HttpRequestError(431, `the request head is over ${this.limits.maxHeadBytes} bytes`);
      return false;
    }
    if (end + 4 > this.limits.maxHeadBytes) throw new HttpRequestError(431, `the request head is over ${this.limits.maxHeadBytes} bytes`);
    const lines = buffer.toString('latin1', 0, end).split('\r\n');
    this.consume(end + 4);

    const requestLine = REQUEST_LINE.exec(lines[0]!);
    if (!requestLine) throw new HttpRequestError(400, 'the request line is not "METHOD target HTTP/1.x"');
    if (requestLine[3] !== '0' && requestLine[3] !== '1') throw new HttpRequestError(505, `HTTP/1.${requestLine[3]} is not supported`);
    const http10 = requestLine[3] === '0';
    let contentLength: string | undefined;
    let requestId: string | undefined;
    let requestIds = 0;
    let connection = '';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      const name = colon > 0 ? line.slice(0, colon) : '';
      // No whitespace before the colon, no folded continuation lines (RFC 9112, section 5).
      if (!TOKEN.test(name)) throw new HttpRequestError(400, `header line ${i} is malformed`);
      const value = line.slice(colon + 1).replace(/^[ \t]+|[ \t]+$/g, '');
      if (!FIELD_VALUE.test(value)) throw new HttpRequestError(400, `header "${name}" has a control character`);
      switch (name.toLowerCase()) {
        case 'content-length':
          if (!DIGITS.test(value)) throw new HttpRequestError(400, 'content-length is not a number');
          if (contentLength !== undefined && contentLength !== value) throw new HttpRequestError(400, 'content-length is sent twice with different values');
          contentLength = value;
          break;
        case 'transfer-encoding':
          throw new HttpRequestError(501, 'transfer-encoding is not supported; send a content-length');
        case 'connection':
          connection += `,${value.toLowerCase()}`;
          break;
        case 'x-request-id':
          requestIds += 1;
          requestId = value;
          break;
      }
    }
    const tokens = connection.split(',').map((token) => token.trim());
    const bodyLength = contentLength === undefined ? 0 : Number(contentLength);
    if (bodyLength > this.limits.maxBodyBytes) throw new HttpRequestError(413, `the body is over ${this.limits.maxBodyBytes} bytes`);
    this.head = {
      method: requestLine[1]!,
      target: requestLine[2]!,
      requestId: requestIds === 1 ? requestId : undefined,
      keepAlive: http10 ? tokens.includes('keep-alive') : !tokens.includes('close'),
      bodyLength,
    };
    return true;
  }

  private takeBody(): ParsedRequest | undefined {
    const head = this.head!;
    if (this.partsLength < head.bodyLength) return undefined;
    const buffer = this.joined();
    this.head = undefined;
    this.consume(head.bodyLength);
    return {
      method: head.method,
      target: head.target,
      requestId: head.requestId,
      keepAlive: head.keepAlive,
      body: buffer.subarray(0, head.bodyLength),
    };
  }
}
