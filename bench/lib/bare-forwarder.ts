/**
 * The floor of this core's design on this machine: the core's own HTTP/1.1
 * server (src/http1) and sandbox client, forwarding each request to a runner
 * (least busy first) and answering with the component's data, and doing
 * nothing else: no routing, validation, sessions, ledger, metrics or tokens.
 * Measured beside the core, it shows how much of the core's cost is the core's
 * work, and how much is one more process and one more hop.
 *
 * It runs as a process of its own, like the core, and starts its sandboxes
 * (the suite's runner, under bubblewrap) as its children, so the CPU of the
 * process and of its descendants compares with the core's one for one:
 *
 *   tsx bench/lib/bare-forwarder.ts <sandboxes> <concurrency>   (prints {"port": N} once listening)
 */
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxEndpoint, SandboxHandle } from '../../src/sandbox/sandbox-driver.js';
import { makeProcessDriver } from '../../test/helpers/process-driver.js';
import { executeBody, makeSuiteDefinitions, suitePool } from '../../test/sandbox/driver-suite.js';
import { startBareChild, type BareChild } from './bare-child.js';

export interface BareForwarder {
  /** `tcp:127.0.0.1:<port>`, a load generator target. */
  readonly target: string;
  close(): Promise<void>;
}

const JSON_HEADERS = { 'content-type': 'application/json' };

/**
 * Starts the forwarder as a child process with `sandboxes` sandboxes of `concurrency` each
 * (`env` added to its environment: NODE_OPTIONS=--cpu-prof to profile it).
 */
export function startBareForwarderProcess(sandboxes: number, concurrency: number, env: Record<string, string> = {}): Promise<BareChild> {
  return startBareChild(import.meta.url, [String(sandboxes), String(concurrency)], 'the bare forwarder', env);
}

/** The forwarder in this process, in front of `endpoints`. */
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

/** The child process: the suite's sandboxes (as the core's process driver starts them) behind the forwarder. */
async function serve(sandboxes: number, concurrency: number): Promise<void> {
  const driver = await makeProcessDriver();
  const pool = suitePool({ limits: { memoryMb: 128, cpus: 1, timeoutMs: 5000 } });
  const spec = { appId: 'suite', pool: { ...pool, concurrency }, definitionsRoot: makeSuiteDefinitions(), labels: {} };
  const handles: SandboxHandle[] = await Promise.all(Array.from({ length: sandboxes }, () => driver.create(spec)));
  const forwarder = await startBareForwarder(handles.map((h) => h.endpoint));
  process.once('SIGTERM', () => {
    void (async () => {
      await forwarder.close();
      await Promise.all(handles.map((h) => driver.destroy(h, 'shutdown')));
      await driver.close();
      process.exit(0);
    })();
  });
  process.stdout.write(`${JSON.stringify({ port: Number(forwarder.target.slice(forwarder.target.lastIndexOf(':') + 1)) })}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await serve(Number(process.argv[2]), Number(process.argv[3]));
