/**
 * The core's HTTP/1.1 framing against node:http's own parser (llhttp), over
 * real sockets: every byte string is sent to both servers, and what each one
 * handed its handler (requests, in order, with method, target, version,
 * headers and body) and whether it refused the rest are compared.
 *
 * The rule: the core never accepts what node:http refuses. Where node:http
 * accepts something the core refuses on purpose, the corpus says so and why
 * (`divergence`); such a case must still diverge (a stale note fails), and
 * even then the core may only be stricter.
 *
 * Three sources of bytes: the corpus in test/fixtures/http1-corpus/ (named
 * cases), every byte value at each place in a request where parsers differ
 * (generated here), and a property-based generator of mutated requests with a
 * fixed seed (request-mutations.ts).
 */
import { readdirSync, readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_HEAD_BYTES } from '../../src/sources/http/ingress-server.js';
import { FramingObserver, type Framing, type SeenRequest } from './framing-observer.js';
import { mutatedRequests } from './request-mutations.js';

/** The ingress's limits: its head limit, and the default UHLP_BODY_LIMIT_BYTES. */
const LIMITS = { maxHeadBytes: MAX_HEAD_BYTES, maxBodyBytes: 1024 * 1024 };
const CORPUS = new URL('../fixtures/http1-corpus/', import.meta.url);
/** Pairs of servers, so that cases run side by side. */
const PARALLEL = 8;
/** Property-based runs: a fixed seed, and few enough runs for about a second. */
const PROPERTY_SEED = 20_240_612;
const PROPERTY_RUNS = 1000;

interface Case {
  readonly name: string;
  readonly bytes: Buffer;
  /** Why the core refuses, on purpose, what node:http accepts. */
  readonly divergence?: string;
}

interface CorpusFile {
  readonly cases: readonly { readonly name: string; readonly request: string; readonly divergence?: string }[];
}

let observers: FramingObserver[] = [];

beforeAll(async () => {
  observers = await Promise.all(Array.from({ length: PARALLEL }, () => FramingObserver.start(LIMITS)));
});

afterAll(async () => {
  await Promise.all(observers.map((observer) => observer.close()));
});

/** Frames every case on both servers, PARALLEL at a time; the problems found, one line each. */
async function problems(cases: readonly Case[]): Promise<string[]> {
  const found: string[] = [];
  let next = 0;
  await Promise.all(
    observers.map(async (observer) => {
      while (next < cases.length) {
        const item = cases[next++]!;
        const { node, core } = await observer.frame(item.bytes);
        const problem = judge(item, node, core);
        if (problem !== undefined) found.push(problem);
      }
    }),
  );
  return found.sort();
}

function judge(item: Case, node: Framing, core: Framing): string | undefined {
  const show = `${item.name} ${JSON.stringify(item.bytes.toString('latin1').slice(0, 160))}\n    node:http ${showFraming(node)}\n    core      ${showFraming(core)}`;
  const looser = looserThanNode(node, core);
  if (looser !== undefined) return `${show}\n    the core ${looser}`;
  const same = sameFraming(node, core);
  if (item.divergence === undefined) return same ? undefined : `${show}\n    the framing differs`;
  if (same) return `${show}\n    declared divergent (${item.divergence}), but the core now frames it as node:http does: drop the note`;
  return undefined;
}

/** Same requests, seen the same, and the same verdict on what followed them (refused or cut short, or not). */
function sameFraming(node: Framing, core: Framing): boolean {
  return JSON.stringify(node.requests) === JSON.stringify(core.requests) && (node.end === 'clean') === (core.end === 'clean');
}

/** How the core accepted more than node:http, if it did. */
function looserThanNode(node: Framing, core: Framing): string | undefined {
  if (core.requests.length > node.requests.length) return `read ${core.requests.length} requests, node:http ${node.requests.length}`;
  for (let i = 0; i < core.requests.length; i++) {
    if (!sameFrame(core.requests[i]!, node.requests[i]!)) return `framed request ${i + 1} otherwise`;
  }
  if (core.requests.length === node.requests.length && node.end !== 'clean' && core.end === 'clean') return 'took bytes node:http refused';
  return undefined;
}

