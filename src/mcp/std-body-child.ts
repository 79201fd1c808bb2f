/**
 * Runs the std-body endpoint host as a child of the core, for `uhlp dev`: one
 * command gives sandboxes working shell and web tools. (`uhlp start` runs the
 * host as its own process instead.) The child gets only PATH from the core's
 * environment: commands receive what `shell.env` lists, through the payload.
 * The core's spine secret goes to it on a pipe at fd 3, so that it appears in
 * neither its command line nor its environment.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../logger.js';

/** The built host entry; from src/ and from dist/ alike it is dist/std-body/main.js. */
export const STD_BODY_ENTRY = fileURLToPath(new URL('../../dist/std-body/main.js', import.meta.url));

export interface StdBodyChildOptions {
  readonly socketPath: string;
  /** The core's spine secret, without which the spine refuses the host's routes. */
  readonly secret: string;
  readonly logger: Logger;
  /** @defaultValue STD_BODY_ENTRY */
  readonly entry?: string;
  /**
   * Time between SIGTERM and SIGKILL on stop.
   * @defaultValue 3000
   */
  readonly stopGraceMs?: number;
}

export interface StdBodyChild {
  readonly pid: number | undefined;
  /** Resolves when the host process has exited (or could not be started). */
  readonly exited: Promise<void>;
  /** Stops the host (SIGTERM, then SIGKILL after the grace) and resolves when it has exited. */
  stop(): Promise<void>;
}

export function spawnStdBodyChild(options: StdBodyChildOptions): StdBodyChild {
  const child: ChildProcess = spawn(process.execPath, [options.entry ?? STD_BODY_ENTRY, '--socket', options.socketPath, '--secret-fd', '3'], {
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  });
  const secretPipe = child.stdio[3] as Writable | null;
  // A child that died at once closes its end; the 'exit' handler below reports that.
  secretPipe?.on('error', () => undefined);
  secretPipe?.end(options.secret);
  let stopping = false;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      if (!stopping) options.logger.error({ code, signal, pid: child.pid }, 'std-body host exited; shell and web tools are unavailable');
      resolve();
    });
    // A spawn failure emits 'error' and no 'exit'.
    child.once('error', (error) => {
      options.logger.error({ err: error }, 'std-body host could not be started');
      resolve();
    });
  });
  // Its log lines are JSON already; they join the core's stderr stream as they are.
  child.stderr?.pipe(process.stderr);
  return {
    pid: child.pid,
    exited,
    async stop() {
      stopping = true;
      if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), options.stopGraceMs ?? 3000);
      await exited;
      clearTimeout(timer);
    },
  };
}
