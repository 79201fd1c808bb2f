/**
 * How a Docker sandbox's end is seen: wait for the container to stop, then read
 * why from its state (and, for an exit the core did not cause, the runner's
 * last words) into the cause the pool counts (container-exit-cause.ts).
 */
import type Docker from 'dockerode';
import type { Logger } from '../logger.js';
import { containerExitCause } from './container-exit-cause.js';
import { logTail } from './docker-output.js';
import type { SandboxExitCause } from './sandbox-driver.js';

/**
 * Resolves once the container has stopped, with its cause. `destroyCause` is the
 * pool's reason when it destroyed the container (read when the container is
 * gone): it wins over what the exit looks like, an OOM kill and a heap limit
 * seen after a dropped connection (`crash`) excepted.
 */
export async function watchExit(container: Docker.Container, logger: Logger, destroyCause: () => SandboxExitCause | undefined): Promise<SandboxExitCause> {
  try {
    await container.wait();
  } catch {
    // The container was removed before or while we waited: what follows reads
    // whatever is left of it.
  }
  let state: Docker.ContainerInspectInfo['State'] | undefined;
  try {
    state = (await container.inspect()).State;
  } catch {
    state = undefined;
  }
  if (state?.Running) {
    // The wait broke (the engine restarted); keep watching, without spinning.
    await new Promise((resolve) => setTimeout(resolve, 500));
    return watchExit(container, logger, destroyCause);
  }
  // Logs only matter for an exit the core did not cause (heap message, crash report); a dropped connection ('crash') is not a cause of the core's.
  const given = destroyCause();
  const output = state && !state.OOMKilled && (given === undefined || given === 'crash') ? await logTail(container) : '';
  const exit = state ? { oomKilled: state.OOMKilled, exitCode: state.ExitCode, output } : undefined;
  // Read again: the pool may have destroyed it while the logs were read.
  const cause = containerExitCause(exit, destroyCause());
  if (cause !== destroyCause()) {
    logger.warn(
      { sandbox: container.id.slice(0, 12), cause, exitCode: exit?.exitCode, oomKilled: exit?.oomKilled, output: output.slice(-500) || undefined },
      'sandbox container exited',
    );
  }
  return cause;
}
