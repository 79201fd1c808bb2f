/**
 * Entry point of the jit-runner, the program inside every JIT sandbox (a child
 * process of the core, or a container): the shared runner process
 * (runner-process.ts) with the executor that imports and calls component
 * scripts from the mounted revisions.
 *
 *   node dist/runners/jit/main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080 --definitions DIR [--definitions-via-mcp]
 *                            [--work-dir DIR] [--concurrency N] [--niceness N]
 *                            [--mcp-socket PATH] [--exit-on-stdin-close]
 */
import { createJitExecutor } from './jit-executor.js';
import { runRunnerProgram } from '../kit/runner-process.js';

runRunnerProgram({
  name: 'jit-runner',
  readsDefinitions: true,
  createExecutor: ({ definitionsRoot, workDir, definitionsViaMcp, kept }) => createJitExecutor({ definitionsRoot: definitionsRoot!, workDir, definitionsViaMcp, ...(kept !== undefined ? { kept } : {}) }),
});
