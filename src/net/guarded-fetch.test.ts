// Every request here goes to servers this test starts on the loopback interface.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UhlpError } from '../shared/errors.js';
import { type GuardedRequest, type LookupAll, type WebPolicy, guardedFetch } from './guarded-fetch.js';

interface TestServer {
  readonly port: number;
  readonly hits: string[];
  close(): Promise<void>;
}

async function startServer(host: string, handler: http.RequestListener): Promise<TestServer> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function refusedWith(request: GuardedRequest, policy: WebPolicy, lookup?: LookupAll): Promise<UhlpError> {
  try {
    await guardedFetch(request, policy, lookup === undefined ? {} : { lookup });
  } catch (error) {
    expect(error).toBeInstanceOf(UhlpError);
    return error as UhlpError;
  }
  throw new Error('expected the fetch to fail');
}

describe('guardedFetch', () => {
  let v4: TestServer;
  let v6: TestServer;
  let forbidden: TestServer;
  let redirector: TestServer;
  let hang: TestServer;
  let closedPort: number;

  beforeAll(async () => {
    const answer: http.RequestListener = (req, res) => {
      if (req.url === '/big') {
        res.end('x'.repeat(10_000));
        return;
      }
      if (req.url === '/binary') {
        res.end(Buffer.from([0xff, 0xfe, 0x00, 0x80]));
        return;
      }
      if (req.url === '/status/404') {
        res.writeHead(404, { 'x-test': 'yes' }).end('not here');
        return;
      }
      let received = '';
      req.on('data', (chunk: Buffer) => (received += chunk.toString()));
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end(`${req.method} ${req.url} ${received}`.trim()));
    };
    v4 = await startServer('127.0.0.1', answer);
    v6 = await startServer('::1', answer);
    forbidden = await startServer('127.0.0.1', (_req, res) => res.end('secret'));
    redirector = await startServer('127.0.0.1', (req, res) => {
      const target = new URL(req.url ?? '/', 'http://x').searchParams.get('to') ?? '/';
      const status = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('status') ?? 302);
      req.resume();
      req.on('end', () => res.writeHead(status, { location: target }).end());
    });
    hang = await startServer('127.0.0.1', () => {});
    const probe = await startServer('127.0.0.1', () => {});
    closedPort = probe.port;
    await probe.close();
  });

  afterAll(async () => {
    for (const server of [v4, v6, forbidden, redirector, hang]) await server.close();
  });

  beforeEach(() => {
    for (const server of [v4, v6, forbidden, redirector, hang]) server.hits.length = 0;
  });

  describe('refuses loopback without allowPrivate and sends nothing', () => {
    it('127.0.0.1', async () => {
      const error = await refusedWith({ url: `http://127.0.0.1:${v4.port}/` }, {});
      expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
      expect(error.statusCode).toBe(403);
      expect(error.details).toMatchObject({ capability: 'web', address: '127.0.0.1', addressClass: 'loopback' });
      expect(v4.hits).toEqual([]);
    });

    it('[::1]', async () => {
      const error = await refusedWith({ url: `http://[::1]:${v6.port}/` }, {});
      expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
      expect(error.details).toMatchObject({ address: '::1', addressClass: 'loopback' });
      expect(v6.hits).toEqual([]);
    });

    it('localhost', async () => {
      const error = await refusedWith({ url: `http://localhost:${v4.port}/` }, {});
      expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
      expect(v4.hits).toEqual([]);
    });

    it('a name that resolves to loopback', async () => {
      const asked: string[] = [];
      const lookup: LookupAll = async (name) => {
        asked.push(name);
        return [{ address: '127.0.0.1', family: 4 }];
      };
      const error = await refusedWith({ url: `http://innocent.example:${v4.port}/` }, {}, lookup);
      expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
      expect(error.details).toMatchObject({ host: 'innocent.example', address: '127.0.0.1' });
      expect(asked).toEqual(['innocent.example']);
      expect(v4.hits).toEqual([]);
    });

    it('a name with one public and one loopback address', async () => {
      const lookup: LookupAll = async () => [
        { address: '93.184.215.14', family: 4 },
        { address: '::1', family: 6 },
      ];
      const error = await refusedWith({ url: `http://mixed.example:${v6.port}/` }, {}, lookup);
      expect(error.details).toMatchObject({ address: '::1' });
      expect(v6.hits).toEqual([]);
    });

    it('an IPv4-mapped IPv6 literal of loopback', async () => {
      const error = await refusedWith({ url: `http://[::ffff:127.0.0.1]:${v4.port}/` }, {});
      expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
      expect(v4.hits).toEqual([]);
    });
  });

  it('fetches a loopback server listed in allowPrivate, IPv4 and IPv6', async () => {
    const response = await guardedFetch({ url: `http://127.0.0.1:${v4.port}/hello` }, { allowPrivate: [`127.0.0.1:${v4.port}`] });
    expect(response.status).toBe(200);
    expect(response.body.toString()).toBe('GET /hello');
    expect(response.headers['content-type']).toBe('text/plain');
    expect(response.truncated).toBe(false);
    expect(response.address).toBe('127.0.0.1');

    const six = await guardedFetch({ url: `http://[::1]:${v6.port}/six` }, { allowPrivate: [`[::1]:${v6.port}`] });
    expect(six.body.toString()).toBe('GET /six');
  });

  it('allows only the listed port of a private host', async () => {
    const error = await refusedWith({ url: `http://127.0.0.1:${forbidden.port}/` }, { allowPrivate: [`127.0.0.1:${v4.port}`] });
    expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
    expect(forbidden.hits).toEqual([]);
  });

  it('does not let a listed name reach a cloud-metadata address', async () => {
    const lookup: LookupAll = async () => [{ address: '169.254.169.254', family: 4 }];
    const error = await refusedWith({ url: 'http://internal.example/latest/meta-data/' }, { allowPrivate: ['internal.example:80'] }, lookup);
    expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
    expect(error.details).toMatchObject({ addressClass: 'cloud-metadata' });
  });

  it('connects to the address it checked, not to a second DNS answer', async () => {
    // No real DNS knows this name: the request can only arrive if the connection
    // used the injected (checked) answer.
    let lookups = 0;
    const lookup: LookupAll = async () => {
      lookups += 1;
      return [{ address: '127.0.0.1', family: 4 }];
    };
    const response = await guardedFetch(
      { url: `http://pinned.invalid:${v4.port}/pin` },
      { allowPrivate: [`pinned.invalid:${v4.port}`] },
      { lookup },
    );
    expect(response.body.toString()).toBe('GET /pin');
    expect(lookups).toBe(1);
  });

  it('refuses a redirect from an allowed server to a loopback port that is not allowed', async () => {
    const target = `http://127.0.0.1:${forbidden.port}/secret`;
    const error = await refusedWith(
      { url: `http://127.0.0.1:${redirector.port}/go?to=${encodeURIComponent(target)}` },
      { allowPrivate: [`127.0.0.1:${redirector.port}`] },
    );
    expect(error.code).toBe('UHLP_WEB_ADDRESS_NOT_ALLOWED');
    expect(error.details).toMatchObject({ port: forbidden.port });
    expect(redirector.hits).toHaveLength(1);
    expect(forbidden.hits).toEqual([]);
  });

  it('refuses a redirect to a host outside allowHosts', async () => {
    const target = `http://localhost:${v4.port}/`;
    const error = await refusedWith(
      { url: `http://127.0.0.1:${redirector.port}/go?to=${encodeURIComponent(target)}` },
      { allowHosts: ['127.0.0.1'], allowPrivate: [`127.0.0.1:${redirector.port}`, `127.0.0.1:${v4.port}`] },
    );
    expect(error.code).toBe('UHLP_WEB_HOST_NOT_ALLOWED');
    expect(v4.hits).toEqual([]);
  });

  it('refuses a redirect to a host the policy allows but the narrower allowlist of the call does not', async () => {
    const allowPrivate = [`127.0.0.1:${redirector.port}`, `127.0.0.1:${v4.port}`, `localhost:${v4.port}`];
    const target = `http://localhost:${v4.port}/`;
    const url = `http://127.0.0.1:${redirector.port}/go?to=${encodeURIComponent(target)}`;
    const error = await refusedWith({ url }, { allowHosts: ['127.0.0.1', 'localhost'], narrowHosts: ['127.0.0.1'], allowPrivate });
    expect(error.code).toBe('UHLP_WEB_HOST_NOT_ALLOWED');
    expect(error.details).toMatchObject({ host: 'localhost', narrowed: true });
    expect(v4.hits).toEqual([]);
    // The narrower list only takes hosts away: it does not add one the policy lacks.
    const widened = await refusedWith({ url: `http://localhost:${v4.port}/` }, { allowHosts: ['127.0.0.1'], narrowHosts: ['127.0.0.1', 'localhost'], allowPrivate });
    expect(widened.code).toBe('UHLP_WEB_HOST_NOT_ALLOWED');
    expect(widened.details).not.toHaveProperty('narrowed');
    // Without it, the same redirect is followed.
    expect((await guardedFetch({ url }, { allowHosts: ['127.0.0.1', 'localhost'], allowPrivate })).status).toBe(200);
  });

  it('follows allowed redirects: 303 turns POST into GET, 307 keeps the method and body', async () => {
    const allowPrivate = [`127.0.0.1:${redirector.port}`, `127.0.0.1:${v4.port}`];
    const methods = ['GET', 'POST'];
    const target = encodeURIComponent(`http://127.0.0.1:${v4.port}/landed`);
    const seeOther = await guardedFetch(
      { url: `http://127.0.0.1:${redirector.port}/?status=303&to=${target}`, method: 'POST', body: 'payload' },
      { allowPrivate, methods },
    );
    expect(seeOther.body.toString()).toBe('GET /landed');
    expect(seeOther.redirects).toEqual([`http://127.0.0.1:${v4.port}/landed`]);

    const temporary = await guardedFetch(
      { url: `http://127.0.0.1:${redirector.port}/?status=307&to=${target}`, method: 'POST', body: 'payload' },
      { allowPrivate, methods },
    );
    expect(temporary.body.toString()).toBe('POST /landed payload');
  });

  it('stops after maxRedirects', async () => {
    const self = `http://127.0.0.1:${redirector.port}/loop`;
    const error = await refusedWith({ url: `${self}?to=${encodeURIComponent(`${self}?to=/loop`)}` }, {
      allowPrivate: [`127.0.0.1:${redirector.port}`],
      maxRedirects: 2,
    });
    expect(error.code).toBe('UHLP_WEB_TOO_MANY_REDIRECTS');
    expect(redirector.hits).toHaveLength(3);
  });

  it.each([
    ['a method outside the policy', { url: 'http://127.0.0.1/', method: 'DELETE' }, {}, 'UHLP_WEB_METHOD_NOT_ALLOWED'],
    ['POST by default', { url: 'http://127.0.0.1/', method: 'POST' }, {}, 'UHLP_WEB_METHOD_NOT_ALLOWED'],
    ['a host outside allowHosts', { url: 'http://127.0.0.1/' }, { allowHosts: ['api.example.com'] }, 'UHLP_WEB_HOST_NOT_ALLOWED'],
    ['a file URL', { url: 'file:///etc/passwd' }, {}, 'UHLP_WEB_UNSUPPORTED_SCHEME'],
    ['an ftp URL', { url: 'ftp://127.0.0.1/' }, {}, 'UHLP_WEB_UNSUPPORTED_SCHEME'],
    ['no URL at all', { url: 'not a url' }, {}, 'UHLP_WEB_INVALID_URL'],
  ] as const)('refuses %s', async (_name, request, policy, code) => {
    expect((await refusedWith(request, policy)).code).toBe(code);
  });

  it('matches allowHosts case-insensitively and by *. suffix', async () => {
    const lookup: LookupAll = async () => [{ address: '127.0.0.1', family: 4 }];
    const policy = { allowHosts: ['*.Example.test'], allowPrivate: [`127.0.0.1:${v4.port}`] };
    const ok = await guardedFetch({ url: `http://API.example.test:${v4.port}/w` }, policy, { lookup });
    expect(ok.status).toBe(200);
    expect((await refusedWith({ url: `http://example.test:${v4.port}/` }, policy, lookup)).code).toBe('UHLP_WEB_HOST_NOT_ALLOWED');
    expect((await refusedWith({ url: `http://badexample.test:${v4.port}/` }, policy, lookup)).code).toBe('UHLP_WEB_HOST_NOT_ALLOWED');
  });

  it('keeps maxBodyBytes of a longer body and says it truncated', async () => {
    const response = await guardedFetch({ url: `http://127.0.0.1:${v4.port}/big` }, { allowPrivate: [`127.0.0.1:${v4.port}`], maxBodyBytes: 100 });
    expect(response.body).toHaveLength(100);
    expect(response.truncated).toBe(true);
  });

  it('answers non-2xx statuses as responses', async () => {
    const response = await guardedFetch({ url: `http://127.0.0.1:${v4.port}/status/404` }, { allowPrivate: [`127.0.0.1:${v4.port}`] });
    expect(response.status).toBe(404);
    expect(response.headers['x-test']).toBe('yes');
  });

  it('times out a server that never answers', async () => {
    const started = Date.now();
    const error = await refusedWith({ url: `http://127.0.0.1:${hang.port}/` }, { allowPrivate: [`127.0.0.1:${hang.port}`], timeoutMs: 150 });
    expect(error.code).toBe('UHLP_WEB_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it('times out a lookup that never answers', async () => {
    const lookup: LookupAll = () => new Promise(() => {});
    const error = await refusedWith({ url: 'http://slow-dns.invalid/' }, { timeoutMs: 100 }, lookup);
    expect(error.code).toBe('UHLP_WEB_TIMEOUT');
  });

  it('reports a refused connection and a failed lookup as network errors', async () => {
    const refused = await refusedWith({ url: `http://127.0.0.1:${closedPort}/` }, { allowPrivate: [`127.0.0.1:${closedPort}`] });
    expect(refused.code).toBe('UHLP_WEB_NETWORK_ERROR');
    expect(refused.details).toMatchObject({ cause: 'ECONNREFUSED' });

    const lookup: LookupAll = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    };
    const missing = await refusedWith({ url: 'http://missing.invalid/' }, {}, lookup);
    expect(missing.code).toBe('UHLP_WEB_NETWORK_ERROR');
    expect(missing.details).toMatchObject({ cause: 'ENOTFOUND' });
  });
});
