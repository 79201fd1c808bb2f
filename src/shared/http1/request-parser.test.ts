import { describe, expect, it } from 'vitest';
import { Http1RequestParser, HttpRequestError } from './request-parser.js';

const LIMITS = { maxHeadBytes: 256, maxBodyBytes: 1024 };
const parserWith = (...parts: string[]): Http1RequestParser => {
  const parser = new Http1RequestParser(LIMITS);
  for (const part of parts) parser.push(Buffer.from(part, 'latin1'));
  return parser;
};
const failure = (...parts: string[]): { status: number; message: string; field?: string } => {
  try {
    parserWith(...parts).next();
  } catch (error) {
    if (error instanceof HttpRequestError) return { status: error.status, message: error.message, ...(error.field ? { field: error.field } : {}) };
    throw error;
  }
  throw new Error('no error');
};

const EXECUTE = 'POST /execute HTTP/1.1\r\nhost: sandbox\r\nx-request-id: r-1\r\ncontent-length: 11\r\n\r\n{"ok":true}';
const CHUNKED = 'POST /up?x=1 HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: t\r\n\r\n';

describe('Http1RequestParser', () => {
  it('reads a request split at any byte', () => {
    for (let cut = 1; cut < EXECUTE.length; cut++) {
      const parser = parserWith(EXECUTE.slice(0, cut));
      expect(parser.next()).toBeUndefined();
      parser.push(Buffer.from(EXECUTE.slice(cut), 'latin1'));
      expect(parser.next()).toEqual({
        method: 'POST',
        target: '/execute',
        path: '/execute',
        query: '',
        http10: false,
        headers: { host: 'sandbox', 'x-request-id': 'r-1', 'content-length': '11' },
        keepAlive: true,
        expectContinue: false,
        bodyLength: 11,
        body: Buffer.from('{"ok":true}'),
      });
      expect(parser.next()).toBeUndefined();
    }
  });

  it('reads a chunked body split at any byte, extensions and trailers dropped', () => {
    for (let cut = 1; cut < CHUNKED.length; cut++) {
      const parser = parserWith(CHUNKED.slice(0, cut));
      expect(parser.next()).toBeUndefined();
      parser.push(Buffer.from(CHUNKED.slice(cut), 'latin1'));
      const request = parser.next();
      expect(request).toMatchObject({ path: '/up', query: 'x=1', bodyLength: 'chunked' });
      expect(request?.body.toString()).toBe('hello world');
      expect(parser.next()).toBeUndefined();
    }
  });

  it('reads pipelined requests in order, blank lines between them skipped', () => {
    const parser = parserWith(`${EXECUTE}\r\nGET /healthz HTTP/1.1\r\nhost: s\r\n\r\n${CHUNKED}${EXECUTE}`);
    expect(parser.next()).toMatchObject({ method: 'POST', body: Buffer.from('{"ok":true}') });
    expect(parser.next()).toMatchObject({ method: 'GET', target: '/healthz', body: Buffer.alloc(0) });
    expect(parser.next()?.body.toString()).toBe('hello world');
    expect(parser.next()).toMatchObject({ method: 'POST', headers: { 'x-request-id': 'r-1' } });
    expect(parser.next()).toBeUndefined();
  });

  it('joins a body sent in many small chunks, whole', () => {
    const body = 'x'.repeat(1000);
    const parser = parserWith(`POST /execute HTTP/1.1\r\nhost: s\r\ncontent-length: ${body.length}\r\n\r\n`);
    for (let i = 0; i < body.length; i += 7) {
      expect(parser.next()).toBeUndefined();
      parser.push(Buffer.from(body.slice(i, i + 7)));
    }
    expect(parser.next()?.body.toString()).toBe(body);
  });

  it('shows a head before its body has arrived', () => {
    const parser = parserWith('POST /mcp HTTP/1.1\r\nhost: s\r\ncontent-length: 4\r\n\r\nab');
    expect(parser.head()).toMatchObject({ method: 'POST', path: '/mcp', bodyLength: 4 });
    expect(parser.next()).toBeUndefined();
    expect(parser.head()).toMatchObject({ path: '/mcp' });
    parser.push(Buffer.from('cdGET / HTTP/1.1\r\n'));
    expect(parser.next()).toMatchObject({ path: '/mcp', body: Buffer.from('abcd') });
    expect(parser.next()).toBeUndefined();
  });

  it('keeps HTTP/1.1 connections alive unless told to close, and HTTP/1.0 ones only when asked', () => {
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nConnection: close\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nConnection: upgrade, Close\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.0\r\n\r\n').next()).toMatchObject({ keepAlive: false, http10: true });
    expect(parserWith('GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n').next()?.keepAlive).toBe(true);
  });

  it('joins repeated headers as node:http does: lists with commas, cookies with semicolons, single-valued ones first wins', () => {
    const request = parserWith('GET / HTTP/1.1\r\nHost: s\r\nX-A: \t 1 \r\nx-a: 2\r\nCookie: a=1\r\ncookie: b=2\r\nuser-agent: one\r\nUser-Agent: two\r\n\r\n').next();
    expect(request?.headers).toEqual({ host: 's', 'x-a': '1, 2', cookie: 'a=1; b=2', 'user-agent': 'one' });
  });

  it('splits the target into path and query, and reduces an absolute-form target to its path', () => {
    expect(parserWith('GET /a/b?x=1&y=2 HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ path: '/a/b', query: 'x=1&y=2' });
    expect(parserWith('GET /a#frag HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ path: '/a', query: '' });
    expect(parserWith('GET http://example.com:8080/a?q HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ path: '/a', query: 'q' });
    expect(parserWith('GET http://example.com HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ path: '/', query: '' });
    expect(parserWith('OPTIONS * HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ path: '*' });
  });

  it('tells when the client waits for 100 Continue', () => {
    const parser = parserWith('POST / HTTP/1.1\r\nhost: s\r\nexpect: 100-Continue\r\ncontent-length: 3\r\n\r\n');
    expect(parser.head()?.expectContinue).toBe(true);
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nexpect: 100-continue\r\n\r\n').head()?.expectContinue).toBe(false);
  });

  it('refuses what it cannot frame or trust, naming the part at fault', () => {
    expect(failure('GET /\r\n\r\n')).toMatchObject({ status: 400, field: 'request-line' });
    expect(failure('get / HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / x HTTP/1.1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET x HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, field: 'request-line' });
    expect(failure('GET / HTTP/1.2\r\n\r\n')).toMatchObject({ status: 505 });
    expect(failure('GET / HTTP/2.0\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\n\r\n')).toMatchObject({ status: 400, field: 'host' });
    expect(failure('GET / HTTP/1.1\r\nhost: a\r\nhost: b\r\n\r\n')).toMatchObject({ status: 400, field: 'host' });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: gzip, chunked\r\n\r\n')).toMatchObject({ status: 501, field: 'transfer-encoding' });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\ncontent-length: 3\r\n\r\n')).toMatchObject({ status: 400, field: 'transfer-encoding' });
    expect(failure('POST / HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n2\r\nabc\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab')).toMatchObject({ status: 400, field: 'content-length' });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: -1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1, 1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\nexpect: 200-ok\r\n\r\n')).toMatchObject({ status: 417, field: 'expect' });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: 1\r\n folded\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a : 1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nnocolon\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-request-id: a\rb\r\n\r\n')).toMatchObject({ status: 400, field: 'x-request-id' });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-request-id: a\nx-b: c\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: \u0000\r\n\r\n')).toMatchObject({ status: 400 });
  });

  it('bounds the head, the body, chunked bodies and trailers', () => {
    expect(failure(`GET / HTTP/1.1\r\nx-a: ${'a'.repeat(300)}`)).toMatchObject({ status: 431 });
    expect(failure(`GET / HTTP/1.1\r\nx-a: ${'a'.repeat(300)}\r\n\r\n`)).toMatchObject({ status: 431 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1025\r\n\r\n')).toMatchObject({ status: 413, field: 'body' });
    expect(parserWith('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1024\r\n\r\n', 'y'.repeat(1024)).next()?.body.length).toBe(1024);
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n400\r\n', 'y'.repeat(1024), '\r\n1\r\n')).toMatchObject({ status: 413 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n0\r\n', `x-t: ${'t'.repeat(300)}\r\n`)).toMatchObject({ status: 431 });
  });

  it("bounds the body of a path with a limit of its own by that limit, and every other path's by maxBodyBytes", () => {
    const limits = { ...LIMITS, bodyLimitsByPath: new Map([['/mcp', 4096]]) };
    const parse = (...parts: string[]): Http1RequestParser => {
      const parser = new Http1RequestParser(limits);
      for (const part of parts) parser.push(Buffer.from(part, 'latin1'));
      return parser;
    };
    const status = (...parts: string[]): number | undefined => {
      try {
        parse(...parts).next();
        return undefined;
      } catch (error) {
        return (error as HttpRequestError).status;
      }
    };
    expect(parse('POST /mcp?x=1 HTTP/1.1\r\nhost: s\r\ncontent-length: 4096\r\n\r\n', 'y'.repeat(4096)).next()?.body.length).toBe(4096);
    expect(parse('POST /mcp HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n1000\r\n', 'y'.repeat(4096), '\r\n0\r\n\r\n').next()?.body.length).toBe(4096);
    expect(status('POST /mcp HTTP/1.1\r\nhost: s\r\ncontent-length: 4097\r\n\r\n')).toBe(413);
    expect(status('POST /mcp HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n1001\r\n')).toBe(413);
    expect(status('POST /mcp HTTP/1.1\r\nhost: s\r\ncontent-length: 99999999999999999999999\r\n\r\n')).toBe(413);
    // Not the endpoint's path: the ordinary limit, whatever the path starts with.
    expect(status('POST /mcp/x HTTP/1.1\r\nhost: s\r\ncontent-length: 1025\r\n\r\n')).toBe(413);
    expect(status('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n401\r\n')).toBe(413);
    const after = parse('POST /mcp HTTP/1.1\r\nhost: s\r\ncontent-length: 2000\r\n\r\n', 'y'.repeat(2000), 'POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 2000\r\n\r\n');
    expect(after.next()?.body.length).toBe(2000);
    expect(() => after.next()).toThrow(expect.objectContaining({ status: 413 }));
  });

  it('trims spaces and tabs around a value, and nothing else: a VT, FF or NBSP is refused or kept', () => {
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nx-a: \t 1 2\t \r\n\r\n').next()?.headers['x-a']).toBe('1 2');
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nx-a: 1\xa0\r\n\r\n').next()?.headers['x-a']).toBe('1\xa0');
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: \x0b1\r\n\r\n')).toMatchObject({ status: 400, field: 'x-a' });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: 1\x0c\r\n\r\n')).toMatchObject({ status: 400, field: 'x-a' });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: 1\r\r\n\r\n')).toMatchObject({ status: 400, field: 'x-a' });
    expect(failure('GET / HTTP/1.1\r\nhost: s\r\nx-a: 1\x7f\r\n\r\n')).toMatchObject({ status: 400, field: 'x-a' });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1\x0b\r\n\r\nx')).toMatchObject({ status: 400, field: 'content-length' });
  });

  it("takes node:http's methods only, and no CONNECT", () => {
    expect(parserWith('M-SEARCH / HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ method: 'M-SEARCH' });
    expect(parserWith('PROPFIND /a HTTP/1.1\r\nhost: s\r\n\r\n').next()).toMatchObject({ method: 'PROPFIND' });
    expect(failure('FOO / HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, message: '"FOO" is not an HTTP method' });
    expect(failure('CONNECT / HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, message: 'CONNECT is not supported' });
    expect(failure('GET  / HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, field: 'request-line' });
    expect(failure('GET / HTTP/1.1 \r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, field: 'request-line' });
    expect(failure('GET /\x80 HTTP/1.1\r\nhost: s\r\n\r\n')).toMatchObject({ status: 400, field: 'request-line' });
  });

  it('refuses Content-Length sent twice, even with one value, and one over the body limit however many digits it has', () => {
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1\r\ncontent-length: 1\r\n\r\nx')).toMatchObject({ status: 400, field: 'content-length' });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 99999999999999999999999\r\n\r\n')).toMatchObject({ status: 413, field: 'body' });
    // Whitespace around the digits is spaces and tabs, as llhttp of Node 24 reads it.
    expect(parserWith('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1\t\r\n\r\nx').next()?.body.toString()).toBe('x');
    expect(parserWith('POST / HTTP/1.1\r\nhost: s\r\ncontent-length:\t0001 \r\n\r\nx').next()?.body.toString()).toBe('x');
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ncontent-length: 1\t1\r\n\r\nx')).toMatchObject({ status: 400, field: 'content-length' });
  });

  it('takes chunked alone and once: no other coding, no list, no second header, no tab after it', () => {
    for (const coding of ['chunked, chunked', 'gzip, chunked', ',chunked', 'chunked\t', '']) {
      expect(failure(`POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: ${coding}\r\n\r\n0\r\n\r\n`)).toMatchObject({ status: 501 });
    }
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n')).toMatchObject({ status: 501 });
    expect(parserWith('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding:\tCHUNKED  \r\n\r\n0\r\n\r\n').next()?.bodyLength).toBe('chunked');
  });

  it('reads chunk sizes and extensions as RFC 9112 and llhttp both do', () => {
    const body = (line: string): Buffer | undefined => parserWith(`POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n${line}\r\nhello\r\n0\r\n\r\n`).next()?.body;
    for (const line of ['5', '0005', `${'0'.repeat(40)}5`, '5;a', '5;a=b', '5;a="b c"', '5;a="b\\"c"', '5;a=""', '5;a;b=c']) expect(body(line)?.toString()).toBe('hello');
    for (const line of ['+5', '0x5', ' 5', '5 ', '5\t', '5;', '5; a', '5 ;a', '5;a =b', '5;a= b', '5;a=b;', '5;=b', '5;a=', '5;a="b', '5;a="b"c', '5;a\rb', '5\rhello']) {
      expect(() => body(line), line).toThrow(HttpRequestError);
    }
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\n0\r\n\r\n')).toMatchObject({ status: 400, message: 'a chunk is not followed by CRLF' });
    // Refused at the first byte that is not the CRLF after the data, before the rest arrives.
    expect(failure('POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhelloX')).toMatchObject({ status: 400 });
  });

  it('refuses framing and connection trailers', () => {
    for (const trailer of ['content-length: 5', 'Transfer-Encoding: chunked', 'connection: close', 'x-t : 1', 'x-t: \x00', ' folded']) {
      expect(failure(`POST / HTTP/1.1\r\nhost: s\r\ntransfer-encoding: chunked\r\n\r\n0\r\n${trailer}\r\n\r\n`), trailer).toMatchObject({ status: 400 });
    }
  });

  it('reads no request after an upgrade it does not take', () => {
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nconnection: x, Upgrade\r\nupgrade: websocket\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nconnection: upgrade\r\nupgrade:\r\n\r\n').next()?.keepAlive).toBe(true);
    expect(parserWith('GET / HTTP/1.1\r\nhost: s\r\nupgrade: websocket\r\n\r\n').next()?.keepAlive).toBe(true);
  });

  it('refuses more header lines than node:http hands its handler', () => {
    const lines = (n: number): string => Array.from({ length: n }, (_, i) => `x-${i}: ${i}\r\n`).join('');
    const limits = { maxHeadBytes: 64 * 1024, maxBodyBytes: 0 };
    const parse = (n: number): Http1RequestParser => {
      const parser = new Http1RequestParser(limits);
      parser.push(Buffer.from(`GET / HTTP/1.1\r\nhost: s\r\n${lines(n)}\r\n`));
      return parser;
    };
    expect(Object.keys(parse(999).next()!.headers)).toHaveLength(1000);
    expect(() => parse(1000).next()).toThrow(expect.objectContaining({ status: 431 }));
  });

  it('keeps failing once a request could not be read', () => {
    const parser = parserWith('BROKEN\r\n\r\n');
    expect(() => parser.next()).toThrow(HttpRequestError);
    parser.push(Buffer.from('GET / HTTP/1.1\r\nhost: s\r\n\r\n'));
    expect(() => parser.next()).toThrow(HttpRequestError);
    expect(() => parser.head()).toThrow(HttpRequestError);
  });
});
