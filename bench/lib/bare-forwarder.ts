/**
 * The floor of this core's design on this machine: the core's own HTTP/1.1
 * server (src/http1) and sandbox client, forwarding each request to a runner
 * (least busy first) and answering with the component's data, and doing
 * nothing else: no routing, validation, sessions, ledger, metrics or tokens.
 * Measured beside the core, it shows how much of the core's cost is the core's
 * work, and how much is one more process and one more hop.
 */
import type { AddressInfo } from 'node:net';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxEndpoint } from '../../src/sandbox/sandbox-driver.js';
import { executeBody } from '../../test/sandbox/driver-suite.js';

export interface BareForwarder {
  /** `tcp:127.0.0.1:<port>`, a load generator target. */
  readonly target: string;
  close(): Promise<void>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export async function startBareForwarder(endpoints: readonly SandboxEndpoint[]): Promise<BareForwarder> {
  const clients = endpoints.map((endpoint) => new SandboxClient(endpoint));
  const running = endpoints.map(() => 0);
  let sequence = 0;
  const server = new Http1Server({
    limits: { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 * 1024 },
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (_request, respond) => {
      const id = `f-${sequence++}`;
      let pick = 0;
      for (let i = 1; i < running.length; i++) if (running[i]! < running[pick]!) pick = i;
      running[pick]! += 1;
      const answer = (status: number, body: string): void => {
        running[pick]! -= 1;
        respond({ status, headers: JSON_HEADERS, body });
      };
      clients[pick]!.execute(executeBody(id, 'hello', id), id, 5000).then(
        (raw) => (raw.status === 200 ? answer(200, JSON.stringify((JSON.parse(raw.body.toString()) as { data: unknown }).data)) : answer(502, '{}')),
        () => answer(502, '{}'),
      );
    },
  });
  const address = (await server.listen({ host: '127.0.0.1', port: 0 })) as AddressInfo;
  return {
    target: `tcp:127.0.0.1:${address.port}`,
    async close() {
      for (const client of clients) client.close();
      server.destroyConnections();
      await server.close();
    },
  };
}
