/**
 * Why a sandbox container stopped, read from what the engine kept of it. One
 * table, so that the Docker driver's logs and metrics and its tests agree.
 */
import type { SandboxExitCause } from './sandbox-driver.js';

/** What `docker inspect` and `docker logs` tell of a stopped container. */
export interface ContainerExit {
  readonly oomKilled: boolean;
  readonly exitCode: number;
  /** The last lines the container wrote (stdout and stderr). */
  readonly output: string;
}

/**
 * Exit statuses of a runner that V8 aborted on heap exhaustion: SIGABRT as seen
 * through the init process (128 + 6), or SIGTRAP on some V8 builds (128 + 5).
 */
const HEAP_ABORT_CODES = new Set([133, 134]);
const HEAP_MESSAGE = /heap out of memory|Reached heap limit/i;

/**
 * The kernel's OOM kill wins over everything (it is what really happened, even
 * if the core destroyed the sandbox a moment later); then the cause the core
 * destroyed it for; then the V8 heap limit; anything else is a crash. `exit` is
 * undefined when the container was already removed.
 *
 * A destroy for `crash` is the core seeing the runner's connection drop, which is
 * how a runner that is ending on its own looks from outside: it is no reason of
 * the core's, so what the exit says (a heap limit) wins over it.
 */
export function containerExitCause(exit: ContainerExit | undefined, destroyCause?: SandboxExitCause): SandboxExitCause {
  if (exit?.oomKilled) return 'oom';
  if (destroyCause && destroyCause !== 'crash') return destroyCause;
  if (exit && (HEAP_ABORT_CODES.has(exit.exitCode) || HEAP_MESSAGE.test(exit.output))) return 'heap-limit';
  return 'crash';
}
