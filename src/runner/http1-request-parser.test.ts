import { describe, expect, it } from 'vitest';
import { Http1RequestParser, HttpRequestError } from './http1-request-parser.js';

const LIMITS = { maxHeadBytes: 256, maxBodyBytes: 1024 };
const parserWith = (...parts: string[]): Http1RequestParser => {
  const parser = new Http1RequestParser(LIMITS);
  for (const part of parts) parser.push(Buffer.from(part, 'latin1'));
  return parser;
};
const failure = (...parts: string[]): { status: number; message: string } => {
  try {
    parserWith(...parts).next();
  } catch (error) {
    if (error instanceof HttpRequestError) return { status: error.status, message: error.message };
    throw error;
  }
  throw new Error('no error');
};

const EXECUTE = 'POST /execute HTTP/1.1\r\nhost: sandbox\r\nx-request-id: r-1\r\ncontent-length: 11\r\n\r\n{"ok":true}';

describe('Http1RequestParser', () => {
  it('reads a request split at any byte', () => {
    for (let cut = 1; cut < EXECUTE.length; cut++) {
      const parser = parserWith(EXECUTE.slice(0, cut));
      expect(parser.next()).toBeUndefined();
      parser.push(Buffer.from(EXECUTE.slice(cut), 'latin1'));
      expect(parser.next()).toEqual({ method: 'POST', target: '/execute', requestId: 'r-1', keepAlive: true, body: Buffer.from('{"ok":true}') });
      expect(parser.next()).toBeUndefined();
    }
  });

  it('reads pipelined requests in order, blank lines between them skipped', () => {
    const parser = parserWith(`${EXECUTE}\r\nGET /healthz HTTP/1.1\r\n\r\n${EXECUTE}`);
    expect(parser.next()).toMatchObject({ method: 'POST', body: Buffer.from('{"ok":true}') });
    expect(parser.next()).toEqual({ method: 'GET', target: '/healthz', requestId: undefined, keepAlive: true, body: Buffer.alloc(0) });
    expect(parser.next()).toMatchObject({ method: 'POST', requestId: 'r-1' });
    expect(parser.next()).toBeUndefined();
  });

  it('joins a body sent in many small chunks once, whole', () => {
    const body = 'x'.repeat(1000);
    const parser = parserWith(`POST /execute HTTP/1.1\r\ncontent-length: ${body.length}\r\n\r\n`);
    for (let i = 0; i < body.length; i += 7) {
      expect(parser.next()).toBeUndefined();
      parser.push(Buffer.from(body.slice(i, i + 7)));
    }
    expect(parser.next()?.body.toString()).toBe(body);
  });

  it('keeps HTTP/1.1 connections alive unless told to close, and HTTP/1.0 ones only when asked', () => {
    expect(parserWith('GET / HTTP/1.1\r\nConnection: close\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.1\r\nConnection: upgrade, Close\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.0\r\n\r\n').next()?.keepAlive).toBe(false);
    expect(parserWith('GET / HTTP/1.0\r\nconnection: keep-alive\r\n\r\n').next()?.keepAlive).toBe(true);
  });

  it('takes a request id sent once, trimmed, and none when it is sent twice', () => {
    expect(parserWith('GET / HTTP/1.1\r\nX-Request-ID: \t abc \r\n\r\n').next()?.requestId).toBe('abc');
    expect(parserWith('GET / HTTP/1.1\r\nx-request-id: a\r\nx-request-id: b\r\n\r\n').next()?.requestId).toBeUndefined();
  });

  it('refuses what it cannot frame or trust', () => {
    expect(failure('GET /\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('get / HTTP/1.1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / x HTTP/1.1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.2\r\n\r\n')).toMatchObject({ status: 505 });
    expect(failure('GET / HTTP/2.0\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n')).toMatchObject({ status: 501 });
    expect(failure('POST / HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\nab')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\ncontent-length: -1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('POST / HTTP/1.1\r\ncontent-length: 1, 1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nx-a: 1\r\n folded\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nx-a : 1\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nnocolon\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nx-request-id: a\rb\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nx-request-id: a\nx-b: c\r\n\r\n')).toMatchObject({ status: 400 });
    expect(failure('GET / HTTP/1.1\r\nx-a: \u0000\r\n\r\n')).toMatchObject({ status: 400 });
  });

  it('bounds the head and the body', () => {
    expect(failure(`GET / HTTP/1.1\r\nx-a: ${'a'.repeat(300)}`)).toMatchObject({ status: 431 });
    expect(failure(`GET / HTTP/1.1\r\nx-a: ${'a'.repeat(300)}\r\n\r\n`)).toMatchObject({ status: 431 });
    expect(failure('POST / HTTP/1.1\r\ncontent-length: 1025\r\n\r\n')).toMatchObject({ status: 413 });
    expect(parserWith('POST / HTTP/1.1\r\ncontent-length: 1024\r\n\r\n', 'y'.repeat(1024)).next()?.body.length).toBe(1024);
  });

  it('keeps failing once a request could not be read', () => {
    const parser = parserWith('BROKEN\r\n\r\n');
    expect(() => parser.next()).toThrow(HttpRequestError);
    parser.push(Buffer.from('GET / HTTP/1.1\r\n\r\n'));
    expect(() => parser.next()).toThrow(HttpRequestError);
  });
});
