/**
 * What the core and the mcp-host runner (one stdio MCP server per sandbox of a
 * `runner: mcp` pool) say over the sandbox's socket: `POST /mcp` with one call,
 * answered 200 with the server's result, its JSON-RPC error, or the host's own
 * refusal (a stable code), and what the host saw the server do besides answering.
 */

export const MCP_HOST_PATH = '/mcp';

/** One call the core asks of the server. */
export interface McpHostCall {
  readonly method: 'tools/list' | 'tools/call';
  readonly params: Record<string, unknown>;
  /** How long the host waits for the server's answer, ms. */
  readonly timeoutMs: number;
  /** Largest answer line the host reads from the server, bytes. */
  readonly maxOutputBytes: number;
}

/** How a call ended on the host's side when the server gave no usable answer. */
export type McpHostFailure = 'UHLP_MCP_SERVER_TIMEOUT' | 'UHLP_MCP_SERVER_OUTPUT_TOO_LARGE' | 'UHLP_MCP_SERVER_PROTOCOL_ERROR';

export interface McpHostAnswer {
  /** The server's result, when it answered one. */
  readonly result?: Record<string, unknown>;
  /** The server's JSON-RPC error, when it answered one. */
  readonly rpcError?: { readonly code: number; readonly message: string };
  /** The host's refusal, when the server gave nothing usable. */
  readonly failure?: { readonly code: McpHostFailure; readonly message: string };
  /** What the server did during the call besides answering: dropped, never passed on. */
  readonly dropped: {
    /** Notifications (progress, logging, list changes). */
    readonly notifications: number;
    /** Requests it sent back (sampling, roots, elicitation), each answered with an error. */
    readonly requests: number;
    /** Lines that were not JSON-RPC, or answers to requests nobody made. */
    readonly garbage: number;
  };
}

/** The protocol revision the host speaks with a stdio server, as the server accepted it. */
export interface McpHostHealth {
  readonly status: 'ok';
  readonly busy: boolean;
  readonly running: number;
  readonly protocolVersion: string;
}
