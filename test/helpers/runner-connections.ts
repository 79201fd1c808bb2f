/**
 * A stand-in for a runner's HTTP server on a Unix socket that records each
 * connection the core opens to it: the requests it carried, in order, and
 * whether it is still open. For tests of who opens a sandbox's connection and
 * who closes it.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import path from 'node:path';
import type { SandboxEndpoint } from '../../src/sandbox/sandbox-driver.js';

export interface RecordedConnection {
  /** `METHOD path` of each request, in order. */
  readonly requests: string[];
  open: boolean;
}

export interface RunnerConnections {
  readonly endpoint: SandboxEndpoint;
  readonly connections: RecordedConnection[];
  /** Stops listening and drops every connection; closing again does nothing. */
  close(): Promise<void>;
}

/** Listens at `<dir>/<name>.sock`; /healthz answers as a runner's does, anything else a 200 with `{}`. */
export async function recordRunnerConnections(dir: string, name: string): Promise<RunnerConnections> {
  const socketPath = path.join(dir, `${name}.sock`);
  const connections: RecordedConnection[] = [];
  const recorded = new WeakMap<Socket, RecordedConnection>();
  const server = http.createServer((request, response) => {
    recorded.get(request.socket)?.requests.push(`${request.method} ${request.url}`);
    request.resume();
    request.on('end', () => {
      response.setHeader('content-type', 'application/json');
      response.end(request.url === '/healthz' ? '{"running":0,"busy":false}' : '{}');
    });
  });
  server.on('connection', (socket: Socket) => {
    const connection: RecordedConnection = { requests: [], open: true };
    connections.push(connection);
    recorded.set(socket, connection);
    socket.on('close', () => (connection.open = false));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  let closed: Promise<void> | undefined;
  return {
    endpoint: { kind: 'unix', socketPath },
    connections,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      })),
  };
}
