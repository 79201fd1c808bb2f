/**
 * Why a sandbox pod's runner stopped, read from the pod's container status: the
 * pod counterpart of container-exit-cause.ts, with the same order of evidence.
 */
import { containerExitCause } from './container-exit-cause.js';
import type { SandboxExitCause } from './sandbox-driver.js';

/** The part of a V1ContainerStatus (`state.terminated` or `lastState.terminated`) that tells how it ended. */
export interface PodContainerTermination {
  readonly reason?: string;
  readonly exitCode?: number;
  readonly message?: string;
}

/**
 * The kubelet reports a kernel OOM kill as reason `OOMKilled`; the rest is read as
 * from a container (V8 heap abort codes, the runner's last words in `message`, which
 * the runner's terminationMessagePolicy may fill). `termination` is undefined when the
 * pod was deleted before its container ended (a deleted pod: the cause the core gave,
 * or a crash when someone else deleted it).
 */
export function podExitCause(termination: PodContainerTermination | undefined, destroyCause?: SandboxExitCause): SandboxExitCause {
  if (!termination) return destroyCause ?? 'crash';
  return containerExitCause(
    { oomKilled: termination.reason === 'OOMKilled', exitCode: termination.exitCode ?? -1, output: termination.message ?? '' },
    destroyCause,
  );
}
