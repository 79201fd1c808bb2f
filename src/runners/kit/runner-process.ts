/**
 * The process around a runner's server, shared by every runner program (the
 * jit-runner, the llm-orchestrator): the command line, the listener, the ready
 * line drivers wait for, signals, and what happens when an execution throws
 * outside its promise chain.
 *
 *   node <entry> --listen unix:/run/sb.sock|tcp:0.0.0.0:8080 [--definitions DIR [--definitions-via-mcp]]
 *                [--work-dir DIR] [--concurrency N] [--niceness N]
 *                [--mcp-socket PATH] [--exit-on-stdin-close] [--drain-on-sigterm]
 *
 * It prints one JSON line `{"event":"ready"}` to stdout once it accepts
 * requests. `--definitions` is taken only by runners that read app files from a
 * mounted revision (the jit-runner); the llm-orchestrator reads them through
 * MCP and refuses it. `--definitions-via-mcp` makes `--definitions` a writable
 * cache instead of a mount: a script missing there is read through
 * `core.state.getDefinitionFileContent` at the execution's revision and kept
 * (pods, which share no file system with the core). `--mcp-socket` sends tool calls to the core's MCP
 * endpoint over that Unix socket (sandboxes have no network); without it they
 * go to `context.mcp_endpoint` over TCP. `--work-dir` is the sandbox's writable
 * tree, which the runner walks after an execution that asks it to (`reportWrites`). `--niceness` lowers the runner's own CPU priority before any execution
 * runs (a sandboxed runner cannot be reniced from outside reliably: its
 * processes are forked inside the sandbox). `--drain-on-sigterm` makes SIGTERM a
 * graceful stop (pods: a deleted pod gets SIGTERM and a grace period): no new
 * connection is taken, and the process exits once the executions running end.
 */
import { unlinkSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { Executor } from './executor.js';
import { createRunnerServer } from './runner-server.js';
import { unixSocketPost } from './unix-socket-fetch.js';
import { RunnerFiles, type WalkableTree } from '../../shared/work-tree-walk.js';

export interface RunnerProgram {
  /** The runner's name in its messages (`jit-runner`, `llm-orchestrator`). */
  readonly name: string;
  /** Whether the runner reads app files from a mounted revisions directory (`--definitions`, then required). */
  readonly readsDefinitions: boolean;
  createExecutor(paths: {
    readonly definitionsRoot: string | undefined;
    readonly workDir: string | undefined;
    /** `--definitions-via-mcp`: definitionsRoot is a cache filled through MCP. */
    readonly definitionsViaMcp: boolean;
    /** Called with each file the runner keeps in that cache, once written: the walk of the tree tells them from a turn's writes. @defaultValue none */
    readonly kept?: (file: string) => void;
  }): Executor;
}

type ListenTarget = { path: string } | { host: string; port: number };

function parseListen(value: string): ListenTarget {
  if (value.startsWith('unix:')) return { path: value.slice('unix:'.length) };
  const tcp = /^tcp:(.+):(\d+)$/.exec(value);
  if (tcp) return { host: tcp[1]!, port: Number(tcp[2]) };
  throw new Error(`--listen must be unix:<path> or tcp:<host>:<port>, got "${value}"`);
}

function start(program: RunnerProgram): void {
  const { values } = parseArgs({
    options: {
      listen: { type: 'string' },
      ...(program.readsDefinitions ? { definitions: { type: 'string' }, 'definitions-via-mcp': { type: 'boolean', default: false } } : {}),
      'mcp-socket': { type: 'string' },
      'work-dir': { type: 'string' },
      concurrency: { type: 'string', default: '1' },
      niceness: { type: 'string', default: '0' },
      'exit-on-stdin-close': { type: 'boolean', default: false },
      'drain-on-sigterm': { type: 'boolean', default: false },
    },
    strict: true,
  }) as { values: Record<string, string | boolean | undefined> };
  const text = (name: string): string | undefined => (typeof values[name] === 'string' ? (values[name] as string) : undefined);
  const listen = text('listen');
  const definitions = text('definitions');
  if (!listen || (program.readsDefinitions && !definitions)) {
    throw new Error(`usage: ${program.name} --listen unix:<path>|tcp:<host>:<port>${program.readsDefinitions ? ' --definitions <dir>' : ''} [--exit-on-stdin-close]`);
  }
  const target = parseListen(listen);
  const concurrency = Number(text('concurrency'));
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`--concurrency must be an integer >= 1, got "${text('concurrency')}"`);
  const niceness = Number(text('niceness'));
  if (!Number.isInteger(niceness) || niceness < 0 || niceness > 19) throw new Error(`--niceness must be an integer 0-19, got "${text('niceness')}"`);
  if (niceness > 0) os.setPriority(Math.min(19, os.getPriority() + niceness));
  const mcpSocket = text('mcp-socket');
  const workDir = text('work-dir');
  const workTree = workDir !== undefined ? workTreeOf(workDir, definitions) : undefined;
  const kept = workTree?.runnerFiles;
  const runner = createRunnerServer({
    executor: program.createExecutor({
      definitionsRoot: definitions,
      workDir,
      definitionsViaMcp: values['definitions-via-mcp'] === true,
      ...(kept !== undefined ? { kept: (file: string) => kept.record(file) } : {}),
    }),
    ...(mcpSocket ? { mcpPost: unixSocketPost(mcpSocket) } : {}),
    ...(workTree !== undefined ? { workTree } : {}),
    concurrency,
  });

  // An execution that throws outside its promise chain leaves this process in an unknown
  // state: answer the request it belongs to, then exit so the pool replaces us.
  process.on('uncaughtException', (error) => {
    process.stderr.write(`${program.name}: uncaught exception: ${error instanceof Error ? error.message : String(error)}\n`);
    runner.failInFlight(error);
    setTimeout(() => process.exit(70), 20).unref();
  });
  process.on('unhandledRejection', (reason) => {
    process.stderr.write(`${program.name}: unhandled rejection: ${reason instanceof Error ? reason.message : String(reason)}\n`);
    runner.failInFlight(reason);
  });

  const stop = (): void => {
    runner.server.close();
    process.exit(0);
  };
  const drain = (): void => {
    void runner.drain().then(() => process.exit(0));
  };
  process.on('SIGTERM', values['drain-on-sigterm'] === true ? drain : stop);
  process.on('SIGINT', stop);
  if (values['exit-on-stdin-close'] === true) {
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
    const ready = (): void => void process.stdout.write(`${JSON.stringify({ event: 'ready', pid: process.pid, address })}\n`);
    // A TCP runner is a pod's, claimed warm: its first request must cost what the next ones do.
    if ('port' in target && address !== null && typeof address === 'object') void runner.warmUp(`http://127.0.0.1:${address.port}`).then(ready);
    else ready();
  });
}

/**
 * The work tree as the runner walks it when asked (runner-server.ts). A definitions
 * cache kept in it (a pod's `/work/.definitions`) is the runner's: the scripts it
 * keeps there are recorded as it writes them, and anything else there is a turn's.
 */
function workTreeOf(workDir: string, definitions: string | undefined): WalkableTree {
  const root = path.resolve(workDir);
  const cache = definitions !== undefined ? path.resolve(definitions) : undefined;
  if (cache === undefined || path.dirname(cache) !== root) return { hostDir: root };
  return { hostDir: root, runnerFiles: new RunnerFiles(path.basename(cache)) };
}

/** Starts the runner; a bad command line exits 64 with the reason on stderr. */
export function runRunnerProgram(program: RunnerProgram): void {
  try {
    start(program);
  } catch (error) {
    process.stderr.write(`${program.name}: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(64);
  }
}