/**
 * What frames a request: method, target, version, body. Headers are compared
 * by sameFraming (a declared divergence may be about a header node:http drops).
 */
function sameFrame(a: SeenRequest, b: SeenRequest): boolean {
  return a.method === b.method && a.target === b.target && a.version === b.version && a.body === b.body;
}

function showFraming(framing: Framing): string {
  const requests = framing.requests.map((request) => `${request.method} ${request.target} ${cut(JSON.stringify(request.headers))} body ${cut(JSON.stringify(request.body))}`);
  return `[${requests.join('; ')}] then ${framing.end}${framing.reason ? ` (${framing.reason})` : ''}`;
}

/** Long enough to tell two framings apart, short enough to read. */
function cut(text: string): string {
  return text.length > 200 ? `${text.slice(0, 100)}...(${text.length} characters)...${text.slice(-60)}` : text;
}

function corpus(): { file: string; cases: Case[] }[] {
  return readdirSync(CORPUS)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const parsed = JSON.parse(readFileSync(new URL(file, CORPUS), 'utf8')) as CorpusFile;
      const cases = parsed.cases.map((item) => {
        // Each character is one byte: the corpus writes bytes as Latin-1 (\u0000 to \u00ff).
        if (/[^\u0000-\u00ff]/.test(item.request)) throw new Error(`${file}: "${item.name}" has a character over \\u00ff`);
        return { name: item.name, bytes: Buffer.from(item.request, 'latin1'), ...(item.divergence ? { divergence: item.divergence } : {}) };
      });
      return { file, cases };
    });
}

const H = 'Host: a\r\n';
const get = (headers = '', line = 'GET / HTTP/1.1'): string => `${line}\r\n${H}${headers}\r\n`;
const chunked = (body: string): string => `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n${body}`;

/** Places in a request where a parser must decide about one byte; each is tried with all 256. */
const BYTE_PLACES: Readonly<Record<string, (byte: string) => string>> = {
  'before the request': (b) => `${b}${get()}`,
  'in the method': (b) => get('', `G${b}ET / HTTP/1.1`),
  'after the method': (b) => get('', `GET${b}/ HTTP/1.1`),
  'in the target': (b) => get('', `GET /a${b}b HTTP/1.1`),
  'after the target': (b) => get('', `GET /${b}HTTP/1.1`),
  'after the version': (b) => get('', `GET / HTTP/1.1${b}`),
  'in a header name': (b) => get(`X${b}Y: 1\r\n`),
  'before a colon': (b) => get(`X${b}: 1\r\n`),
  'leading a value': (b) => get(`X: ${b}1\r\n`),
  'inside a value': (b) => get(`X: 1${b}2\r\n`),
  'trailing a value': (b) => get(`X: 1${b}\r\n`),
  'after Content-Length': (b) => `POST / HTTP/1.1\r\n${H}Content-Length: 1${b}\r\n\r\nx`,
  'after Transfer-Encoding': (b) => `POST / HTTP/1.1\r\n${H}Transfer-Encoding: chunked${b}\r\n\r\n0\r\n\r\n`,
  'after a chunk size': (b) => chunked(`1${b}\r\nx\r\n0\r\n\r\n`),
  'a chunk-extension name': (b) => chunked(`1;${b}\r\nx\r\n0\r\n\r\n`),
  'inside a chunk-extension name': (b) => chunked(`1;a${b}\r\nx\r\n0\r\n\r\n`),
  'a chunk-extension value': (b) => chunked(`1;a=${b}\r\nx\r\n0\r\n\r\n`),
  'a quoted chunk-extension value': (b) => chunked(`1;a="${b}"\r\nx\r\n0\r\n\r\n`),
  'a quoted pair': (b) => chunked(`1;a="\\${b}"\r\nx\r\n0\r\n\r\n`),
  'after a quoted value': (b) => chunked(`1;a="q"${b}\r\nx\r\n0\r\n\r\n`),
  'after chunk data': (b) => chunked(`1\r\nx${b}\r\n0\r\n\r\n`),
  'a trailer name': (b) => chunked(`0\r\nX${b}: 1\r\n\r\n`),
  'a trailer value': (b) => chunked(`0\r\nX: 1${b}2\r\n\r\n`),
  'between requests': (b) => `${get()}${b}${get('', 'GET /2 HTTP/1.1')}`,
};

