/**
 * The floor of any core written in Node on this machine: an HTTP server that
 * does nothing but forward each request to a runner (least busy first) with the
 * core's own sandbox client and answer with the component's data. No routing,
 * validation, ledger, metrics or tokens. Measured beside the core, it shows how
 * much of the core's cost is the core, and how much is one more Node process and
 * one more hop.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxEndpoint } from '../../src/sandbox/sandbox-driver.js';
import { executeBody } from '../../test/sandbox/driver-suite.js';

export interface BareForwarder {
  /** `tcp:127.0.0.1:<port>`, a load generator target. */
  readonly target: string;
  close(): Promise<void>;
}

export async function startBareForwarder(endpoints: readonly SandboxEndpoint[]): Promise<BareForwarder> {
  const clients = endpoints.map((endpoint) => new SandboxClient(endpoint));
  const running = endpoints.map(() => 0);
  let sequence = 0;
  const server = http.createServer((request, response) => {
    request.resume();
    const id = `f-${sequence++}`;
    let pick = 0;
    for (let i = 1; i < running.length; i++) if (running[i]! < running[pick]!) pick = i;
    running[pick]! += 1;
    const answer = (status: number, body: string): void => {
      running[pick]! -= 1;
      response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    };
    clients[pick]!.execute(executeBody(id, 'hello', id), id, 5000).then(
      (raw) => (raw.status === 200 ? answer(200, JSON.stringify((JSON.parse(raw.body.toString()) as { data: unknown }).data)) : answer(502, '{}')),
      () => answer(502, '{}'),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    target: `tcp:127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      for (const client of clients) client.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
