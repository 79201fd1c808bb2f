/**
 * The embedded-default driver: each sandbox is a child process running the
 * runner its pool names (the jit-runner or the llm-orchestrator, each staged in
 * a directory of its own) on a Unix socket in a private directory, contained by the process
 * sandbox of process-sandbox.ts (bubblewrap namespaces, seccomp and Node's
 * permission model; or, when the operator accepted it, the permission model
 * alone). Each sandbox gets a writable tree of its own (`<workRoot>/<id>/`, with
 * `tmp/` and `output/`), mounted at /work; it can write nowhere else.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../logger.js';
import { containerExitCause } from './container-exit-cause.js';
import type { ProcessSandbox } from './process-sandbox.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import { createWorkTree, type WorkTree } from './work-tree.js';

export interface ProcessDriverOptions {
  readonly logger: Logger;
  /** How runners are contained (prepareProcessSandbox). */
  readonly sandbox: ProcessSandbox;
  /** Host directory under which each sandbox gets its writable tree. */
  readonly workRoot: string;
  /** How long a runner may take to print its ready line, ms. @defaultValue 10000 */
  readonly startTimeoutMs?: number;
  /** Grace between SIGTERM and SIGKILL on destroy, ms. @defaultValue 2000 */
  readonly stopGraceMs?: number;
  /** How much nicer than the core runners run; see RUNNER_NICENESS. @defaultValue RUNNER_NICENESS */
  readonly niceness?: number;
}

/**
 * Runners run at a lower CPU priority than the core: this much nicer, at most 19. Every request wakes a runner,
 * and at equal priority the woken runner preempts the core's request thread, which
 * then cannot read the next request until the runner yields. On a busy two-core
 * machine that made the core, not the scripts, the bottleneck (`npm run bench`:
 * about 12% more requests per second at niceness 10). A script still gets all the
 * CPU nobody else wants, and a script spinning in a loop can no longer slow
 * every other app's requests down.
 */
export const RUNNER_NICENESS = 10;

interface ProcessHandle extends SandboxHandle {
  readonly child: ChildProcess;
  readonly socketDir: string;
  readonly workTree: WorkTree;
  /** The cause the pool gave when it destroyed us; wins over what the exit looks like. */
  destroyCause?: SandboxExitCause;
}

/**
 * How long a runner whose connection dropped gets to end on its own before it
 * is killed: its own exit (a heap limit's status and line) says why it went,
 * a kill would say nothing.
 */
const CRASH_EXIT_GRACE_MS = 500;

export class ProcessDriver implements SandboxDriver {
  readonly name = 'process';
  private readonly socketDir: string;
  private readonly live = new Set<ProcessHandle>();
  private readonly options: ProcessDriverOptions;

  constructor(options: ProcessDriverOptions) {
    this.options = options;
    // Unix socket paths are limited to ~108 bytes: keep the directory short.
    this.socketDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-'));
    // Trees of an earlier run's sandboxes: their processes died with that core.
    for (const stale of listDir(options.workRoot)) if (stale.startsWith('p-')) rmSync(path.join(options.workRoot, stale), { recursive: true, force: true });
  }

  get isolation(): ProcessSandbox['isolation'] {
    return this.options.sandbox.isolation;
  }

