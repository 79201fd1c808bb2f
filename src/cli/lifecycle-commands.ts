/**
 * `uhlp start | stop | status`: the lifecycle of the body-endpoints document.
 * start spawns the core, waits (bounded) for its spine socket, spawns the
 * std-body host, and records pids, socket and start time; stop asks the core to
 * exit over its socket, waits a bounded grace, then ends the host; status reports
 * the liveness of each process and of the socket. Both the host and `stop` prove
 * themselves to the core with the secret it keeps beside its socket
 * (spine-secret.ts): only the core's user can read it. A `uhlp dev` records
 * itself the same way (dev-command.ts), so status and stop find it too.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadClientConfig, loadConfig } from '../config.js';
import { isErrorCode, UhlpError } from '../shared/errors.js';
import type { CommandSpec } from './command-spec.js';
import { parseCommandLine, printHelp } from './command-line.js';
import { CORE_FLAGS } from './core-flags.js';
import { coreTarget, fetchCore } from './core-target.js';
import { EXIT_FAILURE, EXIT_NOT_RUNNING, EXIT_OK } from './exit-codes.js';
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

const { port, host, state, pull } = CORE_FLAGS;
const DATA_DIR = { type: 'string', value: 'D', help: 'The data directory of the core (UHLP_DATA_DIR; default ./.uhlp)' } as const;
const START_FLAGS = { 'data-dir': DATA_DIR, port, host, state, pull, 'log-level': CORE_FLAGS['log-level'] };

export const START_COMMAND: CommandSpec<typeof START_FLAGS> = {
  name: 'start',
  summary: 'Run the core and the std-body endpoint host in the background, logging to <data-dir>/logs/',
  usage: ['<definitions-dir> [flags]'],
  positionals: { min: 1, max: 1 },
  flags: START_FLAGS,
  examples: ['uhlp start examples', 'uhlp start my-apps --port 9090 --data-dir /var/lib/uhlp'],
  notes: ['Prints "uhlp started at <url>" once the core is ready; uhlp status and uhlp stop find it through <data-dir>/runtime.json.', 'Exit: 0 started; 1 already running or the start failed (the core\'s log is shown); 64 a bad flag or setting.'],
};

const STOP_FLAGS = { 'data-dir': DATA_DIR };

export const STOP_COMMAND: CommandSpec<typeof STOP_FLAGS> = {
  name: 'stop',
  summary: 'Stop the core recorded in the data directory (started by uhlp start or uhlp dev) through its socket, then its std-body host',
  flags: STOP_FLAGS,
  examples: ['uhlp stop', 'uhlp stop --data-dir /var/lib/uhlp'],
  notes: ['Exit: 0 stopped (or nothing was running); 1 a process did not stop.'],
};

const STATUS_FLAGS = {
  'data-dir': DATA_DIR,
  url: { type: 'string', value: 'URL', help: 'Ask the core at this URL instead (its /healthz and /readyz) (UHLP_URL)' },
  json: { type: 'boolean', help: 'Print the report as JSON' },
} as const;

export const STATUS_COMMAND: CommandSpec<typeof STATUS_FLAGS> = {
  name: 'status',
  summary: 'Report the core recorded in the data directory (uhlp start or uhlp dev): each process, its socket and URL',
  flags: STATUS_FLAGS,
  examples: ['uhlp status', 'uhlp status --json --data-dir /var/lib/uhlp', 'uhlp status --url http://127.0.0.1:9090'],
  notes: ['Exit: 0 running; 1 degraded (a process or the socket is down); 3 not running (nothing recorded, or nothing answers at --url).'],
};

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const UHLP_BIN = path.join(PACKAGE_ROOT, 'bin', 'uhlp.js');
const STD_BODY_ENTRY = path.join(PACKAGE_ROOT, 'dist', 'std-body', 'main.js');

/** Bounded waits of the lifecycle algorithms. */
const CORE_READY_MS = 60_000;
const HOST_READY_MS = 15_000;
const EXIT_GRACE_MS = 10_000;
const KILL_GRACE_MS = 3_000;

