/**
 * What a runner does with one /execute request once its server has checked it
 * against the contract: the jit-runner imports and calls a script
 * (jit-executor.ts), the llm-orchestrator renders prompts and talks to the
 * model (src/orchestrator). The runner server owns everything else: HTTP,
 * request ids, concurrency, metrics, and turning a throw into an error answer.
 */
import type { ExecuteRequest } from '../../contract/execute-contract.js';
import type { ScriptResult } from './script-result.js';
import type { ExecutionTools } from './tools-client.js';

/**
 * Runs one execution. `tools` calls the core's MCP endpoint with the
 * execution's token; what the executor resolves with is the answer, and what
 * it throws is mapped by `resultFromThrown`.
 */
export type Executor = ((request: ExecuteRequest, tools: ExecutionTools) => Promise<ScriptResult>) & {
  /**
   * An execution the runner sends itself before it counts as ready (runner-server.ts warmUp), that
   * goes the whole way a claimed pod's first request goes with this executor, so that request
   * finds every part of it compiled. @defaultValue none: the runner warms its own request path only
   */
  warmUpRequest?: ExecuteRequest;
};
