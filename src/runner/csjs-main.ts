/**
 * Entry point of the csjs runner, the program inside every `runner: csjs`
 * sandbox: the shared runner process (runner-process.ts) with the executor
 * that runs published cs-js bundles in V8 isolates (csjs-executor.ts). It is
 * the only runner started with `--allow-addons` (isolated-vm is a native
 * addon), and it imports no app script: no code of an app runs in its Node
 * realm, only inside isolates. It mounts no definitions: bundles come from the
 * core over MCP.
 *
 *   node --allow-addons dist/runner/csjs-main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
 *                       [--work-dir DIR] [--concurrency N] [--mcp-socket PATH] [--exit-on-stdin-close]
 */
import { createCsjsExecutor } from './csjs-executor.js';
import { runRunnerProgram } from './runner-process.js';

runRunnerProgram({
  name: 'csjs-runner',
  readsDefinitions: false,
  createExecutor: () => createCsjsExecutor(),
});
