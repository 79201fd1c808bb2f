/**
 * What the ingress needs from the MCP server: a token per execution, and the
 * execution's tool calls when it ends.
 */
import type { GrantBinding } from './mcp-token-service.js';
import type { McpExecutionRecord } from './tool-call-recorder.js';

export interface McpExecutions {
  /** Mints the token of one execution, valid for `ttlMs` unless ended sooner. */
  beginExecution(binding: GrantBinding, ttlMs: number): string;
  /**
   * Revokes the token, drops the execution's scratch directory, and returns what
   * the execution did through MCP (empty when the token was already gone).
   */
  endExecution(token: string): McpExecutionRecord;
}