  create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxHandle> {
    const id = `p-${randomBytes(6).toString('hex')}`;
    // A directory per sandbox: a runner sees its own socket and nobody else's.
    const socketDir = path.join(this.socketDir, id);
    mkdirSync(socketDir, { mode: 0o700 });
    const work = createWorkTree(this.options.workRoot, id);
    let command: ReturnType<ProcessSandbox['launch']>;
    try {
      command = this.options.sandbox.launch({
        runner: spec.pool.runner,
        socketDir,
        definitionsDir: spec.definitionsRoot,
        workDir: work.hostDir,
        ...(spec.mcpSocket ? { mcpSocket: spec.mcpSocket } : {}),
        ...(spec.mcpServer !== undefined ? { mcpServer: spec.mcpServer } : {}),
        memoryMb: spec.pool.limits.memoryMb,
        concurrency: spec.pool.concurrency,
        niceness: Math.min(19, this.options.niceness ?? RUNNER_NICENESS),
      });
    } catch (error) {
      // A runner this host cannot start (no python3 for a python pool): a failed start, not a throw.
      rmSync(socketDir, { recursive: true, force: true });
      rmSync(work.hostDir, { recursive: true, force: true });
      return Promise.reject(error);
    }
    // Only what the runner needs: the core's own environment (secrets, tokens) stays out.
    const child = spawn(command.file, command.args, {
      stdio: ['pipe', 'pipe', 'pipe', command.fd3 ? 'pipe' : 'ignore'],
      env: this.options.sandbox.runnerEnv(work.hostDir),
      cwd: work.hostDir,
    });
    if (command.fd3) (child.stdio[3] as NodeJS.WritableStream).end(command.fd3);
    let stderrTail = '';
    const exited = new Promise<SandboxExitCause>((resolve) => {
      child.once('exit', (code, sig) => {
        this.live.delete(handle);
        // Read as a container's exit is (one table); a V8 abort unseen through bubblewrap is its signal.
        const cause = containerExitCause({ oomKilled: false, exitCode: code ?? (sig === 'SIGABRT' ? 134 : -1), output: stderrTail }, handle.destroyCause);
        if (cause !== handle.destroyCause) {
          this.options.logger.warn({ sandbox: id, code, signal: sig, stderr: stderrTail.slice(-500) }, 'sandbox process exited');
        }
        resolve(cause);
      });
    });
    const handle: ProcessHandle = {
      id,
      endpoint: { kind: 'unix', socketPath: command.socketPath },
      exited,
      child,
      socketDir,
      workTree: { hostDir: work.hostDir, sandboxDir: command.workDir, ...(command.sideDirs !== undefined ? { sideDirs: command.sideDirs } : {}) },
    };
    this.live.add(handle);
    child.stdin!.on('error', () => undefined);

    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-4096);
      for (const line of chunk.split('\n')) if (line) this.options.logger.info({ sandbox: id, stream: 'stderr' }, line);
    });

    return new Promise<SandboxHandle>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      let ready = false;
      const fail = (reason: string): void => {
        if (ready) return;
        ready = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        void this.destroy(handle, 'start-failed');
        reject(new Error(`sandbox ${id} did not start: ${reason}`));
      };
      const onAbort = (): void => fail('aborted');
      const timeoutMs = this.options.startTimeoutMs ?? 10_000;
      const timer = setTimeout(() => fail(`no ready line within ${timeoutMs} ms`), timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      child.once('error', (error) => fail(error.message));
      void exited.then(() => fail(`exited during start${stderrTail ? `: ${firstErrorLine(stderrTail)}` : ''}`));
      lines.on('line', (line) => {
        if (!ready && line.startsWith('{') && line.includes('"ready"')) {
          ready = true;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve(handle);
          return;
        }
        // What scripts print goes to the core's log, tagged with the sandbox.
        this.options.logger.info({ sandbox: id, stream: 'stdout' }, line);
      });
    });
  }

  async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    const proc = handle as ProcessHandle;
    proc.destroyCause ??= cause;
    const { child } = proc;
    if (cause === 'crash' && child.exitCode === null && child.signalCode === null) {
      await Promise.race([proc.exited, delay(CRASH_EXIT_GRACE_MS, undefined, { ref: false })]);
    }
    if (child.exitCode === null && child.signalCode === null) {
      // A stuck or timed-out runner gets no grace: it may be spinning on the CPU.
      const graceful = cause !== 'timeout' && cause !== 'unhealthy' && cause !== 'bad-response';
      child.kill(graceful ? 'SIGTERM' : 'SIGKILL');
      const grace = this.options.stopGraceMs ?? 2000;
      const killer = graceful ? setTimeout(() => child.kill('SIGKILL'), grace) : undefined;
      await proc.exited;
      clearTimeout(killer);
    }
    rmSync(proc.socketDir, { recursive: true, force: true });
    rmSync(proc.workTree.hostDir, { recursive: true, force: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((handle) => this.destroy(handle, 'shutdown')));
    rmSync(this.socketDir, { recursive: true, force: true });
  }
}

function listDir(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The line of a crash report that says what went wrong. */
function firstErrorLine(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines.find((l) => /error/i.test(l)) ?? lines[lines.length - 1] ?? '').slice(0, 300);
}
