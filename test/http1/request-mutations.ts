/**
 * A fast-check generator of HTTP/1.1 request bytes: valid requests (one to
 * three, pipelined; bodies by Content-Length or chunked, with extensions and
 * trailers), then up to three mutations of the kinds that make parsers
 * disagree: a control byte inserted, a CRLF turned into LF or CR, a framing
 * header added or repeated, a chunk size perturbed, a line folded, bytes
 * dropped or copied elsewhere.
 */
import fc from 'fast-check';

const TOKEN_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.!#$%&'*+^`|~";
const PATH_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-._~%!$&'()*+,;=:@/?";
const VALUE_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789 \t-_.,;=:/"()';

/** Bytes that parsers treat differently: controls, whitespace, separators, obs-text. */
const TRICKY_BYTES = [0x00, 0x01, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1f, 0x20, 0x22, 0x2c, 0x3a, 0x3b, 0x3d, 0x5c, 0x7f, 0x80, 0xa0, 0xff];

/** Header lines that change framing or the connection, inserted among the others. */
const FRAMING_LINES = [
  'Content-Length: 0',
  'Content-Length: 3',
  'Content-Length: 3, 3',
  'Content-Length : 3',
  'content-length:3 ',
  'Transfer-Encoding: chunked',
  'Transfer-Encoding: Chunked ',
  'Transfer-Encoding: gzip',
  'Transfer-Encoding: chunked, gzip',
  'Transfer-Encoding:\tchunked',
  'Host: b',
  'Connection: close',
  'Connection: keep-alive',
  'Connection: Upgrade',
  'Upgrade: websocket',
  'Expect: 100-continue',
  ' folded',
  '\tfolded',
  'X-Empty:',
];

const CHUNK_SIZE_VARIANTS: readonly ((hex: string) => string)[] = [
  (hex) => `+${hex}`,
  (hex) => `-${hex}`,
  (hex) => `0x${hex}`,
  (hex) => ` ${hex}`,
  (hex) => `${hex} `,
  (hex) => `${hex}\t`,
  (hex) => `00${hex}`,
  (hex) => hex.toUpperCase(),
  (hex) => (Number.parseInt(hex, 16) + 1).toString(16),
  (hex) => (Number.parseInt(hex, 16) - 1).toString(16),
  () => 'ffffffffffffffffff',
  () => '',
  (hex) => `${hex};`,
  (hex) => `${hex}; a=b`,
  (hex) => `${hex};a="b`,
];

interface RequestModel {
  readonly method: string;
  readonly path: string;
  readonly http10: boolean;
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
  readonly framing: 'length' | 'chunked' | 'none';
  /** Where the chunked body is cut into chunks (fractions of its length). */
  readonly cuts: readonly number[];
  readonly extension: string;
  readonly trailers: readonly (readonly [string, string])[];
}

const token = fc.string({ unit: fc.constantFrom(...TOKEN_CHARS), minLength: 1, maxLength: 10 });
const value = fc.string({ unit: fc.constantFrom(...VALUE_CHARS), maxLength: 16 });
const header = fc.tuple(token, value);

const request: fc.Arbitrary<RequestModel> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH'),
  path: fc.string({ unit: fc.constantFrom(...PATH_CHARS), maxLength: 20 }).map((path) => `/${path}`),
  http10: fc.boolean(),
  headers: fc.array(header, { maxLength: 4 }),
  body: fc.string({ unit: fc.constantFrom(...'abcxyz\r\n0123456789'), maxLength: 24 }),
  framing: fc.constantFrom('length', 'chunked', 'none'),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
  extension: fc.constantFrom('', ';a', ';a=b', ';a="b c"', ';x=1;y'),
  trailers: fc.array(header, { maxLength: 2 }),
});

function serialize(model: RequestModel): string {
  const http10 = model.http10 && model.framing !== 'chunked';
  let head = `${model.method} ${model.path} HTTP/1.${http10 ? 0 : 1}\r\nHost: a\r\n`;
  for (const [name, text] of model.headers) head += `${name}: ${text}\r\n`;
  if (model.framing === 'length') return `${head}Content-Length: ${model.body.length}\r\n\r\n${model.body}`;
  if (model.framing === 'none') return `${head}\r\n`;
  const cuts = [...new Set(model.cuts.map((cut) => Math.floor(cut * model.body.length)))].filter((cut) => cut > 0).sort((a, b) => a - b);
  let body = '';
  let from = 0;
  for (const cut of [...cuts, model.body.length]) {
    if (cut > from) body += `${(cut - from).toString(16)}${model.extension}\r\n${model.body.slice(from, cut)}\r\n`;
    from = cut;
  }
  body += '0\r\n';
  for (const [name, text] of model.trailers) body += `${name}: ${text}\r\n`;
  return `${head}Transfer-Encoding: chunked\r\n\r\n${body}\r\n`;
}

