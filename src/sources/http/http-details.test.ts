import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/canonical-json.js';
import { httpRequestDataJson, type HttpDetailsInput } from './http-details.js';

const base: HttpDetailsInput = {
  method: 'POST',
  appPath: '/cart/quote',
  query: '',
  routePattern: '/cart/:op',
  pathParameters: { op: 'quote' },
  headers: { host: 'shop.example.com', 'content-type': 'application/json' },
  body: Buffer.from('{"items":{}}'),
};

describe('httpRequestDataJson', () => {
  const cases: Array<[string, Partial<HttpDetailsInput>]> = [
    ['a plain request', {}],
    ['headers in any order, repeated ones as lists', { headers: { 'x-b': '2', accept: '*/*', 'set-cookie': ['a=1', 'b=2'], Zeta: 'z', host: 'h' } }],
    ['several path parameters out of order', { pathParameters: { zed: '1', alpha: '2', Mid: '3' } }],
    ['a query with repeats, escapes and prototype names', { query: 'b=2&a=1&a=3&%C3%A9=%22q%22&constructor=x&__proto__=y' }],
    ['a body that is not UTF-8', { body: Buffer.from([0xff, 0x00, 0xfe]) }],
    ['no body', { body: undefined }],
    ['text that JSON escapes', { body: Buffer.from('line\nbreak "quoted" \\ \u0001 \u2028'), headers: { 'x-latin': 'caf\u00e9', host: 'h' } }],
  ];
  it.each(cases)('writes canonical JSON: %s', (_name, change) => {
    const json = httpRequestDataJson({ ...base, ...change });
    expect(json).toBe(canonicalJson(JSON.parse(json)));
  });

  it('keeps a query parameter named like an Object property as a parameter', () => {
    const json = httpRequestDataJson({ ...base, query: 'constructor=1&__proto__=2&toString=3' });
    expect(json).toContain('"queryParameters":{"__proto__":"2","constructor":"1","toString":"3"}');
  });
});
