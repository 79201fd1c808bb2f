/**
 * A stdio MCP server run in the sandboxes of a `runner: mcp` pool (the mcp-host
 * in each, src/runners/mcp-host/): every call takes a sandbox from the pool,
 * sends one call over its socket and gives it back. A server that does not
 * answer in time, or dies during the call, loses its sandbox, and the pool
 * starts a fresh one: the next call finds a server that is up.
 */
import type { McpHostAnswer, McpHostCall } from '../../contract/mcp-host-wire.js';
import { SandboxTransportError } from '../../sandbox/sandbox-client.js';
import type { PoolStrategy } from '../../sandbox/pool-strategy.js';
import { isUhlpError } from '../../shared/errors.js';
import { serverFailure, type FederatedCallResult, type FederatedServer, type RawTool } from './federated-server.js';

export interface SandboxServerOptions {
  readonly id: string;
  /** The pool, looked up at each call: a changed pool spec replaces it. */
  pool(): PoolStrategy | undefined | Promise<PoolStrategy | undefined>;
  /** Why there is no pool (its server's package installing, or failed to install). @defaultValue none */
  problem?(): { readonly code: string; readonly message: string } | undefined;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
}

/** Time the core gives the host beyond the call's own timeout to say that it timed out. */
const HOST_MARGIN_MS = 1_000;
/** Sandboxes a call tries when each refuses the connection (died idle). */
const CONNECT_ATTEMPTS = 3;

export function createSandboxServer(options: SandboxServerOptions): FederatedServer {
  const { id } = options;

  async function send(method: McpHostCall['method'], params: Record<string, unknown>): Promise<McpHostAnswer> {
    // A sandbox that died idle (its pool not told yet) refuses the connection: the call never reached a
    // server, so it goes to another sandbox. Anything the server may have seen is never sent twice.
    for (let attempt = 1; ; attempt++) {
      try {
        return await sendOnce(method, params);
      } catch (error) {
        if (!(error instanceof SandboxTransportError) || error.failure !== 'connect' || attempt >= CONNECT_ATTEMPTS) {
          throw error instanceof SandboxTransportError ? transportFailure(error, method) : error;
        }
      }
    }
  }

  function transportFailure(error: SandboxTransportError, method: string): Error {
    if (error.failure === 'timeout') return serverFailure('UHLP_MCP_SERVER_TIMEOUT', id, `no answer within ${options.timeoutMs} ms`);
    if (error.failure === 'too-large') return serverFailure('UHLP_MCP_SERVER_OUTPUT_TOO_LARGE', id, 'the answer is too large');
    return serverFailure('UHLP_MCP_SERVER_CRASHED', id, `the server went away during ${method}`);
  }

  async function sendOnce(method: McpHostCall['method'], params: Record<string, unknown>): Promise<McpHostAnswer> {
    const pool = await options.pool();
    if (pool === undefined) {
      // The caller learns why, not only that: the package's failure as the log and /readyz say it.
      const problem = options.problem?.();
      throw serverFailure('UHLP_MCP_SERVER_UNAVAILABLE', id, problem !== undefined ? `its pool is not running: ${problem.message}` : 'its pool is not running', problem !== undefined ? { cause: problem.code } : {});
    }
    let lease;
    try {
      lease = await pool.acquire();
    } catch (error) {
      throw serverFailure('UHLP_MCP_SERVER_UNAVAILABLE', id, isUhlpError(error) ? error.message : 'no sandbox', isUhlpError(error) ? { cause: error.code } : {});
    }
    const call: McpHostCall = { method, params, timeoutMs: options.timeoutMs, maxOutputBytes: options.maxOutputBytes };
    try {
      const response = await lease.sandbox.client.mcp(JSON.stringify(call), options.timeoutMs + HOST_MARGIN_MS);
      if (response.status !== 200) {
        pool.release(lease, 'bad-response');
        throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', id, `the host answered HTTP ${response.status}`);
      }
      const answer = JSON.parse(response.body.toString('utf8')) as McpHostAnswer;
      // A server that did not answer in time may be stuck: its sandbox goes, and a fresh one takes its place.
      pool.release(lease, answer.failure?.code === 'UHLP_MCP_SERVER_TIMEOUT' ? 'timeout' : 'ok');
      return answer;
    } catch (error) {
      if (isUhlpError(error)) throw error;
      if (error instanceof SandboxTransportError) {
        pool.release(lease, error.failure === 'timeout' ? 'timeout' : 'crash');
        throw error;
      }
      pool.release(lease, 'bad-response');
      throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', id, 'the host answered no valid JSON');
    }
  }

  function unwrap(answer: McpHostAnswer, method: string): Record<string, unknown> {
    if (answer.failure !== undefined) throw serverFailure(answer.failure.code, id, answer.failure.message);
    if (answer.rpcError !== undefined) throw serverFailure('UHLP_MCP_SERVER_ERROR', id, `${method}: ${answer.rpcError.message}`, { rpcCode: answer.rpcError.code });
    if (answer.result === undefined) throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', id, `${method}: no result`);
    return answer.result;
  }

  return {
    id,
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    async listTools(): Promise<RawTool[]> {
      const tools: RawTool[] = [];
      let cursor: string | undefined;
      // A server that pages forever is cut: 8 pages of tools is more than any model is offered.
      for (let page = 0; page < 8; page++) {
        const result = unwrap(await send('tools/list', cursor !== undefined ? { cursor } : {}), 'tools/list');
        if (!Array.isArray(result['tools'])) throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', id, 'tools/list answered no tools array');
        tools.push(...(result['tools'] as RawTool[]));
        cursor = typeof result['nextCursor'] === 'string' ? result['nextCursor'] : undefined;
        if (cursor === undefined) break;
      }
      return tools;
    },
    async callTool(name, args, _signal, meta): Promise<FederatedCallResult> {
      const answer = await send('tools/call', { name, arguments: args, ...(meta !== undefined ? { _meta: { ...meta } } : {}) });
      return { result: unwrap(answer, 'tools/call'), dropped: answer.dropped };
    },
    async close() {
      // The pool belongs to the sandbox manager (app pools) or to the federation (community pools).
    },
  };
}
