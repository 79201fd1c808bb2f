/**
 * Entry point of the llm-orchestrator, the program inside every sandbox of a
 * pool with `runner: llm` (a child process of the core, or a container): the
 * shared runner process (src/runners/kit/runner-process.ts) with the executor that
 * runs LLM tasks and drives workflow runs (workflow-executor.ts). It reads
 * app files through MCP, so it takes no --definitions.
 *
 *   node dist/runners/llm-orchestrator/main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
 *                                  [--work-dir DIR] [--concurrency N] [--niceness N]
 *                                  [--mcp-socket PATH] [--exit-on-stdin-close]
 */
import { runRunnerProgram } from '../kit/runner-process.js';
import { createLlmExecutor } from './llm-executor.js';
import { createWorkflowExecutor } from './workflow/workflow-executor.js';

runRunnerProgram({
  name: 'llm-orchestrator',
  readsDefinitions: false,
  createExecutor: () => {
    const llm = createLlmExecutor();
    const workflow = createWorkflowExecutor();
    // A WORKFLOW component's execution names its run; every other one is an LLM task.
    return (request, tools) => (request.context.taskDetails?.handler === 'WORKFLOW' ? workflow(request, tools) : llm(request, tools));
  },
});
