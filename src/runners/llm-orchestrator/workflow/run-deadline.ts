/**
 * The run's time: `core.workflow.load` says how much is left, and every node
 * runs within it. Past it the node's work is abandoned (it may still be
 * running; its outcome is dropped) and the run fails UHLP_WORKFLOW_TIMEOUT.
 */
import { withDeadline } from '../../../shared/deadline.js';
import type { WorkflowTimeoutError } from '../../../shared/workflow-errors.js';
import type { EngineClock } from './engine-clock.js';

export class RunDeadline {
  private readonly at: number;

  constructor(
    remainingMs: number,
    private readonly clock: EngineClock,
    /** The error of a run past its time. */
    private readonly expired: () => WorkflowTimeoutError,
  ) {
    this.at = clock.now() + remainingMs;
  }

  /** `work`, or the run's timeout once its time is spent. */
  async within<T>(work: () => Promise<T>): Promise<T> {
    const left = this.at - this.clock.now();
    if (left <= 0) throw this.expired();
    return withDeadline(work(), left, this.expired);
  }
}
