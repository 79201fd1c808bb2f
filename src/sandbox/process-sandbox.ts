/**
 * How the process driver contains a runner: the command that starts one, for
 * the runner its pool names (the jit-runner or the llm-orchestrator).
 *
 * With bubblewrap (Debian's `bubblewrap`), each runner gets its own user, PID,
 * network, mount, IPC, UTS and cgroup namespaces and an empty root holding only
 * what it needs, as the runner images do:
 *
 *   /usr/local/bin/node + its libraries   read-only, from the host
 *   /app                                  the runner's files (runner-root.ts), read-only
 *   /definitions                          the app's own revisions, read-only (the jit-runner
 *                                         only: the llm-orchestrator reads them through MCP)
 *   /work                                 the sandbox's writable tree (tmp/, output/)
 *   /run/uhlp                             its socket directory (the core connects here)
 *   /run/uhlp-core/mcp.sock               the core's MCP socket, its only way out
 *   /proc, /dev                           its own PID namespace's, a minimal /dev (read-only:
 *                                         no /dev/shm for one session to leave a file in for the next)
 *
 * It runs as uid 10001 in its namespace with no capability, no new privileges,
 * a network namespace with nothing in it, a root that is read-only once built,
 * and the seccomp filter of seccomp-filter.ts (no process creation, no links).
 * Inside, Node's permission model limits the runner's own file access to /app,
 * /definitions (if mounted) and /work and refuses child processes, workers and
 * native addons: a second fence behind the first, not the fence itself.
 *
 * The python runner (`runner: python`) has no such second fence: CPython has no
 * permission model, and a script may call any C function through ctypes. What
 * contains it is the first fence alone, which is why it is whole: the
 * namespaces, the seccomp filter, and a read-only root holding nothing but
 * /usr/bin/python3, the standard library and the libraries they link (read-only,
 * from the host: python-runtime.ts), its files, its revisions and /work. It runs
 * as PID 1 of its namespace (`--as-pid-1`): no bubblewrap process, whose command
 * line names host paths, is there to look at. Its memory cap is its own
 * (RLIMIT_DATA and RLIMIT_AS, `--memory-mb`) instead of V8's heap limit. Its
 * socket directory is writable (the runner makes its socket there) and nothing
 * refuses a script a file in it, so the core walks it after each turn as it
 * walks /work (a side directory of the tree, work-tree.ts).
 *
 * Without bubblewrap there is no containment but Node's permission model (and,
 * for the python runner, the same seccomp filter loaded by the runner on itself,
 * `--seccomp-self`: no process creation, no links); the driver then runs only
 * when the operator accepted that (`uhlp dev` says so loudly, `uhlp serve` needs
 * --unsafe-process-sandboxes).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { IMAGE_NODE_PATH, findNodeRuntime, type RuntimeFile } from '../images/node-runtime.js';
import { findPythonRuntime, IMAGE_PYTHON_PATH, PYTHON_FLAGS, type PythonRuntime } from '../images/python-runtime.js';
import { isPythonRunner, PYTHON_SECCOMP_FILE, RUNNER_KINDS, RUNNER_PROGRAMS, type RunnerKind } from '../images/runner-files.js';
import { stageRunnerRoot, type StagedRunner } from './runner-root.js';
import { seccompFilter } from './seccomp-filter.js';
import type { McpServerLaunch } from './sandbox-driver.js';
import type { SideDir } from './work-tree.js';

/** Paths inside a bubblewrap sandbox. */
export const SANDBOX_PATHS = {
  app: '/app',
  definitions: '/definitions',
  work: '/work',
  socketDir: '/run/uhlp',
  mcpSocket: '/run/uhlp-core/mcp.sock',
  mcpServer: '/mcp-server',
} as const;
/** The uid and gid a runner has in its user namespace (the jit-runner image's `sandbox` user). */
const SANDBOX_ID = '10001';

/** The host side of one runner: which it is, where its files are, where it may write, where it listens. */
export interface RunnerLaunch {
  /** The pool's runner. */
  readonly runner: RunnerKind;
  /** Host directory that holds the runner's socket. */
  readonly socketDir: string;
  /** The app's revisions on the host; mounted only for runners that read them. */
  readonly definitionsDir: string;
  /** The sandbox's writable tree on the host. */
  readonly workDir: string;
  /** The core's MCP socket on the host. */
  readonly mcpSocket?: string;
  readonly memoryMb: number;
  readonly concurrency: number;
  /** How much nicer than the core the runner makes itself. */
  readonly niceness: number;
  /** The stdio MCP server of a `runner: mcp` sandbox. @defaultValue none */
  readonly mcpServer?: McpServerLaunch;
}