type Mutation = { readonly kind: string; apply(text: string): string };

/** The `n`th (modulo their count) offset of `needle` in `text`, or -1. */
function nth(text: string, needle: string, n: number): number {
  const offsets: number[] = [];
  for (let at = text.indexOf(needle); at !== -1; at = text.indexOf(needle, at + 1)) offsets.push(at);
  return offsets.length === 0 ? -1 : offsets[n % offsets.length]!;
}

function replaceAt(text: string, at: number, length: number, by: string): string {
  return at === -1 ? text : text.slice(0, at) + by + text.slice(at + length);
}

const byte = fc.oneof(fc.constantFrom(...TRICKY_BYTES), fc.integer({ min: 0, max: 255 })).map((code) => String.fromCharCode(code));
const where = fc.nat();

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.tuple(where, byte).map(([at, b]) => ({ kind: `insert ${JSON.stringify(b)} at ${at}`, apply: (t: string) => replaceAt(t, at % (t.length + 1), 0, b) })),
  fc.tuple(where, byte).map(([at, b]) => ({ kind: `replace byte ${at} by ${JSON.stringify(b)}`, apply: (t: string) => replaceAt(t, at % t.length, 1, b) })),
  where.map((at) => ({ kind: `delete byte ${at}`, apply: (t: string) => replaceAt(t, at % t.length, 1, '') })),
  fc.tuple(where, fc.constantFrom('\n', '\r', '\r\r\n', '\n\r', ' \r\n', '\r\n ')).map(([n, by]) => ({
    kind: `CRLF ${n} becomes ${JSON.stringify(by)}`,
    apply: (t: string) => replaceAt(t, nth(t, '\r\n', n), 2, by),
  })),
  fc.tuple(where, fc.constantFrom(...FRAMING_LINES)).map(([n, line]) => ({
    kind: `line ${JSON.stringify(line)} after CRLF ${n}`,
    // After a CRLF of the head (the first request's), so that it lands among the header lines.
    apply: (t: string) => {
      const headEnd = t.indexOf('\r\n\r\n');
      const at = nth(t.slice(0, headEnd === -1 ? t.length : headEnd + 2), '\r\n', n);
      return replaceAt(t, at === -1 ? -1 : at + 2, 0, `${line}\r\n`);
    },
  })),
  fc.tuple(where, fc.nat({ max: CHUNK_SIZE_VARIANTS.length - 1 })).map(([n, variant]) => ({
    kind: `chunk size ${n} by variant ${variant}`,
    apply: (t: string) => {
      const body = t.indexOf('\r\n\r\n');
      const sizes = [...t.slice(body + 4).matchAll(/(?:^|\r\n)([0-9a-f]+)(?=[;\r])/g)];
      if (body === -1 || sizes.length === 0) return t;
      const size = sizes[n % sizes.length]!;
      const at = body + 4 + size.index + size[0].length - size[1]!.length;
      return replaceAt(t, at, size[1]!.length, CHUNK_SIZE_VARIANTS[variant]!(size[1]!));
    },
  })),
  fc.tuple(where, where, fc.integer({ min: 1, max: 40 })).map(([from, to, length]) => ({
    kind: `copy ${length} bytes from ${from} to ${to}`,
    apply: (t: string) => {
      const start = from % t.length;
      return replaceAt(t, to % (t.length + 1), 0, t.slice(start, start + length));
    },
  })),
);

export interface GeneratedCase {
  readonly requests: readonly RequestModel[];
  readonly mutations: readonly Mutation[];
  readonly bytes: Buffer;
}

/** Requests, pipelined, then mutated; `bytes` is what is sent. */
export const mutatedRequests: fc.Arbitrary<GeneratedCase> = fc
  .tuple(fc.array(request, { minLength: 1, maxLength: 3 }), fc.array(mutation, { maxLength: 3 }))
  .map(([requests, mutations]) => {
    let text = requests.map(serialize).join('');
    for (const m of mutations) text = m.apply(text);
    return { requests, mutations, bytes: Buffer.from(text, 'latin1') };
  });
