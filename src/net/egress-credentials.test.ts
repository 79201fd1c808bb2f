import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withCredentials, type EgressCredential } from './egress-credentials.js';
import { guardedFetch } from './guarded-fetch.js';

describe('which hops carry a credential', () => {
  const bearer: EgressCredential = { origin: 'https://api.example.com', pathPrefix: '/v1/', header: 'Authorization', value: 'Bearer s3cret' };
  it.each([
    ['the origin and prefix', 'https://api.example.com/v1/items', 'GET', true],
    ['another path', 'https://api.example.com/admin', 'GET', false],
    ['a path that leaves the prefix through dot segments', 'https://api.example.com/v1/../admin', 'GET', false],
    ['plain http to the same host', 'http://api.example.com/v1/items', 'GET', false],
    ['another port', 'https://api.example.com:8443/v1/items', 'GET', false],
    ['a look-alike host', 'https://api.example.com.evil.test/v1/items', 'GET', false],
    ['a subdomain', 'https://x.api.example.com/v1/items', 'GET', false],
  ])('%s', (_label, url, method, carried) => {
    const hop = withCredentials(new URL(url), method, { accept: 'x' }, [bearer]);
    expect(hop.headers['authorization'] === 'Bearer s3cret').toBe(carried);
    expect(hop.applied).toEqual(carried ? [0] : []);
  });

  it('replaces a header of the same name the script set, and adds a query credential to the URL sent only', () => {
    const url = new URL('https://api.example.com/v1/x?q=1');
    const hop = withCredentials(url, 'GET', { Authorization: 'Bearer forged' }, [bearer, { origin: 'https://api.example.com', query: 'api_key', value: 'k3y-value' }]);
    expect(hop.headers).toEqual({ authorization: 'Bearer s3cret' });
    expect(hop.url.href).toBe('https://api.example.com/v1/x?q=1&api_key=k3y-value');
    expect(url.href).toBe('https://api.example.com/v1/x?q=1');
  });

  it('is limited to the methods a credential names', () => {
    const only = { ...bearer, methods: ['GET'] };
    expect(withCredentials(new URL('https://api.example.com/v1/x'), 'POST', {}, [only]).applied).toEqual([]);
  });
});

describe('the guarded fetch with credentials', () => {
  const seen: Array<{ host: string; path: string; authorization: string | undefined }> = [];
  let api: http.Server;
  let other: http.Server;
  let apiPort = 0;
  let otherPort = 0;
  beforeAll(async () => {
    other = http.createServer((req, res) => {
      seen.push({ host: 'other', path: req.url ?? '', authorization: req.headers.authorization });
      res.end('other');
    });
    api = http.createServer((req, res) => {
      seen.push({ host: 'api', path: req.url ?? '', authorization: req.headers.authorization });
      if (req.url === '/v1/away') res.writeHead(302, { location: `http://127.0.0.1:${otherPort}/catch` }).end();
      else if (req.url === '/v1/here') res.writeHead(302, { location: '/v1/ok' }).end();
      else res.end(req.headers.authorization === 'Bearer s3cret' ? 'ok' : 'no');
    });
    await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
    apiPort = (api.address() as AddressInfo).port;
    otherPort = (other.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => api.close(resolve));
    await new Promise((resolve) => other.close(resolve));
  });

  const policy = (): Parameters<typeof guardedFetch>[1] => ({
    allowPrivate: [`127.0.0.1:${apiPort}`, `127.0.0.1:${otherPort}`],
    inject: [{ origin: `http://127.0.0.1:${apiPort}`, pathPrefix: '/v1/', header: 'authorization', value: 'Bearer s3cret' }],
  });

  it('sends it to the API, follows a same-origin redirect with it, and says which credential went out', async () => {
    seen.length = 0;
    const response = await guardedFetch({ url: `http://127.0.0.1:${apiPort}/v1/here` }, policy());
    expect(response.body.toString()).toBe('ok');
    expect(response.injected).toEqual([0]);
    expect(seen.map((entry) => entry.authorization)).toEqual(['Bearer s3cret', 'Bearer s3cret']);
  });

  it('drops it on a redirect to another origin', async () => {
    seen.length = 0;
    const response = await guardedFetch({ url: `http://127.0.0.1:${apiPort}/v1/away` }, policy());
    expect(response.body.toString()).toBe('other');
    expect(seen).toEqual([
      { host: 'api', path: '/v1/away', authorization: 'Bearer s3cret' },
      { host: 'other', path: '/catch', authorization: undefined },
    ]);
  });

  it('never sends it on a hop that a check refused', async () => {
    seen.length = 0;
    await expect(guardedFetch({ url: `http://127.0.0.1:${apiPort}/v1/x` }, { ...policy(), allowPrivate: [] })).rejects.toMatchObject({ code: 'UHLP_WEB_ADDRESS_NOT_ALLOWED' });
    await expect(guardedFetch({ url: `http://127.0.0.1:${apiPort}/v1/x`, method: 'DELETE' }, policy())).rejects.toMatchObject({ code: 'UHLP_WEB_METHOD_NOT_ALLOWED' });
    expect(seen).toEqual([]);
  });

  it('reports the URL without a query credential', async () => {
    const response = await guardedFetch(
      { url: `http://127.0.0.1:${apiPort}/v2/q` },
      { allowPrivate: [`127.0.0.1:${apiPort}`], inject: [{ origin: `http://127.0.0.1:${apiPort}`, query: 'key', value: 'query-s3cret' }] },
    );
    expect(response.url).toBe(`http://127.0.0.1:${apiPort}/v2/q`);
    expect(seen.at(-1)?.path).toBe('/v2/q?key=query-s3cret');
  });
});
