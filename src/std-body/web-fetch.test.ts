// Every request here goes to a server this test starts on 127.0.0.1.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WEB_LIMITS, encodeBody, handleWebFetch, parseWebFetchRequest } from './web-fetch.js';

describe('web fetch endpoint', () => {
  let server: http.Server;
  let port: number;
  let closedPort: number;
  let allowPrivate: string[];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/missing') return void res.writeHead(404).end('nope');
      if (req.url === '/binary') return void res.end(Buffer.from([0xff, 0xfe, 0x00, 0x80]));
      if (req.url === '/hang') return;
      if (req.url === '/to-localhost') return void res.writeHead(302, { location: `http://localhost:${port}/` }).end();
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => res.writeHead(200, { 'x-seen': req.headers['x-demo'] ?? '' }).end(`${req.method} ${body} héllo`));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    allowPrivate = [`127.0.0.1:${port}`];
    const probe = http.createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    closedPort = (probe.address() as AddressInfo).port;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('answers applied with status, headers and a UTF-8 body', async () => {
    const result = await handleWebFetch({ url: `http://127.0.0.1:${port}/`, method: 'post', body: 'data', headers: { 'X-Demo': 'v' }, allowPrivate, methods: ['POST'] });
    expect(result.outcome).toBe('applied');
    expect(result.referenceId).toMatch(/^web-/);
    expect(result.observation).toMatchObject({
      status: 200,
      body: 'POST data héllo',
      bodyEncoding: 'utf8',
      truncated: false,
      headers: { 'x-seen': 'v' },
      url: `http://127.0.0.1:${port}/`,
      redirects: [],
    });
  });

  it('answers an HTTP error status as applied with that status', async () => {
    const result = await handleWebFetch({ url: `http://127.0.0.1:${port}/missing`, allowPrivate });
    expect(result).toMatchObject({ outcome: 'applied', observation: { status: 404, body: 'nope' } });
  });

  it('returns a body that is not UTF-8 as base64 and says so', async () => {
    const result = await handleWebFetch({ url: `http://127.0.0.1:${port}/binary`, allowPrivate });
    expect(result.observation).toMatchObject({ body: Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString('base64'), bodyEncoding: 'base64' });
  });

  it('keeps a truncated UTF-8 body as text even when the cut splits a character', () => {
    const bytes = Buffer.from('abé', 'utf8').subarray(0, 3);
    expect(encodeBody(bytes, true)).toEqual({ body: 'ab', bodyEncoding: 'utf8' });
    expect(encodeBody(bytes, false).bodyEncoding).toBe('base64');
  });

  it('refuses a redirect hop outside the narrower host list the core passes, though the app allows the host', async () => {
    const policy = { allowHosts: ['127.0.0.1', 'localhost'], allowPrivate: [...allowPrivate, `localhost:${port}`] };
    expect(await handleWebFetch({ url: `http://127.0.0.1:${port}/to-localhost`, ...policy })).toMatchObject({ outcome: 'applied', observation: { status: 200, redirects: [`http://localhost:${port}/`] } });
    expect(await handleWebFetch({ url: `http://127.0.0.1:${port}/to-localhost`, ...policy, narrowHosts: ['127.0.0.1'] })).toMatchObject({
      outcome: 'rejected',
      reason: 'refused',
      observation: { code: 'UHLP_WEB_HOST_NOT_ALLOWED', details: { host: 'localhost', narrowed: true } },
    });
  });

  it('caps the body at maxBodyBytes', async () => {
    const result = await handleWebFetch({ url: `http://127.0.0.1:${port}/`, allowPrivate, maxBodyBytes: 4 });
    expect(result.observation).toMatchObject({ body: 'GET ', truncated: true });
  });

  it.each([
    ['a missing url', {}, 'url'],
    ['a relative url', { url: '/path' }, 'url'],
    ['a bad method', { url: 'http://example.com/', method: 'GET /' }, 'method'],
    ['a header with a newline', { url: 'http://example.com/', headers: { a: 'b\r\nc: d' } }, 'headers.a'],
    ['a non-string body', { url: 'http://example.com/', body: { a: 1 } }, 'body'],
    ['a bad allowHosts', { url: 'http://example.com/', allowHosts: 'example.com' }, 'allowHosts'],
    ['a bad narrowHosts', { url: 'http://example.com/', narrowHosts: [1] }, 'narrowHosts'],
    ['a non-numeric timeout', { url: 'http://example.com/', timeoutMs: 'soon' }, 'timeoutMs'],
  ])('rejects %s as invalid_payload', async (_name, payload, field) => {
    expect(await handleWebFetch(payload)).toMatchObject({ outcome: 'rejected', reason: 'invalid_payload', observation: { field } });
  });

  it.each(['ftp://127.0.0.1/', 'file:///etc/passwd', 'gopher://127.0.0.1:70/'])('rejects %s as unsupported_scheme', async (url) => {
    expect(await handleWebFetch({ url })).toMatchObject({ outcome: 'rejected', reason: 'unsupported_scheme' });
  });

  it('clamps limits to the hard maxima', () => {
    expect(parseWebFetchRequest({ url: 'http://example.com/', timeoutMs: 10 ** 9, maxBodyBytes: 10 ** 12, maxRedirects: 99 })).toMatchObject({
      ok: true,
      request: { policy: { timeoutMs: WEB_LIMITS.maxTimeoutMs, maxBodyBytes: WEB_LIMITS.maxBodyBytes, maxRedirects: WEB_LIMITS.maxRedirects } },
    });
  });

  it('answers timeout, network_error and refused', async () => {
    expect(await handleWebFetch({ url: `http://127.0.0.1:${port}/hang`, allowPrivate, timeoutMs: 100 })).toMatchObject({
      outcome: 'rejected',
      reason: 'timeout',
      observation: { code: 'UHLP_WEB_TIMEOUT' },
    });
    expect(await handleWebFetch({ url: `http://127.0.0.1:${closedPort}/`, allowPrivate: [`127.0.0.1:${closedPort}`] })).toMatchObject({
      outcome: 'rejected',
      reason: 'network_error',
      observation: { code: 'UHLP_WEB_NETWORK_ERROR' },
    });
    expect(await handleWebFetch({ url: `http://127.0.0.1:${port}/` })).toMatchObject({
      outcome: 'rejected',
      reason: 'refused',
      observation: { code: 'UHLP_WEB_ADDRESS_NOT_ALLOWED', details: { capability: 'web' } },
    });
  });
});
