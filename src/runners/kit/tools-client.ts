/**
 * `ctx.tools` for component scripts: `await ctx.tools.call(name, args)` calls a
 * core MCP tool with the execution's token and answers the tool's structured
 * content; a tool error is thrown as an Error whose `code` (and `status`,
 * `details`) are the core's, so an uncaught refusal becomes the script's error
 * answer with the right status.
 *
 * It speaks the MCP 2026-07-28 revision, which is stateless: one `tools/call`
 * is one JSON-RPC POST carrying its protocol version, client capabilities and
 * client identity in `_meta` and the `Mcp-Method` / `Mcp-Name` headers; no
 * initialize round trip, no discovery (the core is known to serve this
 * revision), and the runner carries no MCP SDK (the image stays small). The calls are counted per tool for the /execute
 * response's `metrics.mcp_calls`.
 */
import { McpCallTotals, type McpCallSummary } from '../../contract/mcp-call-totals.js';
import { errorStatus, type ErrorCode } from '../../shared/errors.js';
import type { SocketPost } from './unix-socket-fetch.js';

/** The protocol revision the requests claim: the current one, which the core serves. */
export const MCP_PROTOCOL_VERSION = '2026-07-28';

/** The per-request `_meta` envelope of the 2026-07-28 revision; the runner asks for no client features. */
const ENVELOPE = Object.freeze({
  'io.modelcontextprotocol/protocolVersion': MCP_PROTOCOL_VERSION,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'uhlp-runner', version: '0.1.0' },
});

export interface ToolsClient {
  call(name: string, args?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

/** One tool of the MCP `tools/list` answer: the tools of the execution's app. */
export interface ListedTool {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the tool's arguments. */
  readonly inputSchema: Record<string, unknown>;
}

export interface ToolsClientOptions {
  /** `context.mcp_endpoint`. */
  readonly endpoint: string;
  /** `context.mcp_token`; without it every call fails UHLP_MCP_UNAUTHORIZED as the core would. */
  readonly token: string | undefined;
  /** @defaultValue globalThis.fetch */
  readonly fetch?: typeof fetch;
  /**
   * Sends the POSTs instead of `fetch`: the core's Unix socket (unix-socket-fetch.ts),
   * with no WHATWG Request, Headers or Response per call.
   * @defaultValue none: `fetch` sends them
   */
  readonly post?: SocketPost;
  /** When the runner took the execution's request (performance.now()): tool call timings are offsets from it. @defaultValue when the client was made */
  readonly startedAt?: number;
}

/** Tool calls timed per execution, at most: a script that loops over a tool keeps its first ones. */
const MAX_TIMED_CALLS = 256;

/**
 * A tool failure as scripts see it: the core's refusal with the code, status and
 * details the core answered (passed on as they came), or the client's own
 * failure (`ToolCallError.of`), whose status is the registry's.
 */
export class ToolCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status?: number,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'ToolCallError';
  }

  /** A failure of the call itself (the endpoint unreachable, a malformed answer), with the registry's status for `code`. */
  static of(code: ErrorCode, message: string, details?: unknown): ToolCallError {
    return new ToolCallError(code, message, errorStatus(code), details);
  }
}

/** A client that also lists the app's tools (the llm-orchestrator offers them to the model). */
export interface McpToolsClient extends ToolsClient {
  listTools(): Promise<ListedTool[]>;
}

/** One execution's client, and what it recorded. */
export class ExecutionTools implements McpToolsClient {
  private readonly totals = new McpCallTotals();
  private nextId = 1;
  /** The endpoint's path and query, for `post`; read on the first call. */
  private target: string | undefined;
  private readonly startedAt: number;
  private readonly timed: Array<{ tool: string; start_ms: number; duration_ms: number; outcome: string }> = [];

  constructor(private readonly options: ToolsClientOptions) {
    this.startedAt = options.startedAt ?? performance.now();
  }

  async call(name: string, args: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    if (typeof name !== 'string' || name === '') throw new TypeError('ctx.tools.call needs a tool name');
    const started = performance.now();
    let usage: { prompt: number; completion: number } | undefined;
    let outcome = 'ok';
    try {
      const result = await this.post(name, args);
      usage = tokenUsage(result);
      return result;
    } catch (error) {
      outcome = error instanceof ToolCallError ? error.code.slice(0, 64) : 'error';
      throw error;
    } finally {
      const ended = performance.now();
      this.totals.add(name, ended - started, usage);
      if (this.timed.length < MAX_TIMED_CALLS) this.timed.push({ tool: name.slice(0, 256), start_ms: ms(started - this.startedAt), duration_ms: ms(ended - started), outcome });
    }
  }

  /** Each tool call's start (from the request's arrival), duration and outcome, for `metrics.timings.tool_calls`. */
  timings(): Array<{ tool: string; start_ms: number; duration_ms: number; outcome: string }> {
    return this.timed;
  }

  /** ms from the request's arrival to `at` (a performance.now() reading). */
  offset(at: number): number {
    return ms(at - this.startedAt);
  }

  /** Calls per tool, for `metrics.mcp_calls`; empty when the script called none. */
  metrics(): McpCallSummary[] {
    return this.totals.summary();
  }

