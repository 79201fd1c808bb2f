/**
 * Entry point of the jit-runner, the program inside every JIT sandbox (a child
 * process of the core, or a container). It listens on a Unix socket or a TCP
 * port and prints one JSON line `{"event":"ready"}` to stdout once it accepts
 * requests, which is what drivers wait for.
 *
 *   node dist/runner/main.js --listen unix:/run/sb.sock|tcp:0.0.0.0:8080 --definitions DIR
 *                            [--work-dir DIR] [--concurrency N] [--niceness N]
 *                            [--mcp-socket PATH] [--exit-on-stdin-close]
 *
 * `--mcp-socket` sends tool calls to the core's MCP endpoint over that Unix socket
 * (sandboxes have no network); without it they go to `context.mcp_endpoint` over TCP.
 * `--work-dir` is the sandbox's writable tree: each execution's session directories
 * (`tmp/<sid>/`, `output/<sid>/`) are under it. `--niceness` lowers the runner's own
 * CPU priority before any script runs (a sandboxed runner cannot be reniced from outside
 * reliably: its processes are forked inside the sandbox).
 */
import { unlinkSync } from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { createRunnerServer } from './runner-server.js';
import { unixSocketFetch } from './unix-socket-fetch.js';

type ListenTarget = { path: string } | { host: string; port: number };

function parseListen(value: string): ListenTarget {
  if (value.startsWith('unix:')) return { path: value.slice('unix:'.length) };
  const tcp = /^tcp:(.+):(\d+)$/.exec(value);
  if (tcp) return { host: tcp[1]!, port: Number(tcp[2]) };
  throw new Error(`--listen must be unix:<path> or tcp:<host>:<port>, got "${value}"`);
}

function main(): void {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string' },
      definitions: { type: 'string' },
      'mcp-socket': { type: 'string' },
      'work-dir': { type: 'string' },
      concurrency: { type: 'string', default: '1' },
      niceness: { type: 'string', default: '0' },
      'exit-on-stdin-close': { type: 'boolean', default: false },
    },
    strict: true,
  });
  if (!values.listen || !values.definitions) {
    throw new Error('usage: main.js --listen unix:<path>|tcp:<host>:<port> --definitions <dir> [--exit-on-stdin-close]');
  }
  const target = parseListen(values.listen);
  const concurrency = Number(values.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be an integer >= 1, got "${values.concurrency}"`);
  const niceness = Number(values.niceness);
  if (!Number.isInteger(niceness) || niceness < 0 || niceness > 19) throw new Error(`--niceness must be an integer 0-19, got "${values.niceness}"`);
  if (niceness > 0) os.setPriority(Math.min(19, os.getPriority() + niceness));
  const mcpSocket = values['mcp-socket'];
  const runner = createRunnerServer({
    definitionsRoot: values.definitions,
    workDir: values['work-dir'],
    mcpFetch: mcpSocket ? unixSocketFetch(mcpSocket) : undefined,
    concurrency,
  });

  // A script that throws outside its promise chain leaves this process in an unknown
  // state: answer the request it belongs to, then exit so the pool replaces us.
  process.on('uncaughtException', (error) => {
    process.stderr.write(`jit-runner: uncaught exception: ${error instanceof Error ? error.message : String(error)}\n`);
    runner.failInFlight(error);
    setTimeout(() => process.exit(70), 20).unref();
  });
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`jit-runner: unhandled rejection: ${reason instanceof Error ? reason.message : String(reason)}\n`);
    runner.failInFlight(reason);
  });

  const stop = (): void => {
    runner.server.close();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  if (values['exit-on-stdin-close']) {
    // The parent holds our stdin open; when it dies, the pipe closes and we follow,
    // so a killed core never leaves runners behind.
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }

  if ('path' in target) {
    try {
      unlinkSync(target.path);
    } catch {
      // No stale socket: nothing to remove.
    }
  }
  runner.server.listen(target, () => {
    const address = runner.server.address();
    process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid, address })}\n`);
  });
}

try {
  main();
} catch (error) {
  process.stderr.write(`jit-runner: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(64);
}
