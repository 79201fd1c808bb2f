/** The execution the core's MCP tests hand their clients a token for, and how they read a refused call. */
import { expect } from 'vitest';
import type { CoreMcpServer } from '../../src/mcp/core-mcp-server.js';
import { ToolCallError } from '../../src/runners/kit/tools-client.js';

/** A token for an execution of app-a granted kv (`ctr:` get and set) and the model `m`. */
export function mintTestExecution(mcp: CoreMcpServer): string {
  return mcp.beginExecution(
    {
      appId: 'app-a',
      componentId: 'c',
      requestId: 'r1',
      revision: 'abc1234',
      capabilities: { kv: { prefixes: ['ctr:'], ops: ['get', 'set'] }, llm: { models: ['m'], maxTokens: 8 } },
      configuration: { who: 'me' },
    },
    60_000,
  );
}

/** The ToolCallError `promise` fails with; fails the test when it does not. */
export async function toolCallRefusal(promise: Promise<unknown>): Promise<ToolCallError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ToolCallError);
    return error as ToolCallError;
  }
  throw new Error('the call did not throw');
}
