/**
 * The operator listener: the console and every other operator route, on an
 * origin of their own (another port; loopback unless UHLP_OPERATOR_HOST says
 * otherwise). No app answers here, so no script an app's answer carries, be it
 * an app author's or a model's, is ever the console's page in a browser's eyes:
 * it cannot read the console's API (no CORS), nor send its custom header
 * without a preflight the core never grants, and `Sec-Fetch-Site` says
 * `same-site` at most. Which routes answer here is route-audience.ts's rule; this
 * module only listens and marks its connections.
 */
import type http from 'node:http';
import type net from 'node:net';
import { drain } from '../shared/deadline.js';
import { listenOn } from '../shared/listen-on.js';
import { createHandOverServer } from '../shared/http1/hand-over-server.js';
import { bindListener } from './route-audience.js';

/** How long a closing core waits for operator answers in progress (a console page's live stream ends at once). */
const CLOSE_GRACE_MS = 5_000;

export class OperatorServer {
  private readonly server: http.Server;

  /** @param routes fastify's request handler (`app.routing`) */
  constructor(routes: http.RequestListener) {
    this.server = createHandOverServer(routes, 72_000);
    this.server.on('connection', (socket: net.Socket) => bindListener(socket, 'operator'));
  }

  /** Listens; resolves with the URL operators use. */
  async listen(host: string, port: number): Promise<string> {
    const address = (await listenOn(this.server, { host, port })) as net.AddressInfo;
    const name = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${name}:${address.port}`;
  }

  /** Stops taking connections; the answers in progress get a grace, then their connections end. */
  async close(): Promise<void> {
    if (!this.server.listening) return;
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeIdleConnections();
    await drain(closed, CLOSE_GRACE_MS);
    this.server.closeAllConnections();
  }
}