  /**
   * The tools the execution's app may call, with their argument schemas (MCP
   * `tools/list`). Not counted in `metrics()`: it is no tool call.
   */
  async listTools(): Promise<ListedTool[]> {
    const result = await this.rpc('tools/list', {}, 'tools/list', undefined);
    const tools = result?.['tools'];
    if (!Array.isArray(tools)) throw ToolCallError.of('UHLP_MCP_CALL_FAILED', 'tools/list: the answer has no tools');
    return tools.flatMap((tool: unknown): ListedTool[] => {
      const entry = tool as { name?: unknown; description?: unknown; inputSchema?: unknown };
      if (typeof entry?.name !== 'string' || typeof entry.inputSchema !== 'object' || entry.inputSchema === null) return [];
      return [{ name: entry.name, inputSchema: entry.inputSchema as Record<string, unknown>, ...(typeof entry.description === 'string' ? { description: entry.description } : {}) }];
    });
  }

  /** One JSON-RPC request to the endpoint; its `result`, or a ToolCallError naming `label`. */
  private async rpc(method: string, params: Record<string, unknown>, label: string, name: string | undefined): Promise<Record<string, unknown> | undefined> {
    if (this.options.token === undefined) throw ToolCallError.of('UHLP_MCP_UNAUTHORIZED', 'this execution has no MCP token');
    const id = this.nextId++;
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${this.options.token}`,
      'mcp-protocol-version': MCP_PROTOCOL_VERSION,
      'mcp-method': method,
      ...(name !== undefined ? { 'mcp-name': headerSafe(name) } : {}),
    };
    const payload = JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: ENVELOPE } });
    let status: number;
    let text: string;
    try {
      if (this.options.post !== undefined) {
        this.target ??= requestTarget(this.options.endpoint);
        const answer = await this.options.post(this.target, headers, payload);
        status = answer.status;
        text = answer.body.toString('utf8');
      } else {
        const response = await (this.options.fetch ?? fetch)(this.options.endpoint, { method: 'POST', headers, body: payload });
        status = response.status;
        text = await response.text();
      }
    } catch (error) {
      throw ToolCallError.of('UHLP_MCP_CALL_FAILED', `MCP endpoint unreachable: ${error instanceof Error ? error.message : String(error)}`);
    }
    const body = parseJson(text);
    if (status === 401) {
      const message = typeof body?.['message'] === 'string' ? body['message'] : 'unauthorized';
      throw ToolCallError.of('UHLP_MCP_UNAUTHORIZED', message);
    }
    // The core refused the request itself (a body over the endpoint's limit): its code and status, as a tool's refusal would be.
    const refusal = body?.['code'];
    if (status >= 400 && status < 500 && typeof refusal === 'string' && refusal.startsWith('UHLP_')) {
      throw new ToolCallError(refusal, `${label}: ${typeof body?.['message'] === 'string' ? body['message'] : `HTTP ${status}`}`, status, body?.['details']);
    }
    const rpcError = body?.['error'] as { message?: unknown } | undefined;
    if (status < 200 || status > 299 || body === undefined || rpcError !== undefined) {
      const why = typeof rpcError?.message === 'string' ? rpcError.message : `HTTP ${status}`;
      throw ToolCallError.of('UHLP_MCP_CALL_FAILED', `${label}: ${why}`);
    }
    const result = body['result'];
    return typeof result === 'object' && result !== null && !Array.isArray(result) ? (result as Record<string, unknown>) : undefined;
  }

  private async post(name: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const result = (await this.rpc('tools/call', { name, arguments: args }, name, name)) as { isError?: unknown; structuredContent?: unknown } | undefined;
    const content = result?.structuredContent;
    if (typeof content !== 'object' || content === null || Array.isArray(content)) {
      throw ToolCallError.of('UHLP_MCP_CALL_FAILED', `${name}: the result has no structured content`);
    }
    const structured = content as Record<string, unknown>;
    if (result?.isError === true) {
      throw new ToolCallError(
        typeof structured['code'] === 'string' ? structured['code'] : 'UHLP_MCP_CALL_FAILED',
        typeof structured['message'] === 'string' ? structured['message'] : `${name} failed`,
        typeof structured['status'] === 'number' ? structured['status'] : undefined,
        structured['details'],
      );
    }
    return structured;
  }

}

/**
 * A header carries the tool name as it is when it is printable ASCII; the core
 * compares it with the body's name, so a name it cannot carry is refused there.
 */
function headerSafe(name: string): string {
  return /^[\x20-\x7e]*$/.test(name) ? name : encodeURIComponent(name);
}

/** The last endpoint's target: every execution has a client of its own, and all of a runner's name the same endpoint. */
let lastTarget: { readonly endpoint: string; readonly target: string } | undefined;

/** The request target of `endpoint` (its path and query): a Unix socket has no host to send it to. */
function requestTarget(endpoint: string): string {
  if (endpoint === lastTarget?.endpoint) return lastTarget.target;
  const url = new URL(endpoint);
  const target = `${url.pathname}${url.search}`;
  lastTarget = { endpoint, target };
  return target;
}

function parseJson(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** `core.llm.generate` answers `usage: {prompt, completion}`; that is what the metrics count. */
function tokenUsage(content: Record<string, unknown>): { prompt: number; completion: number } | undefined {
  const usage = content['usage'] as { prompt?: unknown; completion?: unknown } | undefined;
  if (typeof usage?.prompt === 'number' && typeof usage.completion === 'number') return { prompt: usage.prompt, completion: usage.completion };
  return undefined;
}

/** Microsecond precision, never negative. */
function ms(value: number): number {
  return Math.max(0, Math.round(value * 1000) / 1000);
}
