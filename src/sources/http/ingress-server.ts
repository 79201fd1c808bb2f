/**
 * The core's listening socket. App traffic is served here by the core's own
 * HTTP/1.1 server (http1-server.ts) and the ingress, with no framework between
 * them: on a two-core machine, fastify and node:http's streams took more of each
 * request than routing, the sandbox call and the ledger together. A request for
 * one of the core's own paths (operations endpoints, /mcp, /_uhlp) is read like
 * any other, then relayed to fastify as a connection of its own, and the
 * client's connection ends with fastify's answer (`connection: close`): those
 * routes need node:http's request and response objects (the MCP SDK streams its
 * answers), and their traffic is light. So every request on the core's port is
 * framed by one parser, with one set of limits (but for /mcp's body limit,
 * sized for the MCP tools: src/mcp/mcp-limits.ts) and one error answer; a client
 * that sends an app request after a core path sends it on a fresh connection.
 * The Unix socket that containers (no network) reach /mcp through is served
 * apart from this listener, without fastify (src/mcp/mcp-socket-server.ts);
 * operator routes are served on a listener of their own, and refused here
 * (src/core/route-audience.ts, src/core/operator-server.ts).
 */
import type http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { REQUEST_ID_HEADER } from '../../contract/execute-contract.js';
import { RESERVED_PATH_PREFIXES } from '../../apps/validation/validate-app-definition.js';
import { UhlpError, type ErrorCode } from '../../shared/errors.js';
import { drain } from '../../shared/deadline.js';
import { createHandOverServer } from '../../shared/http1/hand-over-server.js';
import { Http1Server, type Http1Answer } from '../../shared/http1/http1-server.js';
import type { Http1Head, Http1Request, HttpRequestError } from '../../shared/http1/request-parser.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import { MCP_PATH } from '../../mcp/core-mcp-server.js';
import { bindListener } from '../../core/route-audience.js';
import { errorAnswer, HttpIngress } from './http-ingress.js';
import type { SecretScrubber } from '../../secrets/secret-scrubber.js';
import { scrubbedChunks } from '../../secrets/stream-scrubber.js';

export interface IngressServerOptions {
  readonly ingress: HttpIngress;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** fastify's request handler (`app.routing`), for connections handed over to it. */
  readonly coreRoutes: (request: http.IncomingMessage, response: http.ServerResponse) => void;
  /** Largest request body; a larger one gets 413 from its Content-Length (or as soon as a chunked body passes it). */
  readonly bodyLimitBytes: number;
  /** Largest body of a request to /mcp, which has a limit of its own (src/mcp/mcp-limits.ts). @defaultValue bodyLimitBytes */
  readonly mcpBodyLimitBytes?: number;
  /** Removes secret values from answers (body, headers, and a streamed body's chunks) before the client sees them. @defaultValue none */
  readonly scrubber?: SecretScrubber;
}

/** Request line and headers, as node:http allows by default. */
export const MAX_HEAD_BYTES = 16 * 1024;

/** How long a closing core waits for answers on fastify's routes (an MCP call of an ended execution, a scrape). */
const CORE_ROUTES_GRACE_MS = 5_000;

/** The code of each answer to a request that cannot be read. */
const BAD_REQUEST_CODES: Readonly<Record<HttpRequestError['status'], ErrorCode>> = {
  400: 'UHLP_BAD_REQUEST',
  408: 'UHLP_REQUEST_TIMEOUT',
  413: 'UHLP_BODY_TOO_LARGE',
  417: 'UHLP_EXPECTATION_FAILED',
  431: 'UHLP_REQUEST_HEAD_TOO_LARGE',
  501: 'UHLP_TRANSFER_CODING_NOT_SUPPORTED',
  505: 'UHLP_HTTP_VERSION_NOT_SUPPORTED',
};

export class IngressServer {
  private readonly http1: Http1Server;
  /** fastify's routes, on the connections the TCP listener handed over. */
  private readonly coreServer: http.Server;
  /**
   * Connections the TCP listener handed over, until they close: coreServer
   * listens on nothing, so node:http does not track them for closeCoreRoutes().
   */
  private readonly handedOver = new Set<Duplex>();

  constructor(private readonly options: IngressServerOptions) {
    // Idle connections live as long as fastify's own would: longer than the usual load balancer's idle timeout.
    this.coreServer = createHandOverServer(options.coreRoutes, 72_000);
    this.http1 = new Http1Server({
      limits: {
        maxHeadBytes: MAX_HEAD_BYTES,
        maxBodyBytes: options.bodyLimitBytes,
        ...(options.mcpBodyLimitBytes !== undefined ? { bodyLimitsByPath: new Map([[MCP_PATH, options.mcpBodyLimitBytes]]) } : {}),
      },
      onRequest: (request, respond) => this.serve(request, respond),
      onBadRequest: (error) => this.badRequest(error),
      handOver: (head) => (isCorePath(head) ? (connection) => this.handOver(connection) : undefined),
      onError: (error) => options.logger.error({ err: error }, 'a request could not be answered'),
    });
  }

