/**
 * A remote MCP server of the 2025-11-25 revision written by hand, on a loopback
 * port: JSON answers to `initialize`, `tools/list` and `tools/call`, `-32601`
 * to anything else (the SDK client's `server/discover` probe among them). No
 * SDK server is used on purpose: an SDK server checks its own answers (against
 * its tools' outputSchemas) in the test's process, and a hostile server is
 * one that sends what no SDK server would.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RawMcpServerOptions {
  /** What tools/list answers. */
  readonly tools: ReadonlyArray<Record<string, unknown>>;
  /** The result of a tools/call. @defaultValue a text content naming the tool */
  call?(name: string, args: unknown): Record<string, unknown>;
}

export interface RawMcpServer {
  /** `http://127.0.0.1:<port>/mcp`. */
  readonly url: string;
  /** `127.0.0.1:<port>`, for the SSRF guard's allowPrivate. */
  readonly hostPort: string;
  /** The tools/call names received. */
  readonly calls: string[];
  /** The Authorization header of every request, in order. */
  readonly authorizations: Array<string | undefined>;
  close(): Promise<void>;
}

export async function startRawMcpServer(options: RawMcpServerOptions): Promise<RawMcpServer> {
  const calls: string[] = [];
  const authorizations: Array<string | undefined> = [];
  const answer = (message: { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } }): unknown => {
    switch (message.method) {
      case 'initialize':
        return { jsonrpc: '2.0', id: message.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1.0.0' } } };
      case 'tools/list':
        return { jsonrpc: '2.0', id: message.id, result: { tools: options.tools } };
      case 'tools/call': {
        const name = String(message.params?.name);
        calls.push(name);
        return { jsonrpc: '2.0', id: message.id, result: options.call?.(name, message.params?.arguments) ?? { content: [{ type: 'text', text: `called ${name}` }] } };
      }
      default:
        return { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } };
    }
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      authorizations.push(req.headers.authorization);
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const message = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown; method?: unknown };
      // A notification (no id) is accepted with no body.
      if (message.id === undefined) return void res.writeHead(202).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(message)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    hostPort: `127.0.0.1:${port}`,
    calls,
    authorizations,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