export interface LaunchCommand {
  readonly file: string;
  readonly args: string[];
  /** Bytes to write to the child's fd 3, then close (bubblewrap's seccomp program). */
  readonly fd3?: Buffer;
  /** The runner's socket, as the core reaches it. */
  readonly socketPath: string;
  /** The sandbox's writable tree as the runner names it. */
  readonly workDir: string;
  /** Writable places outside the tree that the core must walk with it (work-tree.ts). @defaultValue none */
  readonly sideDirs?: readonly SideDir[];
}

export type ProcessIsolation = 'namespaces' | 'none';

export interface ProcessSandbox {
  /** `namespaces` with bubblewrap; `none` when the operator accepted running without it. */
  readonly isolation: ProcessIsolation;
  /** One line for logs and /readyz. */
  readonly summary: string;
  launch(launch: RunnerLaunch): LaunchCommand;
  /** The environment a runner process starts with: nothing of the core's (bubblewrap sets the runner's own), or, unisolated, the host's PATH and the runner's basics. */
  runnerEnv(workDir: string): NodeJS.ProcessEnv;
}

export interface PrepareProcessSandboxOptions {
  /** Where the runners' files are staged (`<dataDir>/runtime`). */
  readonly stateDir: string;
  /**
   * Accept running without namespaces when bubblewrap cannot run here (the
   * runner then has Node's permission model and nothing else).
   * @defaultValue false: such a host refuses with UHLP_SANDBOX_UNAVAILABLE
   */
  readonly allowUnisolated?: boolean;
  /** Use bubblewrap only if asked: `none` skips it even where it works (tests of the unisolated mode). @defaultValue `namespaces` */
  readonly prefer?: ProcessIsolation;
  /** bubblewrap's executable. @defaultValue the first `bwrap` on `hostPath` */
  readonly bwrapPath?: string;
  /** The host's PATH (config.ts reads it): where bubblewrap is looked for, and what an unisolated runner inherits. @defaultValue `/usr/bin:/bin` */
  readonly hostPath?: string;
  /** Package root holding dist/ and node_modules/. @defaultValue this package */
  readonly packageRoot?: string;
  /**
   * The CPython of `runner: python` pools. Where it is missing, only those pools
   * fail (UHLP_SANDBOX_UNAVAILABLE when a sandbox starts). @defaultValue /usr/bin/python3 (Debian's python3)
   */
  readonly pythonPath?: string;
}

/** What a host lacks for namespaces, when it lacks something; `prepareProcessSandbox` reports it. */
export class ProcessIsolationUnavailable extends UhlpError {
  constructor(readonly reason: string) {
    super(
      'UHLP_SANDBOX_UNAVAILABLE',
      `process sandboxes cannot be isolated on this host: ${reason}. Install bubblewrap, use --driver docker, or accept running scripts unisolated with --unsafe-process-sandboxes`,
      { reason },
    );
  }
}

/**
 * Stages the runners' files and checks that a contained runner can start here:
 * resolves with the sandbox, or throws ProcessIsolationUnavailable unless
 * `allowUnisolated` accepts running without namespaces.
 */
export async function prepareProcessSandbox(options: PrepareProcessSandboxOptions): Promise<ProcessSandbox> {
  await mkdir(options.stateDir, { recursive: true });
  const runners = {} as Record<RunnerKind, StagedRunner>;
  const hostPath = options.hostPath ?? DEFAULT_HOST_PATH;
  for (const kind of RUNNER_KINDS) runners[kind] = await stageRunnerRoot(options.stateDir, kind, options.packageRoot);
  const python = await findPythonRuntime(options.pythonPath).catch((error: unknown) =>
    error instanceof UhlpError ? error : new UhlpError('UHLP_SANDBOX_UNAVAILABLE', `runner: python pools cannot start: ${(error as Error).message}`),
  );
  if ((options.prefer ?? 'namespaces') === 'namespaces') {
    try {
      const bwrap = options.bwrapPath ?? findBwrap(hostPath);
      if (!existsSync(bwrap)) throw new ProcessIsolationUnavailable(`bubblewrap is not at ${bwrap}`);
      const runtime = await findNodeRuntime(process.execPath);
      const sandbox = bubblewrapSandbox(bwrap, [runtime.binary, ...runtime.libraries], runners, python);
      await probe(sandbox, options.stateDir);
      return sandbox;
    } catch (error) {
      const reason = error instanceof ProcessIsolationUnavailable ? error.reason : (error as Error).message;
      if (!options.allowUnisolated) throw error instanceof ProcessIsolationUnavailable ? error : new ProcessIsolationUnavailable(reason);
      return unisolatedSandbox(runners, python, `no namespaces (${reason}); only Node's permission model${pythonNote(python)}`, hostPath);
    }
  }
  if (!options.allowUnisolated) throw new ProcessIsolationUnavailable('namespaces were not asked for');
  return unisolatedSandbox(runners, python, `no namespaces (not asked for); only Node's permission model${pythonNote(python)}`, hostPath);
}

