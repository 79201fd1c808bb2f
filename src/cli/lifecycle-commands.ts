/**
 * `uhlp start | stop | status`: the lifecycle of the body-endpoints document.
 * start spawns the core, waits (bounded) for its spine socket, spawns the
 * std-body host, and records pids, socket and start time; stop asks the core to
 * exit over its socket, waits a bounded grace, then ends the host; status reports
 * the liveness of each process and of the socket. Both the host and `stop` prove
 * themselves to the core with the secret it keeps beside its socket
 * (spine-secret.ts): only the core's user can read it.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadConfig } from '../config.js';
import {
  clearRuntimeState,
  isProcessAlive,
  readRuntimeState,
  writeRuntimeState,
  type RuntimeState,
  type TrackedProcess,
} from './runtime-state.js';
import { probeSpineSocket, sendSpineExit } from '../spine/spine-control.js';
import { readSpineSecret, spineSecretPath } from '../spine/spine-secret.js';

export const START_USAGE = 'uhlp start <definitions-dir> [--data-dir D] [--port N] [--host H] [--state URL] [--pull REMOTE]';
export const STOP_USAGE = 'uhlp stop [--data-dir D]';
export const STATUS_USAGE = 'uhlp status [--data-dir D] [--json]';

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UHLP_BIN = path.join(PACKAGE_ROOT, 'bin', 'uhlp.js');
const STD_BODY_ENTRY = path.join(PACKAGE_ROOT, 'dist', 'std-body', 'main.js');

/** Bounded waits of the lifecycle algorithms. */
const CORE_READY_MS = 60_000;
const HOST_READY_MS = 15_000;
const EXIT_GRACE_MS = 10_000;
const KILL_GRACE_MS = 3_000;

export async function startCommand(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      'data-dir': { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      'log-level': { type: 'string' },
      state: { type: 'string' },
      pull: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new Error(`usage: ${START_USAGE}`);
  // Validates every flag before anything is spawned.
  const config = loadConfig(positionals[0], values, undefined, { devMode: false });
  const previous = readRuntimeState(config.dataDir);
  if (previous && isProcessAlive(previous.core.pid)) {
    process.stderr.write(`uhlp: already running (core pid ${previous.core.pid}, ${previous.url}); run uhlp stop first\n`);
    return 1;
  }

  const logs = path.join(config.dataDir, 'logs');
  mkdirSync(logs, { recursive: true });
  const coreArgs = [UHLP_BIN, 'serve', config.definitionsDir, '--data-dir', config.dataDir, '--port', String(config.port), '--host', config.host];
  if (values['log-level']) coreArgs.push('--log-level', values['log-level']);
  if (values.state) coreArgs.push('--state', values.state);
  if (values.pull) coreArgs.push('--pull', values.pull);
  const core = spawnDetached(coreArgs, path.join(logs, 'core.log'));

  const url = await waitFor(CORE_READY_MS, async () => {
    if (!isProcessAlive(core.pid)) throw new Error(`the core exited during start; see ${core.log}:\n${tail(core.log)}`);
    const match = /uhlp is ready at (\S+)/.exec(readText(core.log));
    if (!match || !(await probeSpineSocket(config.spineSocket, { timeoutMs: 500 }))) return undefined;
    return match[1]!;
  }).catch((error: Error) => {
    terminate(core.pid);
    throw error;
  });

  // The host reads the core's secret from the file beside the socket, on every connect.
  const stdBody = spawnDetached(
    [STD_BODY_ENTRY, '--socket', config.spineSocket, '--secret-file', spineSecretPath(config.spineSocket)],
    path.join(logs, 'std-body.log'),
  );
  await waitFor(HOST_READY_MS, async () => {
    if (!isProcessAlive(stdBody.pid)) throw new Error(`the std-body host exited during start; see ${stdBody.log}:\n${tail(stdBody.log)}`);
    return (readText(stdBody.log).match(/"event":"registered"/g)?.length ?? 0) >= 2 ? true : undefined;
  }).catch(async (error: Error) => {
    terminate(stdBody.pid);
    const secret = readSpineSecret(spineSecretPath(config.spineSocket));
    if (secret === undefined || !(await sendSpineExit(config.spineSocket, { secret }))) terminate(core.pid);
    throw error;
  });

  const state: RuntimeState = {
    version: 1,
    startedAt: new Date().toISOString(),
    definitionsDir: config.definitionsDir,
    socketPath: config.spineSocket,
    url,
    core,
    stdBody,
  };
  writeRuntimeState(config.dataDir, state);
  process.stdout.write(`uhlp started at ${url} (core pid ${core.pid}, std-body pid ${stdBody.pid}, socket ${config.spineSocket})\n`);
  return 0;
}

export async function stopCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' } } });
  const dataDir = path.resolve(values['data-dir'] ?? '.uhlp');
  const state = readRuntimeState(dataDir);
  if (!state) {
    process.stdout.write('uhlp is not running (no runtime state)\n');
    return 0;
  }
  // The core obeys an exit only with its secret; without one it is stopped by a signal at once.
  const wasRunning = isProcessAlive(state.core.pid);
  const secret = readSpineSecret(spineSecretPath(state.socketPath));
  const asked = wasRunning && secret !== undefined && (await sendSpineExit(state.socketPath, { secret }));
  let coreExited = asked ? await waitGone(state.core.pid, EXIT_GRACE_MS) : !isProcessAlive(state.core.pid);
  if (!coreExited) {
    // The core did not honour the exit message in time: fall back to a signal.
    terminate(state.core.pid);
    coreExited = await waitGone(state.core.pid, KILL_GRACE_MS);
  }
  let hostStopped = true;
  if (isProcessAlive(state.stdBody.pid)) {
    terminate(state.stdBody.pid);
    hostStopped = await waitGone(state.stdBody.pid, KILL_GRACE_MS);
  }
  clearRuntimeState(dataDir);
  process.stdout.write(
    `uhlp stopped (core ${coreExited ? 'exited' : 'still running'}${asked || !wasRunning ? '' : secret === undefined ? ', its secret was unreadable' : ', socket did not answer'}; std-body ${hostStopped ? 'stopped' : 'still running'})\n`,
  );
  return coreExited && hostStopped ? 0 : 1;
}

