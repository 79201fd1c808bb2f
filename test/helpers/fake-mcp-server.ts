/**
 * A stand-in for the core's MCP endpoint, for tests of runners through their
 * drivers: JSON-RPC over HTTP on a Unix socket (mounted into sandboxes as the
 * core's is) and on a loopback port, answering `tools/list` and `tools/call`
 * the way the core does (structured content; tool errors as `isError` with
 * `{code, message, status, details}`). App files are served as
 * core.state.getDefinitionFileContent serves them; other tools by handlers.
 * It checks the bearer token and records every call.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const FAKE_MCP_TOKEN = 'fake-mcp-token';

/** A refusal of a tool, answered as the core answers its UhlpErrors. */
export class FakeToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details?: unknown,
  ) {
    super(message);
  }
}

export type FakeToolHandler = (args: Record<string, unknown>) => Record<string, unknown> | Promise<Record<string, unknown>>;

export interface FakeMcpServerOptions {
  /** App files by app-relative path, at `revision`. */
  readonly files?: Readonly<Record<string, string>>;
  readonly revision: string;
  /** Tool handlers by tool name (core.llm.generate, core.kv.get, ...). */
  readonly tools?: Readonly<Record<string, FakeToolHandler>>;
  /** What tools/list answers. @defaultValue every tool with a handler, with an open object schema */
  readonly listed?: ReadonlyArray<{ name: string; description?: string; inputSchema: Record<string, unknown> }>;
  /** Address the TCP listener binds (pods reach the host at the node's bridge address). @defaultValue 127.0.0.1 */
  readonly tcpHost?: string;
}

export interface FakeMcpServer {
  /** The socket to give drivers as `mcpSocket`. */
  readonly socketPath: string;
  /** `http://<tcpHost>:<port>/mcp`, for runners that reach MCP over TCP. */
  readonly url: string;
  readonly calls: Array<{ name: string; args: Record<string, unknown> }>;
  /** The largest number of tools/call requests that were in flight at once. */
  readonly maxInFlight: number;
  close(): Promise<void>;
}

export async function startFakeMcpServer(options: FakeMcpServerOptions): Promise<FakeMcpServer> {
  const calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  let inFlight = 0;
  let maxInFlight = 0;

  const handle = async (body: { id?: unknown; method?: unknown; params?: { name?: unknown; arguments?: unknown } }): Promise<unknown> => {
    if (body.method === 'tools/list') {
      const listed = options.listed ?? Object.keys(options.tools ?? {}).map((name) => ({ name, inputSchema: { type: 'object' } }));
      return { tools: listed };
    }
    if (body.method !== 'tools/call' || typeof body.params?.name !== 'string') throw new Error(`unexpected method ${String(body.method)}`);
    const name = body.params.name;
    const args = (body.params.arguments ?? {}) as Record<string, unknown>;
    calls.push({ name, args });
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      const content = await runTool(name, args);
      return { content: [{ type: 'text', text: JSON.stringify(content) }], structuredContent: content };
    } catch (error) {
      const refusal = error instanceof FakeToolError ? error : new FakeToolError('UHLP_INTERNAL', (error as Error).message, 500);
      const content = { code: refusal.code, message: refusal.message, status: refusal.status, ...(refusal.details !== undefined ? { details: refusal.details } : {}) };
      return { isError: true, content: [{ type: 'text', text: refusal.message }], structuredContent: content };
    } finally {
      inFlight--;
    }
  };

  const runTool = async (name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> => {
    if (name === 'core.state.getDefinitionFileContent') {
      const file = String(args['path']);
      const content = options.files?.[file];
      if (content === undefined) throw new FakeToolError('UHLP_DEFINITION_FILE_NOT_FOUND', `no file "${file}"`, 404, { path: file });
      return { content, encoding: 'utf8', revision: options.revision };
    }
    const handler = options.tools?.[name];
    if (!handler) throw new FakeToolError('UHLP_MCP_TOOL_NOT_FOUND', `no tool ${name}`, 404);
    return handler(args);
  };

  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const answer = (status: number, value: unknown): void => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(value));
      };
      if (request.method !== 'POST' || request.url !== '/mcp') return answer(404, { error: 'not found' });
      if (request.headers.authorization !== `Bearer ${FAKE_MCP_TOKEN}`) return answer(401, { code: 'UHLP_MCP_UNAUTHORIZED', message: 'bad token' });
      let body: { id?: unknown };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id?: unknown };
      } catch {
        return answer(400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      }
      handle(body).then(
        (result) => answer(200, { jsonrpc: '2.0', id: body.id, result }),
        (error: Error) => answer(200, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: error.message } }),
      );
    });
  });

  const dir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-mcp-'));
  // Container runners run as another uid: they must reach the directory and connect to the socket.
  await chmod(dir, 0o755);
  const socketPath = path.join(dir, 'mcp.sock');
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  await chmod(socketPath, 0o666);
  const tcp = http.createServer(server.listeners('request')[0] as http.RequestListener);
  const tcpHost = options.tcpHost ?? '127.0.0.1';
  await new Promise<void>((resolve) => tcp.listen(0, tcpHost, resolve));

  return {
    socketPath,
    url: `http://${tcpHost}:${(tcp.address() as AddressInfo).port}/mcp`,
    calls,
    get maxInFlight() {
      return maxInFlight;
    },
    async close() {
      for (const s of [server, tcp]) s.closeAllConnections();
      await Promise.all([server, tcp].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
      await rm(dir, { recursive: true, force: true });
    },
  };
}