/** What the summary says of a host whose python pools cannot start. */
function pythonNote(python: PythonRuntime | UhlpError): string {
  return python instanceof UhlpError ? `; no python3 here, runner: python pools cannot start` : '';
}

/** The CPython a python runner needs, or the reason this host has none. */
function pythonOf(python: PythonRuntime | UhlpError): PythonRuntime {
  if (python instanceof UhlpError) throw python;
  return python;
}

/** The PATH of a host whose environment names none. */
const DEFAULT_HOST_PATH = '/usr/bin:/bin';

function findBwrap(hostPath: string): string {
  for (const dir of hostPath.split(path.delimiter)) {
    const candidate = path.join(dir, 'bwrap');
    if (dir && existsSync(candidate)) return candidate;
  }
  throw new ProcessIsolationUnavailable('bubblewrap (bwrap) is not installed; on Debian or Ubuntu: apt-get install bubblewrap');
}

/** A sandbox and the command that runs any Node program in it (the runner, or the start-up probe). */
interface SandboxBuilder extends ProcessSandbox {
  command(launch: RunnerLaunch, program: (paths: RunnerPaths) => string[]): LaunchCommand;
}

function bubblewrapSandbox(
  bwrap: string,
  runtimeFiles: readonly RuntimeFile[],
  runners: Readonly<Record<RunnerKind, StagedRunner>>,
  python: PythonRuntime | UhlpError,
): SandboxBuilder {
  const seccomp = seccompFilter();
  return {
    isolation: 'namespaces',
    // bubblewrap starts the runner with an environment of its own (--clearenv, --setenv).
    runnerEnv: () => ({}),
    summary: `bubblewrap: user, pid, net, mount, ipc, uts and cgroup namespaces, seccomp, a read-only root, Node permission model (python: none)${pythonNote(python)}`,
    launch(launch) {
      const runner = runners[launch.runner];
      const entry = path.posix.join(SANDBOX_PATHS.app, path.relative(runner.dir, runner.entry).split(path.sep).join('/'));
      return this.command(launch, (paths) => runnerProgram(entry, launch, paths));
    },
    command(launch, program) {
      const args = [
        '--unshare-all',
        '--die-with-parent',
        '--new-session',
        '--cap-drop', 'ALL',
        '--uid', SANDBOX_ID,
        '--gid', SANDBOX_ID,
        '--hostname', 'sandbox',
        '--clearenv',
        ...env(SANDBOX_PATHS.work),
        '--proc', '/proc',
        '--dev', '/dev',
      ];
      const readsDefinitions = RUNNER_PROGRAMS[launch.runner].readsDefinitions;
      const interpreter = isPythonRunner(launch.runner) ? pythonOf(python) : undefined;
      if (interpreter === undefined) for (const file of runtimeFiles) args.push('--ro-bind', file.hostPath, file.imagePath);
      else {
        for (const file of [interpreter.binary, ...interpreter.libraries]) args.push('--ro-bind', file.hostPath, file.imagePath);
        args.push('--ro-bind', interpreter.stdlib, interpreter.stdlib, '--as-pid-1');
      }
      args.push('--ro-bind', runners[launch.runner].dir, SANDBOX_PATHS.app);
      if (readsDefinitions) args.push('--ro-bind', launch.definitionsDir, SANDBOX_PATHS.definitions);
      args.push('--bind', launch.workDir, SANDBOX_PATHS.work);
      args.push('--bind', launch.socketDir, SANDBOX_PATHS.socketDir);
      if (launch.mcpSocket) args.push('--bind', launch.mcpSocket, SANDBOX_PATHS.mcpSocket);
      const packageDir = launch.mcpServer?.packageDir;
      if (packageDir !== undefined) args.push('--ro-bind', packageDir, SANDBOX_PATHS.mcpServer);
      // Last: the root bubblewrap built (a tmpfs) takes no more writes once every mount point is made; nor does
      // its /dev, whose shm/ directory would otherwise be a writable place nobody walks (the devices stay usable).
      args.push('--remount-ro', '/dev', '--remount-ro', '/');
      args.push('--chdir', SANDBOX_PATHS.work, '--seccomp', '3', '--', interpreter === undefined ? IMAGE_NODE_PATH : IMAGE_PYTHON_PATH);
      const paths: RunnerPaths = {
        read: [
          ...(readsDefinitions ? [SANDBOX_PATHS.app, SANDBOX_PATHS.definitions, SANDBOX_PATHS.work] : [SANDBOX_PATHS.app, SANDBOX_PATHS.work]),
          ...(packageDir !== undefined ? [SANDBOX_PATHS.mcpServer] : []),
        ],
        write: [SANDBOX_PATHS.work],
        socket: `${SANDBOX_PATHS.socketDir}/runner.sock`,
        definitions: readsDefinitions ? SANDBOX_PATHS.definitions : undefined,
        work: SANDBOX_PATHS.work,
        mcpSocket: launch.mcpSocket ? SANDBOX_PATHS.mcpSocket : undefined,
        mcpServerRoot: packageDir !== undefined ? SANDBOX_PATHS.mcpServer : SANDBOX_PATHS.definitions,
      };
      if (interpreter !== undefined) args.push(...PYTHON_FLAGS, ...program(paths), '--memory-mb', String(launch.memoryMb));
      else args.push(`--max-old-space-size=${launch.memoryMb}`, ...nodePermissionFlags(paths.read, paths.write), ...addonFlags(launch.runner), ...program(paths));
      return {
        file: bwrap,
        args,
        fd3: seccomp,
        socketPath: path.join(launch.socketDir, 'runner.sock'),
        workDir: SANDBOX_PATHS.work,
        ...sideDirs(launch, SANDBOX_PATHS.socketDir),
      };
    },
  };
}

