import { describe, expect, it } from 'vitest';
import { Http1ResponseParser, HttpProtocolError } from './http1-response-parser.js';

const feed = (parser: Http1ResponseParser, ...parts: string[]) => {
  let result;
  for (const part of parts) result = parser.push(Buffer.from(part, 'latin1'));
  return result;
};

describe('Http1ResponseParser', () => {
  it('reads a Content-Length body split anywhere', () => {
    const whole = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}';
    for (let cut = 1; cut < whole.length; cut++) {
      const parser = new Http1ResponseParser();
      expect(parser.push(Buffer.from(whole.slice(0, cut)))).toBeUndefined();
      const response = parser.push(Buffer.from(whole.slice(cut)));
      expect(response).toEqual({ status: 200, body: Buffer.from('{"ok":true}'), close: false });
    }
  });

  it('reads chunked bodies, extensions included, byte by byte', () => {
    const whole = 'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n4;x=y\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n';
    const parser = new Http1ResponseParser();
    let response;
    for (const byte of whole) response = parser.push(Buffer.from(byte, 'latin1')) ?? response;
    expect(response).toEqual({ status: 201, body: Buffer.from('Wikipedia'), close: false });
  });

  it('honours Connection: close and HTTP/1.0', () => {
    expect(feed(new Http1ResponseParser(), 'HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ close: true });
    expect(feed(new Http1ResponseParser(), 'HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ close: true });
    expect(feed(new Http1ResponseParser(), 'HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n')).toMatchObject({ close: false });
  });

  it('has no body on 204, and reads to the end of the connection when nothing frames the body', () => {
    expect(feed(new Http1ResponseParser(), 'HTTP/1.1 204 No Content\r\n\r\n')).toEqual({ status: 204, body: Buffer.alloc(0), close: false });
    const parser = new Http1ResponseParser();
    expect(feed(parser, 'HTTP/1.1 200 OK\r\n\r\nab', 'cd')).toBeUndefined();
    expect(parser.end()).toEqual({ status: 200, body: Buffer.from('abcd'), close: true });
  });

  it('refuses what a well-behaved runner never sends', () => {
    const bad = [
      'HTTP/2 200\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc',
      'HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n',
      'HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n',
      'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naXX',
      'HTTP/1.1 100 Continue\r\n\r\n',
      'HTTP/1.1 200 OK\r\nno colon\r\n\r\n',
    ];
    for (const text of bad) expect(() => feed(new Http1ResponseParser(), text), text).toThrow(HttpProtocolError);
  });

  it('refuses a connection that ends mid-answer, and an endless head', () => {
    const parser = new Http1ResponseParser();
    feed(parser, 'HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab');
    expect(() => parser.end()).toThrow(/before the response was complete/);
    expect(() => new Http1ResponseParser().push(Buffer.alloc(70 * 1024, 'a'))).toThrow(/too large/);
  });
});