export interface StatusReport {
  running: boolean;
  dataDir: string;
  startedAt?: string;
  url?: string;
  core?: { pid: number; alive: boolean };
  stdBody?: { pid: number; alive: boolean };
  socket?: { path: string; accepting: boolean };
}

export async function statusCommand(argv: string[]): Promise<number> {
  const { values } = parseArgs({ args: argv, options: { 'data-dir': { type: 'string' }, json: { type: 'boolean', default: false } } });
  const dataDir = path.resolve(values['data-dir'] ?? '.uhlp');
  const state = readRuntimeState(dataDir);
  const report: StatusReport = { running: false, dataDir };
  if (state) {
    report.startedAt = state.startedAt;
    report.url = state.url;
    report.core = { pid: state.core.pid, alive: isProcessAlive(state.core.pid) };
    report.stdBody = { pid: state.stdBody.pid, alive: isProcessAlive(state.stdBody.pid) };
    report.socket = { path: state.socketPath, accepting: await probeSpineSocket(state.socketPath) };
    report.running = report.core.alive && report.stdBody.alive && report.socket.accepting;
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else if (!state) {
    process.stdout.write(`uhlp is not running (no runtime state in ${dataDir})\n`);
  } else {
    const mark = (ok: boolean): string => (ok ? 'up' : 'DOWN');
    process.stdout.write(
      [
        `uhlp ${report.running ? 'running' : 'degraded'} since ${state.startedAt} at ${state.url}`,
        `  core      pid ${state.core.pid}  ${mark(report.core!.alive)}`,
        `  std-body  pid ${state.stdBody.pid}  ${mark(report.stdBody!.alive)}`,
        `  socket    ${state.socketPath}  ${mark(report.socket!.accepting)}`,
      ].join('\n') + '\n',
    );
  }
  return report.running ? 0 : state ? 1 : 3;
}

function spawnDetached(args: string[], log: string): TrackedProcess {
  const fd = openSync(log, 'a');
  try {
    const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', fd, fd] });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not spawn ${args.join(' ')}`);
    return { pid: child.pid, command: [process.execPath, ...args], log };
  } finally {
    closeSync(fd);
  }
}

function terminate(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    // Already gone.
  }
}

async function waitGone(pid: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (isProcessAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

async function waitFor<T>(timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not ready within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function readText(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

function tail(file: string): string {
  return readText(file).split('\n').slice(-10).join('\n');
}