function unisolatedSandbox(runners: Readonly<Record<RunnerKind, StagedRunner>>, python: PythonRuntime | UhlpError, summary: string, hostPath: string): SandboxBuilder {
  return {
    isolation: 'none',
    summary,
    runnerEnv: (workDir) => unisolatedEnv(workDir, hostPath),
    launch(launch) {
      return this.command(launch, (paths) => runnerProgram(runners[launch.runner].entry, launch, paths));
    },
    command(launch, program) {
      const runner = runners[launch.runner];
      const readsDefinitions = RUNNER_PROGRAMS[launch.runner].readsDefinitions;
      const packageDir = launch.mcpServer?.packageDir;
      const paths: RunnerPaths = {
        read: [
          ...(readsDefinitions ? [runner.dir, launch.definitionsDir, launch.workDir] : [runner.dir, launch.workDir]),
          ...(packageDir !== undefined ? [packageDir] : []),
        ],
        write: [launch.workDir],
        socket: path.join(launch.socketDir, 'runner.sock'),
        definitions: readsDefinitions ? launch.definitionsDir : undefined,
        work: launch.workDir,
        mcpSocket: launch.mcpSocket,
        mcpServerRoot: packageDir ?? launch.definitionsDir,
      };
      if (isPythonRunner(launch.runner)) {
        // CPython has no permission model to fall back on: its own memory cap, and the sandboxes' seccomp policy loaded on itself.
        const args = [...PYTHON_FLAGS, ...program(paths), '--memory-mb', String(launch.memoryMb), '--seccomp-self', path.join(runner.dir, PYTHON_SECCOMP_FILE)];
        return { file: pythonOf(python).binary.hostPath, args, socketPath: paths.socket, workDir: launch.workDir, ...sideDirs(launch, launch.socketDir) };
      }
      const args = [`--max-old-space-size=${launch.memoryMb}`, ...nodePermissionFlags(paths.read, paths.write), ...addonFlags(launch.runner), ...program(paths)];
      return { file: process.execPath, args, socketPath: paths.socket, workDir: launch.workDir };
    },
  };
}

/**
 * The socket directory of a runner without Node's permission model (python), as
 * a side directory of its tree: the one writable place beside /work, walked with
 * it. Node runners are refused writes there by their permission model.
 */
function sideDirs(launch: RunnerLaunch, sandboxDir: string): { sideDirs?: SideDir[] } {
  return isPythonRunner(launch.runner) ? { sideDirs: [{ hostDir: launch.socketDir, sandboxDir, keep: [RUNNER_SOCKET] }] } : {};
}

/** The runner's socket in its socket directory. */
const RUNNER_SOCKET = 'runner.sock';

