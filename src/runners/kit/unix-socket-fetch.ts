/**
 * A `fetch` that sends every request to one Unix socket, whatever the URL's host.
 * Container sandboxes have no network; they reach the core's MCP endpoint through
 * its socket mounted into the container, with the path of `context.mcp_endpoint`.
 * Built on node:http so the runner image needs no HTTP client package.
 */
import http from 'node:http';

export function unixSocketFetch(socketPath: string): typeof fetch {
  return ((input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
    const headers: Record<string, string> = { host: url.host };
    new Headers(init?.headers).forEach((value, name) => (headers[name] = value));
    return new Promise<Response>((resolve, reject) => {
      const request = http.request({ socketPath, method: init?.method ?? 'GET', path: `${url.pathname}${url.search}`, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const status = res.statusCode ?? 502;
          const body = status === 204 || status === 304 ? null : Buffer.concat(chunks);
          resolve(new Response(body, { status, headers: res.headers as Record<string, string> }));
        });
      });
      request.on('error', reject);
      if (init?.signal) init.signal.addEventListener('abort', () => request.destroy(new Error('aborted')), { once: true });
      request.end(typeof init?.body === 'string' ? init.body : undefined);
    });
  }) as typeof fetch;
}
