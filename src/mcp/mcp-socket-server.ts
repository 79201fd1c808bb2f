/**
 * The core's Unix socket for sandboxes, mounted into each of them (they have
 * no network): /mcp and nothing else, on the core's own HTTP/1.1 server
 * (http1-server.ts), which hands each POST to the MCP server's own entry
 * (CoreMcpServer.serveHttp1). Every tool call of every sandbox passes here, and
 * node:http's streams and fastify's request and reply objects cost more than
 * most tools: here a call is one parse and one write.
 *
 * It answers as fastify's /mcp route answers on the core's TCP port: 405 for
 * GET, HEAD and DELETE (the endpoint is stateless), 404 UHLP_ROUTE_NOT_FOUND
 * for other methods, 413 UHLP_BODY_TOO_LARGE past the endpoint's own limit,
 * an `x-request-id` on every answer, each answer counted in
 * `uhlp_http_requests_total` under `app=""`. Every other path is 404, so that a
 * sandbox reaches neither the operations endpoints, nor /_uhlp, nor other apps.
 */
import { chmod, rm } from 'node:fs/promises';
import { REQUEST_ID_HEADER } from '../contract/execute-contract.js';
import { UhlpError } from '../shared/errors.js';
import { drain } from '../shared/deadline.js';
import { Http1Server, type Http1Answer, type OnClientGone, type Respond } from '../shared/http1/http1-server.js';
import type { Http1Request } from '../shared/http1/request-parser.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import { errorAnswer, HttpIngress } from '../sources/http/http-ingress.js';
import { badRequestAnswer, isMcpTarget, MAX_HEAD_BYTES } from '../sources/http/ingress-server.js';
import { bodyTooLarge, METHOD_NOT_ALLOWED, type CoreMcpServer } from './core-mcp-server.js';

export interface McpSocketServerOptions {
  readonly mcp: Pick<CoreMcpServer, 'serveHttp1' | 'bodyLimitBytes'>;
  readonly metrics: Pick<Metrics, 'requests'>;
  readonly logger: Logger;
}

/** How long a closing core waits for the answers in progress (a call of an execution that is ending). */
const CLOSE_GRACE_MS = 5_000;

const NOT_ALLOWED = JSON.stringify(METHOD_NOT_ALLOWED);

export class McpSocketServer {
  private readonly server: Http1Server;

  constructor(private readonly options: McpSocketServerOptions) {
    const limitBytes = options.mcp.bodyLimitBytes;
    this.server = new Http1Server({
      limits: { maxHeadBytes: MAX_HEAD_BYTES, maxBodyBytes: limitBytes },
      onRequest: (request, respond, onGone) => this.serve(request, respond, onGone),
      // A body over the limit is refused as /mcp refuses it, its limit named; what cannot be read at all, as the TCP listener does.
      onBadRequest: (error) => this.counted(error.status === 413 ? errorAnswer(bodyTooLarge(limitBytes), HttpIngress.requestId({})) : badRequestAnswer(error)),
      onError: (error) => options.logger.error({ err: error }, 'an MCP request could not be answered'),
    });
  }

  /**
   * Listens on `socketPath`, which any local user may connect to (MCP calls
   * still need a token). Called before the first sandbox starts: sandboxes
   * have it mounted.
   */
  async listen(socketPath: string): Promise<void> {
    await rm(socketPath, { force: true });
    await this.server.listen({ path: socketPath });
    await chmod(socketPath, 0o666);
  }

  /** Stops taking connections: idle ones now, the rest once their answers are out (or after a grace). */
  async close(): Promise<void> {
    await drain(this.server.close(), CLOSE_GRACE_MS);
    this.server.destroyConnections();
  }

  private serve(request: Http1Request, respond: Respond, onGone: OnClientGone): void {
    const requestId = HttpIngress.requestId(request.headers);
    if (!isMcpTarget(request.target)) {
      respond(this.counted(errorAnswer(new UhlpError('UHLP_ROUTE_NOT_FOUND', "the core's Unix socket serves /mcp only"), requestId)));
      return;
    }
    switch (request.method) {
      case 'POST':
        this.options.mcp.serveHttp1(request, requestId, (answer) => respond(this.counted(answer)), onGone);
        return;
      case 'GET':
      case 'HEAD':
      case 'DELETE':
        // Stateless: there is no session to stream server messages on or to delete.
        respond(this.counted({ status: 405, headers: { [REQUEST_ID_HEADER]: requestId, allow: 'POST', 'content-type': 'application/json; charset=utf-8' }, body: NOT_ALLOWED }));
        return;
      default:
        respond(this.counted(errorAnswer(new UhlpError('UHLP_ROUTE_NOT_FOUND', `method ${request.method} is not routable`, { method: request.method }), requestId)));
    }
  }

  /** Each answer counted, as the core's fastify hook counts the answers of its routes. */
  private counted(answer: Http1Answer): Http1Answer {
    this.options.metrics.requests.inc({ app: '', route: '', status: String(answer.status) });
    return answer;
  }
}
