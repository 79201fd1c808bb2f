/**
 * One MCP server whose tools the core federates: a stdio server in the
 * sandboxes of a `runner: mcp` pool, or a remote server over HTTP. Callers
 * never know which: both list tools and call one, within the server's limits,
 * and fail with the server's stable codes.
 */
import { UhlpError } from '../../shared/errors.js';

/** A tool as the server listed it, before the core checked it. */
export interface RawTool {
  readonly name?: unknown;
  readonly description?: unknown;
  readonly inputSchema?: unknown;
  readonly annotations?: unknown;
}

/** What a call answered: the server's tool result, as it sent it. */
export interface FederatedCallResult {
  readonly result: Record<string, unknown>;
  /** What the server did besides answering (stdio servers): dropped by the host. */
  readonly dropped?: { readonly notifications: number; readonly requests: number; readonly garbage: number };
}

export interface FederatedServer {
  /** `app.<name>` or `community.<name>`. */
  readonly id: string;
  /** The longest wait for one call, ms. */
  readonly timeoutMs: number;
  /** The largest answer read for one call, bytes. */
  readonly maxOutputBytes: number;
  listTools(signal: AbortSignal): Promise<RawTool[]>;
  /** `meta`: the request's `_meta` keys of the core's own (the caller's trace context). */
  callTool(name: string, args: Record<string, unknown>, signal: AbortSignal, meta?: Readonly<Record<string, string>>): Promise<FederatedCallResult>;
  close(): Promise<void>;
}

/** A failure of a federated server, with its stable code. */
export function serverFailure(
  code:
    | 'UHLP_MCP_SERVER_UNAVAILABLE'
    | 'UHLP_MCP_SERVER_TIMEOUT'
    | 'UHLP_MCP_SERVER_OUTPUT_TOO_LARGE'
    | 'UHLP_MCP_SERVER_PROTOCOL_ERROR'
    | 'UHLP_MCP_SERVER_CRASHED'
    | 'UHLP_MCP_SERVER_ERROR',
  server: string,
  message: string,
  details: Record<string, unknown> = {},
): UhlpError {
  return new UhlpError(code, `${server}: ${message}`, { server, ...details });
}