/** The byte places where node:http accepts bytes the core refuses, and why. */
function byteDivergence(place: string, byte: number): string | undefined {
  // `GET /xHTTP/1.1` has no version: llhttp reads an HTTP/0.9 request for the target `/xHTTP/1.1`.
  if (place === 'after the target' && byte > 0x20 && byte < 0x7f) return 'the core speaks HTTP/1.0 and 1.1 only; llhttp reads HTTP/0.9';
  // `1;=` and `1;a=` : llhttp takes an empty extension name, and an empty value.
  if ((place === 'a chunk-extension name' || place === 'inside a chunk-extension name') && byte === 0x3d) {
    return 'RFC 9112 7.1.1: a chunk-extension name, and a value that is not quoted, is a token of at least one character';
  }
  return undefined;
}

function byteCases(): Case[] {
  const cases: Case[] = [];
  for (const [place, make] of Object.entries(BYTE_PLACES)) {
    for (let byte = 0; byte < 256; byte++) {
      const divergence = byteDivergence(place, byte);
      cases.push({ name: `0x${byte.toString(16).padStart(2, '0')} ${place}`, bytes: Buffer.from(make(String.fromCharCode(byte)), 'latin1'), ...(divergence ? { divergence } : {}) });
    }
  }
  return cases;
}

/** Requests at the edges of the limits, too large to write in the corpus. */
function limitCases(): Case[] {
  const headOf = (size: number): string => {
    // A head of exactly `size` bytes, CRLFCRLF included.
    const fixed = get('X: \r\n').length;
    return get(`X: ${'a'.repeat(size - fixed)}\r\n`);
  };
  const extension = (length: number): string => `;a=${'b'.repeat(length - 3)}`;
  const extensionsDivergence = 'node:http allows 16 KiB of chunk extensions per chunk; the core allows 4 KiB per chunk-size line and 16 KiB per request, so that what it reads is bounded by the request, not by its number of chunks';
  const headDivergence = "the core counts every byte of the head against its limit; node:http counts only the target, header names and values, so it takes a head a few bytes longer";
  return [
    { name: 'a head of exactly the limit', bytes: Buffer.from(headOf(LIMITS.maxHeadBytes), 'latin1') },
    { name: 'a head one byte over the limit', bytes: Buffer.from(headOf(LIMITS.maxHeadBytes + 1), 'latin1'), divergence: headDivergence },
    { name: 'a head 32 bytes over the limit', bytes: Buffer.from(headOf(LIMITS.maxHeadBytes + 32), 'latin1') },
    { name: 'a target as long as the limit', bytes: Buffer.from(get('', `GET /${'a'.repeat(LIMITS.maxHeadBytes)} HTTP/1.1`), 'latin1') },
    // Host and 999 more: node:http takes 1000 header lines, and refuses a request with more.
    { name: '1000 header lines', bytes: Buffer.from(get(Array.from({ length: 999 }, (_, i) => `X-${i}: ${i}\r\n`).join('')), 'latin1') },
    { name: '1001 header lines', bytes: Buffer.from(get(Array.from({ length: 1000 }, (_, i) => `X-${i}: ${i}\r\n`).join('')), 'latin1') },
    {
      name: 'chunk extensions of 12 KiB in three chunks',
      bytes: Buffer.from(chunked(`1${extension(4000)}\r\nx\r\n1${extension(4000)}\r\ny\r\n1${extension(4000)}\r\nz\r\n0\r\n\r\n`), 'latin1'),
    },
    {
      name: 'chunk extensions of 20 KiB in five chunks',
      bytes: Buffer.from(chunked(`${`1${extension(4000)}\r\nx\r\n`.repeat(5)}0\r\n\r\n`), 'latin1'),
      divergence: extensionsDivergence,
    },
    {
      name: 'chunk extensions of 16 KiB and a little more',
      bytes: Buffer.from(chunked(`${`1${extension(4095)}\r\nx\r\n`.repeat(4)}1;c=ddddddd\r\nx\r\n0\r\n\r\n`), 'latin1'),
      divergence: extensionsDivergence,
    },
    { name: 'a chunk-size line of 5000 zeros', bytes: Buffer.from(chunked(`${'0'.repeat(5000)}1\r\nx\r\n0\r\n\r\n`), 'latin1'), divergence: 'the core reads at most 4 KiB of a chunk-size line; llhttp reads any number of leading zeros' },
    // node:http counts trailers afresh, apart from the head; so does the core.
    { name: 'a head near the limit, then trailers', bytes: Buffer.from(chunked(`1\r\nx\r\n0\r\nY: ${'t'.repeat(2000)}\r\n\r\n`).replace(H, `${H}X: ${'a'.repeat(15_000)}\r\n`), 'latin1') },
    { name: 'a trailer just under the limit', bytes: Buffer.from(chunked(`0\r\nY: ${'t'.repeat(LIMITS.maxHeadBytes - 100)}\r\n\r\n`), 'latin1') },
    { name: 'a trailer over the limit', bytes: Buffer.from(chunked(`0\r\nY: ${'t'.repeat(LIMITS.maxHeadBytes)}\r\n\r\n`), 'latin1') },
    { name: 'a trailer section over the limit', bytes: Buffer.from(chunked(`0\r\n${Array.from({ length: 400 }, (_, i) => `X-${i}: ${'t'.repeat(40)}\r\n`).join('')}\r\n`), 'latin1') },
    { name: 'a body of exactly the limit', bytes: Buffer.from(`POST / HTTP/1.1\r\n${H}Content-Length: ${LIMITS.maxBodyBytes}\r\n\r\n${'b'.repeat(LIMITS.maxBodyBytes)}`, 'latin1') },
    {
      name: 'a body one byte over the limit',
      bytes: Buffer.from(`POST / HTTP/1.1\r\n${H}Content-Length: ${LIMITS.maxBodyBytes + 1}\r\n\r\n${'b'.repeat(LIMITS.maxBodyBytes + 1)}`, 'latin1'),
      divergence: 'the core refuses a body over its limit (413); node:http has no body limit',
    },
    {
      name: 'a chunked body one byte over the limit',
      bytes: Buffer.from(chunked(`${LIMITS.maxBodyBytes.toString(16)}\r\n${'b'.repeat(LIMITS.maxBodyBytes)}\r\n1\r\nb\r\n0\r\n\r\n`), 'latin1'),
      divergence: 'the core refuses a body over its limit (413); node:http has no body limit',
    },
  ];
}

