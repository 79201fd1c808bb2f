/**
 * The head of an HTTP/1.1 answer: status line, the caller's headers (checked:
 * a header name or value that could end a line or start a header of its own is
 * refused), and the framing headers, which only the server writes.
 */

export type HeaderValue = string | number | readonly string[];
export type AnswerHeaders = Readonly<Record<string, HeaderValue>>;

export class HttpHeaderError extends Error {
  constructor(readonly header: string) {
    super(`header "${header}" has an invalid name or value`);
    this.name = 'HttpHeaderError';
  }
}

const REASONS: Readonly<Record<number, string>> = {
  100: 'Continue',
  101: 'Switching Protocols',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  203: 'Non-Authoritative Information',
  204: 'No Content',
  205: 'Reset Content',
  206: 'Partial Content',
  207: 'Multi-Status',
  300: 'Multiple Choices',
  301: 'Moved Permanently',
  302: 'Found',
  303: 'See Other',
  304: 'Not Modified',
  307: 'Temporary Redirect',
  308: 'Permanent Redirect',
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  407: 'Proxy Authentication Required',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  418: "I'm a Teapot",
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  425: 'Too Early',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  451: 'Unavailable For Legal Reasons',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
  507: 'Insufficient Storage',
  508: 'Loop Detected',
  511: 'Network Authentication Required',
};

/** A header name (RFC 9110, section 5.1), for requests and answers alike. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * A header value: Latin-1 without controls (tab excepted), as node:http allows.
 * No CR, LF or other control can end a line or start a header of its own.
 */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
/** Written by the server from the body and the connection's state, never by a caller. */
const FRAMING = new Set(['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'date']);

export function isHeaderName(name: string): boolean {
  return TOKEN.test(name);
}

export function isHeaderValue(value: string): boolean {
  return FIELD_VALUE.test(value);
}

/** Statuses whose answers never carry a body (RFC 9110, sections 6.4.1, 15.3.5, 15.4.5). */
export function bodyless(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

let dateSecond = -1;
let dateText = '';

/** The Date header value, rebuilt once a second. */
export function httpDate(): string {
  const now = Date.now();
  const second = Math.floor(now / 1000);
  if (second !== dateSecond) {
    dateSecond = second;
    dateText = new Date(second * 1000).toUTCString();
  }
  return dateText;
}

export interface HeadFraming {
  /** Body bytes; omitted for bodyless statuses and chunked bodies. */
  readonly contentLength: number;
  /** The body follows in chunks (`transfer-encoding: chunked`); an HTTP/1.0 body is delimited by closing instead. @defaultValue false */
  readonly chunked?: boolean;
  /** No framing header at all: the body ends when the connection does (HTTP/1.0 streams). @defaultValue false */
  readonly untilClose?: boolean;
  /** `connection: close` is sent. */
  readonly close: boolean;
  /** An HTTP/1.0 client that asked to keep the connection is told it is kept. */
  readonly http10KeepAlive: boolean;
}

/** The answer head, ending with the empty line. Throws HttpHeaderError for a header that cannot be sent. */
export function responseHead(status: number, headers: AnswerHeaders | undefined, framing: HeadFraming): string {
  let head = `HTTP/1.1 ${status} ${REASONS[status] ?? 'Unknown'}\r\n`;
  if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name]!;
      if (!TOKEN.test(name) || FRAMING.has(name.toLowerCase())) throw new HttpHeaderError(name);
      if (typeof value === 'string') {
        if (!FIELD_VALUE.test(value)) throw new HttpHeaderError(name);
        head += `${name}: ${value}\r\n`;
      } else if (typeof value === 'number') {
        head += `${name}: ${value}\r\n`;
      } else {
        for (const item of value) {
          if (!FIELD_VALUE.test(item)) throw new HttpHeaderError(name);
          head += `${name}: ${item}\r\n`;
        }
      }
    }
  }
  if (framing.chunked === true) head += 'transfer-encoding: chunked\r\n';
  else if (!bodyless(status) && framing.untilClose !== true) head += `content-length: ${framing.contentLength}\r\n`;
  head += `date: ${httpDate()}\r\n`;
  if (framing.close) head += 'connection: close\r\n';
  else if (framing.http10KeepAlive) head += 'connection: keep-alive\r\n';
  return `${head}\r\n`;
}