/** `--allow-addons` for the one runner that loads a native addon (the csjs runner), nothing for the others. */
export function addonFlags(runner: RunnerKind): string[] {
  return RUNNER_PROGRAMS[runner].loadsAddons === true ? ['--allow-addons'] : [];
}

/** The runner's environment: nothing of the core's; temporary files go to the writable tree until a turn names its own. */
function env(work: string): string[] {
  const values: Record<string, string> = { PATH: '/usr/local/bin', NODE_ENV: 'production', TZ: 'UTC', HOME: work, TMPDIR: `${work}/tmp`, PYTHONDONTWRITEBYTECODE: '1' };
  return Object.entries(values).flatMap(([name, value]) => ['--setenv', name, value]);
}

/** Environment of an unisolated runner (no bubblewrap to clear it). */
function unisolatedEnv(workDir: string, hostPath: string): NodeJS.ProcessEnv {
  return { PATH: hostPath, NODE_ENV: 'production', TZ: 'UTC', HOME: workDir, TMPDIR: path.join(workDir, 'tmp'), PYTHONDONTWRITEBYTECODE: '1' };
}

interface RunnerPaths {
  read: string[];
  write: string[];
  socket: string;
  /** Undefined for a runner that reads no mounted definitions. */
  definitions: string | undefined;
  work: string;
  mcpSocket: string | undefined;
  /** Where a stdio MCP server's entry is found: its package, or the app's revisions. @defaultValue none */
  mcpServerRoot?: string;
}

/** The runner's entry and its arguments, with the paths as the runner sees them. */
function runnerProgram(entry: string, launch: RunnerLaunch, paths: RunnerPaths): string[] {
  return [
    entry,
    '--listen', `unix:${paths.socket}`,
    ...(paths.definitions !== undefined ? ['--definitions', paths.definitions] : []),
    '--work-dir', paths.work,
    '--concurrency', String(launch.concurrency),
    '--niceness', String(launch.niceness),
    ...(paths.mcpSocket ? ['--mcp-socket', paths.mcpSocket] : []),
    ...(launch.mcpServer !== undefined && paths.mcpServerRoot !== undefined
      ? ['--server-entry', path.posix.join(paths.mcpServerRoot, launch.mcpServer.entry), ...launch.mcpServer.args.flatMap((arg) => ['--server-arg', arg]), ...(launch.mcpServer.env ?? []).flatMap((variable) => ['--server-env', variable])]
      : []),
    '--exit-on-stdin-close',
  ];
}

/**
 * Node's permission model flags: `--permission` and one flag per path (a
 * comma-separated list is not accepted by every release). The probe at start
 * checks that they work.
 */
export function nodePermissionFlags(read: readonly string[], write: readonly string[]): string[] {
  return ['--permission', ...read.map((p) => `--allow-fs-read=${p}`), ...write.map((p) => `--allow-fs-write=${p}`)];
}

/** Starts one contained Node that only checks its fences and exits; throws what stopped it. */
async function probe(sandbox: SandboxBuilder, stateDir: string): Promise<void> {
  const scratch = await mkdtemp(path.join(stateDir, 'probe-'));
  try {
    const dirs = { socketDir: path.join(scratch, 's'), definitionsDir: path.join(scratch, 'd'), workDir: path.join(scratch, 'w') };
    for (const dir of Object.values(dirs)) await mkdir(dir);
    const command = sandbox.command({ ...dirs, runner: 'jit', memoryMb: 64, concurrency: 1, niceness: 0 }, () => ['-e', PROBE_SCRIPT]);
    await runWithFd3(command.file, command.args, command.fd3);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Exits 0 when the permission model refuses a file outside the allowed paths (one that exists in every sandbox). */
const PROBE_SCRIPT = [
  "const fs = require('node:fs');",
  "let read = 'open'; try { fs.readFileSync('/proc/self/status'); } catch (e) { read = e.code; }",
  "if (read !== 'ERR_ACCESS_DENIED') { console.error('the permission model did not refuse reading /proc/self/status: ' + read); process.exit(3); }",
  "process.stdout.write('ok');",
].join('\n');

function runWithFd3(file: string, args: string[], fd3: Buffer | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe', fd3 ? 'pipe' : 'ignore'] });
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    if (fd3) (child.stdio[3] as NodeJS.WritableStream).end(fd3);
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(new ProcessIsolationUnavailable(`${file}: ${error.message}`));
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0 && output.endsWith('ok')) resolve();
      else reject(new ProcessIsolationUnavailable(`a test sandbox failed (${signal ?? `exit ${code}`}): ${output.trim().split('\n').slice(-3).join(' | ').slice(0, 400)}`));
    });
  });
}