describe('request framing: the core against node:http', () => {
  for (const { file, cases } of corpus()) {
    it(`frames the corpus ${file} (${cases.length} cases) as node:http does, or more strictly where it says why`, async () => {
      expect(await problems(cases)).toEqual([]);
    });
  }

  it('frames every byte value, at each place in a request where parsers differ, as node:http does', async () => {
    const cases = byteCases();
    expect(cases.length).toBe(Object.keys(BYTE_PLACES).length * 256);
    expect(await problems(cases)).toEqual([]);
  });

  it('keeps within the limits node:http keeps within', async () => {
    expect(await problems(limitCases())).toEqual([]);
  });

  it('never accepts what node:http refuses, for mutated valid requests (property, fixed seed)', async () => {
    const [observer] = observers;
    await fc.assert(
      fc.asyncProperty(mutatedRequests, async (generated) => {
        const { node, core } = await observer!.frame(generated.bytes);
        const looser = looserThanNode(node, core);
        // Where both took a request, they saw the same request, headers included.
        const seenOtherwise = core.requests.findIndex((request, i) => JSON.stringify(request) !== JSON.stringify(node.requests[i]));
        if (looser !== undefined || seenOtherwise !== -1) {
          const what = looser ?? `saw request ${seenOtherwise + 1} otherwise`;
          throw new Error(
            `the core ${what}\n  bytes ${JSON.stringify(generated.bytes.toString('latin1'))}\n  mutations ${generated.mutations.map((m) => m.kind).join(', ') || 'none'}\n  node:http ${showFraming(node)}\n  core      ${showFraming(core)}`,
          );
        }
      }),
      { seed: PROPERTY_SEED, numRuns: PROPERTY_RUNS },
    );
  });
});
