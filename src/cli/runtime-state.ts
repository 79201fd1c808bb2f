/**
 * What `uhlp start` and `uhlp dev` record so that `uhlp stop`, `uhlp status` and
 * the client commands can find the running core: pids, the spine socket, the
 * core URL, the operator listener's URL and the start time, in `<data-dir>/runtime.json`.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface TrackedProcess {
  pid: number;
  command: string[];
  log: string;
}

export interface RuntimeState {
  version: 1;
  /** Who recorded it: `uhlp start` (background processes) or `uhlp dev` (a core in the foreground, its std-body host its child). @defaultValue `start` */
  mode?: 'start' | 'dev';
  startedAt: string;
  definitionsDir: string;
  socketPath: string;
  url: string;
  /** The operator listener's URL (src/core/operator-server.ts). @defaultValue none: a core recorded before it had one */
  operatorUrl?: string;
  core: TrackedProcess;
  stdBody: TrackedProcess;
}

export function runtimeStatePath(dataDir: string): string {
  return path.join(dataDir, 'runtime.json');
}

export function readRuntimeState(dataDir: string): RuntimeState | undefined {
  try {
    const state = JSON.parse(readFileSync(runtimeStatePath(dataDir), 'utf8')) as RuntimeState;
    return state.version === 1 ? state : undefined;
  } catch {
    return undefined;
  }
}

export function writeRuntimeState(dataDir: string, state: RuntimeState): void {
  mkdirSync(dataDir, { recursive: true });
  const file = runtimeStatePath(dataDir);
  // Write-then-rename: a reader never sees half a file.
  writeFileSync(`${file}.tmp`, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(`${file}.tmp`, file);
}

export function clearRuntimeState(dataDir: string): void {
  rmSync(runtimeStatePath(dataDir), { force: true });
}

/** Whether `pid` runs: it exists (EPERM: someone else's) and is not a zombie, dead and waiting for its parent to reap it. */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the command name, which may itself hold ")".
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    // No /proc (not Linux): kill(0) said it exists.
    return true;
  }
}
