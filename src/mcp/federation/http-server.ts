/**
 * A remote MCP server over streamable HTTP, reached with the SDK v2 client
 * (which finds the server's revision: `server/discover` for 2026-07-28, the
 * `initialize` handshake for 2025-11-25 and before) through the SSRF guard:
 * every request, redirect and resolved address is checked, and answers are
 * read up to the server's output limit. Its headers come from Secrets, never
 * from the app's files. One client per app and server: no session or
 * connection of the server's is shared between apps.
 */
import type { EgressCredential } from '../../net/egress-credentials.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { guardedFetch } from '../../net/guarded-fetch.js';
import { isUhlpError } from '../../shared/errors.js';
import { serverFailure, type FederatedCallResult, type FederatedServer, type RawTool } from './federated-server.js';
import { uncheckedOutputSchemas } from './unchecked-output-schemas.js';

export interface HttpServerOptions {
  readonly id: string;
  readonly url: string;
  /**
   * The server's credential headers, read anew for every request (a rotated secret is used from the next one
   * on) and added by the guarded fetch after its checks, like a web fetch's (egress-credentials.ts).
   * @defaultValue none
   */
  readonly credentials?: () => readonly EgressCredential[];
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  /** host:port pairs the server may resolve to although private (tests, internal services). @defaultValue [] */
  readonly allowPrivate?: readonly string[];
}

export function createHttpServer(options: HttpServerOptions): FederatedServer {
  const { id } = options;
  const host = new URL(options.url).hostname;
  let tooLarge = false;

  /** fetch for the SDK's transport: the guarded fetch, whole answers up to the limit. */
  const fetchThroughGuard = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const headers: Record<string, string> = {};
    new Headers(init?.headers).forEach((value, name) => {
      headers[name] = value;
    });
    const response = await guardedFetch(
      {
        url,
        method: init?.method ?? 'GET',
        headers,
        ...(typeof init?.body === 'string' ? { body: init.body } : {}),
        ...(init?.signal ? { signal: init.signal } : {}),
      },
      {
        allowHosts: [host],
        methods: ['GET', 'POST', 'DELETE'],
        allowPrivate: options.allowPrivate ?? [],
        timeoutMs: options.timeoutMs,
        maxBodyBytes: options.maxOutputBytes,
        maxRedirects: 0,
        ...(options.credentials !== undefined ? { inject: options.credentials() } : {}),
      },
    );
    if (response.truncated) {
      tooLarge = true;
      throw serverFailure('UHLP_MCP_SERVER_OUTPUT_TOO_LARGE', id, `the answer is over ${options.maxOutputBytes} bytes`);
    }
    return new Response(response.status === 202 || response.status === 204 ? null : new Uint8Array(response.body), { status: response.status, headers: response.headers });
  };

  let connected: Promise<Client> | undefined;
  const client = (): Promise<Client> =>
    (connected ??= (async () => {
      // The server's outputSchemas are never compiled here: see unchecked-output-schemas.ts.
      const sdk = new Client({ name: 'uhlp-core', version: '0.1.0' }, { jsonSchemaValidator: uncheckedOutputSchemas, versionNegotiation: { mode: 'auto', probe: { timeoutMs: options.timeoutMs } } });
      await sdk.connect(new StreamableHTTPClientTransport(new URL(options.url), { fetch: fetchThroughGuard }));
      return sdk;
    })().catch((error: unknown) => {
      connected = undefined;
      throw isUhlpError(error) ? error : serverFailure('UHLP_MCP_SERVER_UNAVAILABLE', id, `cannot connect: ${message(error)}`);
    }));

  async function guarded<T>(method: string, run: (sdk: Client) => Promise<T>): Promise<T> {
    const sdk = await client();
    tooLarge = false;
    try {
      return await run(sdk);
    } catch (error) {
      if (isUhlpError(error)) throw error;
      if (tooLarge) throw serverFailure('UHLP_MCP_SERVER_OUTPUT_TOO_LARGE', id, `the answer is over ${options.maxOutputBytes} bytes`);
      const text = message(error);
      if (/timed? ?out|timeout/i.test(text)) throw serverFailure('UHLP_MCP_SERVER_TIMEOUT', id, `${method}: no answer within ${options.timeoutMs} ms`);
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'number') throw serverFailure('UHLP_MCP_SERVER_ERROR', id, `${method}: ${text}`, { rpcCode: code });
      // A dropped connection or a broken session: the next call connects again.
      connected = undefined;
      throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', id, `${method}: ${text}`);
    }
  }

  return {
    id,
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    async listTools(signal): Promise<RawTool[]> {
      return guarded('tools/list', async (sdk) => (await sdk.listTools(undefined, { signal, timeout: options.timeoutMs })).tools as RawTool[]);
    },
    async callTool(name, args, signal, meta): Promise<FederatedCallResult> {
      const result = await guarded('tools/call', (sdk) => sdk.callTool({ name, arguments: args, ...(meta !== undefined ? { _meta: { ...meta } } : {}) }, { signal, timeout: options.timeoutMs }));
      return { result: result as Record<string, unknown> };
    },
    async close() {
      const sdk = await connected?.catch(() => undefined);
      connected = undefined;
      await sdk?.close().catch(() => undefined);
    },
  };
}

function message(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).slice(0, 300);
}