  /** Listens for clients; resolves with the URL they use. */
  async listen(host: string, port: number): Promise<string> {
    const address = (await this.http1.listen({ host, port })) as net.AddressInfo;
    const name = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return `http://${name}:${address.port}`;
  }

  /**
   * Stops taking connections and resolves once the answers in progress are out.
   * fastify's routes keep serving meanwhile: a running execution may still call /mcp.
   */
  close(): Promise<void> {
    return this.http1.close();
  }

  /** Stops fastify's routes: the connections handed over end once their answers are out (or after a grace). */
  async closeCoreRoutes(): Promise<void> {
    const handedOver = [...this.handedOver].map((connection) => new Promise<void>((resolve) => connection.once('close', resolve)));
    await drain(Promise.all(handedOver).then(() => undefined), CORE_ROUTES_GRACE_MS);
    for (const connection of this.handedOver) connection.destroy();
  }

  private serve(request: Http1Request, respond: (answer: Http1Answer) => void): void {
    const requestId = HttpIngress.requestId(request.headers);
    // The one request-scoped write of the metrics: counted when answered, like fastify's onResponse hook.
    this.options.ingress
      .handle(
        { method: request.method, url: request.target, path: request.path, query: request.query, headers: request.headers, body: request.body },
        requestId,
      )
      .then((answer) => {
        respond(this.options.scrubber?.active === true ? scrubbedAnswer(answer, this.options.scrubber) : answer);
        this.options.metrics.requests.inc({ app: answer.route.app, route: answer.route.route, status: String(answer.status) });
      })
      // handle() answers every failure itself; this is for a bug past it, which must not take the core down.
      .catch((error: unknown) => {
        this.options.logger.error({ err: error, requestId }, 'a request could not be answered');
        respond({ status: 500, headers: { [REQUEST_ID_HEADER]: requestId } });
      });
  }

  private badRequest(error: HttpRequestError): Http1Answer {
    const answer = badRequestAnswer(error);
    this.options.metrics.requests.inc({ app: '', route: '', status: String(answer.status) });
    return answer;
  }

  private handOver(connection: Duplex): void {
    // fastify's routes refuse, on this connection, every audience the app listener does not serve.
    bindListener(connection, 'app');
    this.handedOver.add(connection);
    connection.once('close', () => this.handedOver.delete(connection));
    this.coreServer.emit('connection', connection);
  }
}

/** The answer to a request that cannot be read, with its code (the connection closes after it). */
export function badRequestAnswer(error: HttpRequestError): Http1Answer {
  const uhlp = new UhlpError(BAD_REQUEST_CODES[error.status], error.message, error.field !== undefined ? { field: error.field } : undefined);
  return errorAnswer(uhlp, HttpIngress.requestId({}));
}

/**
 * The MCP endpoint exactly as fastify routes it, with or without a query: no
 * other spelling (`/mcp/`, `/%6dcp`, an absolute URL) is let through, whatever
 * fastify would make of it.
 */
export function isMcpTarget(target: string): boolean {
  return target === MCP_PATH || target.startsWith(`${MCP_PATH}?`);
}

/** The core's own paths, which no app may take (the definitions validator refuses them as prefixes). */
function isCorePath(head: Http1Head): boolean {
  const path = head.path;
  return RESERVED_PATH_PREFIXES.some((prefix) => path === prefix || (path.startsWith(prefix) && path.charCodeAt(prefix.length) === 0x2f));
}

/**
 * An answer with the secret values the core holds replaced in its body and
 * headers (secret-scrubber.ts), and in a streamed body's bytes as they go, a
 * value split across two chunks included (stream-scrubber.ts).
 */
function scrubbedAnswer<T extends Http1Answer>(answer: T, scrubber: SecretScrubber): T {
  const body = answer.body === undefined ? undefined : typeof answer.body === 'string' ? scrubber.scrub(answer.body) : scrubber.scrubBytes(answer.body);
  const headers = answer.headers !== undefined ? scrubber.scrubValue(answer.headers) : undefined;
  const stream = answer.stream !== undefined ? { ...answer.stream, chunks: scrubbedChunks(answer.stream.chunks, scrubber) } : undefined;
  if (body === answer.body && headers === answer.headers && stream === undefined) return answer;
  return { ...answer, ...(body !== undefined ? { body } : {}), ...(headers !== undefined ? { headers } : {}), ...(stream !== undefined ? { stream } : {}) };
}
