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
import type { SpineServer } from '../spine/spine-server.js';
import { SHELL_AFFORDANCE, SHELL_CAPABILITY } from '../std-body/shell-exec.js';
import { WEB_AFFORDANCE, WEB_CAPABILITY } from '../std-body/web-fetch.js';

/** How long start-up waits for the std-body child to register its routes. */
const STD_BODY_READY_MS = 10_000;

/** The built host entry; from src/ and from dist/ alike it is dist/std-body/main.js. */
export const STD_BODY_ENTRY = fileURLToPath(new URL('../../dist/std-body/main.js', import.meta.url));

export interface StdBodyChildOptions {
  readonly socketPath: string;
  /** The core's spine secret, without which the spine refuses the host's routes. */
  readonly secret: string;
  readonly logger: Logger;
  /** @defaultValue STD_BODY_ENTRY */
  readonly entry?: string;
  /** The host's PATH (CoreConfig.hostEnv), the one variable of the core's environment the host gets. @defaultValue `/usr/bin:/bin` */
  readonly path?: string;
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
    env: { PATH: options.path ?? '/usr/bin:/bin' },
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

/** Waits (bounded) for the std-body child's routes on the spine; a child that dies at start does not hold start-up for the whole wait. */
export async function waitForStdBody(spine: SpineServer, stdBody: StdBodyChild, logger: Logger): Promise<void> {
  const died = stdBody.exited.then(() => {
    throw new Error('the std-body host exited before registering');
  });
  died.catch(() => {});
  await Promise.race([
    Promise.all([
      spine.waitForRoute(SHELL_AFFORDANCE, SHELL_CAPABILITY, STD_BODY_READY_MS),
      spine.waitForRoute(WEB_AFFORDANCE, WEB_CAPABILITY, STD_BODY_READY_MS),
    ]),
    died,
  ]).catch((error: Error) => logger.warn({ err: error.message }, 'std-body host not registered; shell and web tools are unavailable'));
}