export async function startCommand(argv: string[]): Promise<number> {
  const line = parseCommandLine(START_COMMAND, argv);
  if (line.help !== undefined) return printHelp(line.help);
  const { values, positionals } = line;
  // Validates every flag before anything is spawned.
  const config = loadConfig(positionals[0], values, undefined, { devMode: false });
  const previous = readRuntimeState(config.dataDir);
  if (previous && isProcessAlive(previous.core.pid)) {
    process.stderr.write(`uhlp: already running (${previous.mode === 'dev' ? 'uhlp dev, ' : ''}core pid ${previous.core.pid}, ${previous.url}); run uhlp stop first\n`);
    return EXIT_FAILURE;
  }

  const logs = path.join(config.dataDir, 'logs');
  mkdirSync(logs, { recursive: true });
  const coreArgs = [UHLP_BIN, 'serve', config.definitionsDir, '--data-dir', config.dataDir, '--port', String(config.port), '--host', config.host];
  if (values['log-level']) coreArgs.push('--log-level', values['log-level']);
  if (values.state) coreArgs.push('--state', values.state);
  if (values.pull) coreArgs.push('--pull', values.pull);
  const core = spawnDetached(coreArgs, path.join(logs, 'core.log'));

  const { url, operatorUrl } = await waitFor(CORE_READY_MS, async () => {
    if (!isProcessAlive(core.pid)) throw startFailure(core.log);
    const log = readText(core.log);
    const match = /uhlp is ready at (\S+)/.exec(log);
    const operator = /operator routes at (\S+)/.exec(log);
    if (!match || !operator || !(await probeSpineSocket(config.spineSocket, { timeoutMs: 500 }))) return undefined;
    return { url: match[1]!, operatorUrl: operator[1]! };
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
    operatorUrl,
    core,
    stdBody,
  };
  writeRuntimeState(config.dataDir, state);
  process.stdout.write(`uhlp started at ${url} (operator routes at ${operatorUrl}, core pid ${core.pid}, std-body pid ${stdBody.pid}, socket ${config.spineSocket})\n`);
  return 0;
}

export async function stopCommand(argv: string[]): Promise<number> {
  const line = parseCommandLine(STOP_COMMAND, argv);
  if (line.help !== undefined) return printHelp(line.help);
  const { dataDir } = loadClientConfig(line.values);
  const state = readRuntimeState(dataDir);
  if (!state) {
    process.stdout.write(`uhlp is not running (no runtime state in ${dataDir})\n`);
    return EXIT_OK;
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
  return coreExited && hostStopped ? EXIT_OK : EXIT_FAILURE;
}

export interface StatusReport {
  running: boolean;
  dataDir: string;
  /** Who recorded the core: `start` or `dev`. */
  mode?: 'start' | 'dev';
  startedAt?: string;
  url?: string;
  core?: { pid: number; alive: boolean };
  stdBody?: { pid: number; alive: boolean };
  socket?: { path: string; accepting: boolean };
}

export async function statusCommand(argv: string[]): Promise<number> {
  const line = parseCommandLine(STATUS_COMMAND, argv);
  if (line.help !== undefined) return printHelp(line.help);
  const { values } = line;
  const client = loadClientConfig(values);
  if (client.url !== undefined) return statusAt(client.url.value, values.json === true);
  const { dataDir } = client;
  const state = readRuntimeState(dataDir);
  const report: StatusReport = { running: false, dataDir };
  if (state) {
    report.mode = state.mode ?? 'start';
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
        `uhlp ${report.running ? 'running' : 'degraded'} (uhlp ${report.mode}) since ${state.startedAt} at ${state.url}`,
        `  core      pid ${state.core.pid}  ${mark(report.core!.alive)}`,
        `  std-body  pid ${state.stdBody.pid}  ${mark(report.stdBody!.alive)}`,
        `  socket    ${state.socketPath}  ${mark(report.socket!.accepting)}`,
      ].join('\n') + '\n',
    );
  }
  return report.running ? EXIT_OK : state ? EXIT_FAILURE : EXIT_NOT_RUNNING;
}

/** `uhlp status --url`: whether a core answers there, and whether it is ready (/healthz, /readyz). */
async function statusAt(url: string, json: boolean): Promise<number> {
  const target = coreTarget({ url: { value: url, name: '--url' }, listener: 'app', dataDir: '' });
  let healthy = false;
  let ready: unknown;
  try {
    healthy = (await fetchCore(target, '/healthz')).response.ok;
    ready = (await fetchCore(target, '/readyz')).body;
  } catch {
    healthy = false;
  }
  const readyStatus = typeof ready === 'object' && ready !== null ? (ready as { status?: unknown }).status : undefined;
  if (json) process.stdout.write(`${JSON.stringify({ running: healthy, url, ...(healthy ? { readyz: ready } : {}) })}\n`);
  else process.stdout.write(healthy ? `uhlp running at ${url} (readyz: ${String(readyStatus ?? 'unknown')})\n` : `uhlp is not running at ${url} (nothing answers /healthz)\n`);
  return healthy ? EXIT_OK : EXIT_NOT_RUNNING;
}

/** The core exited during `uhlp start`: its error, with the code it printed (a bad setting exits 64 here too), and its log. */
function startFailure(log: string): Error {
  const lines = tail(log);
  const printed = /^uhlp: (UHLP_[A-Z_]+): (.*)$/m.exec(lines);
  const message = `the core exited during start; see ${log}:\n${lines}`;
  return printed !== null && isErrorCode(printed[1]!) ? new UhlpError(printed[1]!, `${printed[2]}\n${message}`) : new Error(message);
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
