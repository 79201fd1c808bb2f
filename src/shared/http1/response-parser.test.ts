import { describe, expect, it } from 'vitest';
import { Http1ResponseParser, HttpProtocolError, ResponseTooLargeError } from './response-parser.js';

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
  describe('framing headers by name, wherever they are', () => {
    const FILLER = 'X-Long-Header-Name-That-Is-Not-Framing: 1\r\nContent-Type: application/json\r\nX-Len: 9\r\n';
    it.each([
      ['lower case Content-Length', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok', { body: 'ok', close: false }],
      ['upper case Content-Length last', `HTTP/1.1 200 OK\r\n${FILLER}CONTENT-LENGTH: 2\r\n\r\nok`, { body: 'ok', close: false }],
      ['mixed case Content-Length first', `HTTP/1.1 200 OK\r\nContent-length: 2\r\n${FILLER}\r\nok`, { body: 'ok', close: false }],
      ['Content-Length with spaces and tabs around its value', 'HTTP/1.1 200 OK\r\nContent-Length: \t 2\t \r\n\r\nok', { body: 'ok', close: false }],
      ['Content-Length with no space after the colon', 'HTTP/1.1 200 OK\r\nContent-Length:2\r\n\r\nok', { body: 'ok', close: false }],
      ['Transfer-Encoding in capitals after other headers', `HTTP/1.1 200 OK\r\n${FILLER}TRANSFER-ENCODING: Chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n`, { body: 'ok', close: false }],
      ['Connection: close among other headers', `HTTP/1.1 200 OK\r\nX-A: b\r\nCONNECTION: Close\r\n${FILLER}Content-Length: 0\r\n\r\n`, { body: '', close: true }],
      ['close in a Connection list', 'HTTP/1.1 200 OK\r\nConnection: keep-alive ,\tclose\r\nContent-Length: 0\r\n\r\n', { body: '', close: true }],
      ['close in the second of two Connection headers', 'HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nconnection: close\r\nContent-Length: 0\r\n\r\n', { body: '', close: true }],
      ['HTTP/1.0 kept alive in any case', 'HTTP/1.0 200 OK\r\nX-A: b\r\nconnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n', { body: '', close: false }],
      ['a header whose name only ends like a framing one', 'HTTP/1.1 200 OK\r\nX-Content-Length: 99\r\nContent-Length: 2\r\n\r\nok', { body: 'ok', close: false }],
      ['a framing name inside another header value', 'HTTP/1.1 200 OK\r\nX-Note: Content-Length: 99\r\nContent-Length: 2\r\n\r\nok', { body: 'ok', close: false }],
    ])('reads %s', (_name, text, expected) => {
      const response = feed(new Http1ResponseParser(), text);
      expect(response).toEqual({ status: 200, body: Buffer.from(expected.body), close: expected.close });
    });

    it.each([
      ['two different Content-Length values', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-A: b\r\ncontent-length: 3\r\n\r\nok'],
      ['two equal Content-Length headers', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nCONTENT-LENGTH: 2\r\n\r\nok'],
      ['a Content-Length list', 'HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok'],
      ['a signed Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok'],
      ['a Content-Length with a space inside', 'HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\nok'],
      ['an empty Content-Length', 'HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n'],
      ['Content-Length then Transfer-Encoding', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n'],
      ['Transfer-Encoding then Content-Length, far apart', 'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nX-A: 1\r\nX-B: 2\r\ncontent-length: 2\r\n\r\n'],
      ['two Transfer-Encoding headers', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n'],
      ['a coding before chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'],
      ['chunked twice in one list', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n'],
      ['a space before the colon (a name that hides from a by-offset reader)', 'HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nok'],
      ['a tab before the colon', 'HTTP/1.1 200 OK\r\nTransfer-Encoding\t: chunked\r\n\r\n'],
      ['a folded continuation line', 'HTTP/1.1 200 OK\r\nX-A: b\r\n Content-Length: 2\r\n\r\nok'],
      ['a folded framing header', 'HTTP/1.1 200 OK\r\nContent-Length:\r\n 2\r\n\r\nok'],
      ['a line without a colon', 'HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nok'],
      ['an empty header name', 'HTTP/1.1 200 OK\r\n: 2\r\n\r\nok'],
      ['a bare LF splitting a header in two', 'HTTP/1.1 200 OK\r\nX-A: b\nContent-Length: 2\r\n\r\nok'],
      ['a bare CR inside a value', 'HTTP/1.1 200 OK\r\nX-A: b\rContent-Length: 2\r\nContent-Length: 2\r\n\r\nok'],
      ['a NUL inside a value', 'HTTP/1.1 200 OK\r\nX-A: b\0c\r\nContent-Length: 2\r\n\r\nok'],
      ['a DEL inside a value', 'HTTP/1.1 200 OK\r\nX-A: b\x7fc\r\nContent-Length: 2\r\n\r\nok'],
      ['a control character in the reason phrase', 'HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\nok'],
      ['a non-token character in a name', 'HTTP/1.1 200 OK\r\nContent(Length): 2\r\n\r\nok'],
    ])('refuses %s', (_name, text) => {
      expect(() => feed(new Http1ResponseParser(), text)).toThrow(HttpProtocolError);
    });
  });

  describe('body limit', () => {
    const limited = () => new Http1ResponseParser({ maxBodyBytes: 10 });

    it('refuses a Content-Length over the limit from the head alone, before any body byte', () => {
      const parser = limited();
      let thrown: unknown;
      try {
        parser.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 314572800\r\n\r\n'));
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ResponseTooLargeError);
      expect(thrown).toMatchObject({ limitBytes: 10, declaredBytes: 314572800 });
    });

    it('takes a body of exactly the limit, whatever its framing', () => {
      expect(feed(limited(), 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789')?.body.toString()).toBe('0123456789');
      expect(feed(limited(), 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n')?.body.toString()).toBe('0123456789');
      const parser = limited();
      feed(parser, 'HTTP/1.1 200 OK\r\n\r\n01234', '56789');
      expect(parser.end().body.toString()).toBe('0123456789');
    });

    it.each([
      ['chunks that add up past it', ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n4\r\nefgh\r\n', '4\r\n']],
      ['one chunk announced past it', ['HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffff\r\n']],
      ['a body framed by the connection that grows past it', ['HTTP/1.1 200 OK\r\n\r\n012345', '6789', 'a']],
    ])('refuses %s as soon as the running total would pass it', (_name, parts) => {
      const parser = limited();
      const last = parts.length - 1;
      parts.slice(0, last).forEach((part) => expect(parser.push(Buffer.from(part))).toBeUndefined());
      expect(() => parser.push(Buffer.from(parts[last]!))).toThrow(ResponseTooLargeError);
    });

    it('refuses a chunked body fed byte by byte at the size line that passes the limit, before its data', () => {
      const parser = limited();
      const text = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n01234567\r\n8\r\n';
      let consumed = 0;
      expect(() => {
        for (const byte of text) {
          parser.push(Buffer.from(byte, 'latin1'));
          consumed += 1;
        }
      }).toThrow(ResponseTooLargeError);
      expect(consumed).toBe(text.length - 1);
    });
  });
});
