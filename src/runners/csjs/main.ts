/**
 * Entry point of the csjs runner, the program inside every `runner: csjs`
 * sandbox: the shared runner process (runner-process.ts) with the executor
 * that runs published cs-js bundles in V8 isolates (csjs-executor.ts). It is
 * the only runner started with `--allow-addons` (isolated-vm is a native
 * addon), and it imports no app script: no code of an app runs in its Node
 * realm, only inside isolates. It mounts no definitions: bundles come from the
 * core over MCP.
 *
 *   node --allow-addons dist/runners/csjs/main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080
 *                       [--work-dir DIR] [--concurrency N] [--mcp-socket PATH] [--exit-on-stdin-close]
 */
import { createCsjsExecutor } from './csjs-executor.js';
import { runRunnerProgram } from '../kit/runner-process.js';

// isolated-vm loads its addon through node-gyp-build, which reads /etc/alpine-release to
// choose between its glibc and musl builds; the permission model refuses that read (only /app
// and /work are granted). A sandbox's root carries glibc (the images' and bubblewrap's alike,
// and only glibc builds are staged, images/runner-files.ts), so the runner says so itself.
process.env.LIBC ??= 'glibc';

runRunnerProgram({
  name: 'csjs-runner',
  readsDefinitions: false,
  createExecutor: () => createCsjsExecutor(),
});
