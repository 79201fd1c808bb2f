/**
 * The embedded-default driver: each sandbox is a child process running the
 * jit-runner on a Unix socket in a private directory. It gives no isolation
 * beyond a process (the Docker and pod drivers do that); it exists so that the
 * whole request path runs on a laptop with nothing installed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';
import type { Logger } from '../logger.js';
import type { SandboxDriver, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';

/**
 * The compiled runner entry. Resolved from the package root so that it is the same
 * file whether this module runs from dist/ or, in tests, from src/.
 */
export const RUNNER_ENTRY = fileURLToPath(new URL('../../dist/runner/main.js', import.meta.url));

export interface ProcessDriverOptions {
  readonly logger: Logger;
  /** Runner entry script. @defaultValue RUNNER_ENTRY (dist/runner/main.js) */
  readonly runnerEntry?: string;
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
  /** The cause the pool gave when it destroyed us; wins over what the exit looks like. */
  destroyCause?: SandboxExitCause;
}

/** Exit code Node uses when V8 aborts on heap exhaustion (SIGABRT -> 134). */
const HEAP_ABORT_CODES = new Set([134]);

export class ProcessDriver implements SandboxDriver {
  readonly name = 'process';
  private readonly socketDir: string;
  private readonly live = new Set<ProcessHandle>();
  private readonly options: ProcessDriverOptions;

  constructor(options: ProcessDriverOptions) {
    this.options = options;
    // Unix socket paths are limited to ~108 bytes: keep the directory short.
    this.socketDir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-'));
  }

  create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxHandle> {
    const id = `p-${randomBytes(6).toString('hex')}`;
    const socketPath = path.join(this.socketDir, `${id}.sock`);
    const args = [
      `--max-old-space-size=${spec.pool.limits.memoryMb}`,
      this.options.runnerEntry ?? RUNNER_ENTRY,
      '--listen',
      `unix:${socketPath}`,
      '--definitions',
      spec.definitionsRoot,
      '--concurrency',
      String(spec.pool.concurrency),
      '--exit-on-stdin-close',
    ];
    // Only what the runner needs: the core's own environment (secrets, tokens) stays out.
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH ?? '/usr/bin:/bin', NODE_ENV: 'production', TZ: 'UTC' };
    const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'], env, cwd: this.socketDir });
    this.lowerPriority(id, child);
    let stderrTail = '';
    const exited = new Promise<SandboxExitCause>((resolve) => {
      child.once('exit', (code, sig) => {
        this.live.delete(handle);
        const cause: SandboxExitCause =
          handle.destroyCause ??
          (HEAP_ABORT_CODES.has(code ?? 0) || /heap out of memory/i.test(stderrTail) ? 'heap-limit' : 'crash');
        if (!handle.destroyCause) {
          this.options.logger.warn({ sandbox: id, code, signal: sig, stderr: stderrTail.slice(-500) }, 'sandbox process exited');
        }
        resolve(cause);
      });
    });
    const handle: ProcessHandle = { id, endpoint: { kind: 'unix', socketPath }, exited, child };
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

  private lowerPriority(id: string, child: ChildProcess): void {
    if (child.pid === undefined) return;
    try {
      os.setPriority(child.pid, Math.min(19, os.getPriority() + (this.options.niceness ?? RUNNER_NICENESS)));
    } catch (error) {
      // Raising a child's niceness is always allowed; failing here means it already exited.
      this.options.logger.debug({ sandbox: id, err: (error as Error).message }, 'could not lower the runner priority');
    }
  }

  async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    const proc = handle as ProcessHandle;
    proc.destroyCause ??= cause;
    const { child } = proc;
    if (child.exitCode === null && child.signalCode === null) {
      // A stuck or timed-out runner gets no grace: it may be spinning on the CPU.
      const graceful = cause !== 'timeout' && cause !== 'unhealthy' && cause !== 'bad-response';
      child.kill(graceful ? 'SIGTERM' : 'SIGKILL');
      const grace = this.options.stopGraceMs ?? 2000;
      const killer = graceful ? setTimeout(() => child.kill('SIGKILL'), grace) : undefined;
      await proc.exited;
      clearTimeout(killer);
    }
    rmSync((proc.endpoint as { socketPath: string }).socketPath, { force: true });
  }

  async close(): Promise<void> {
    await Promise.all([...this.live].map((handle) => this.destroy(handle, 'shutdown')));
    rmSync(this.socketDir, { recursive: true, force: true });
  }
}

/** The line of a crash report that says what went wrong. */
function firstErrorLine(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines.find((l) => /error/i.test(l)) ?? lines[lines.length - 1] ?? '').slice(0, 300);
}
