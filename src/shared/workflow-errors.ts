/**
 * The errors a workflow run fails with, one class per code (undici's errors are
 * the model): a literal `name` and `code`, a default message, and the status
 * the registry (errors.ts) gives the code. The llm-orchestrator's engine ends a
 * run with them, and the core's run service and routes answer them; a run's
 * record keeps one as its `error` (contract/workflow/run-view.ts `toRunError`).
 */
import { UhlpError } from './errors.js';

/** The workflow file cannot be read at the run's revision, or breaks the workflow schema. */
export class WorkflowInvalidError extends UhlpError<'UHLP_WORKFLOW_INVALID'> {
  override readonly name = 'WorkflowInvalidError';

  constructor(message = 'the workflow is invalid', details?: unknown) {
    super('UHLP_WORKFLOW_INVALID', message, details);
  }
}

/** A required pre-flight constraint failed; the message is the constraint's error_message. */
export class WorkflowPreflightFailedError extends UhlpError<'UHLP_WORKFLOW_PREFLIGHT_FAILED'> {
  override readonly name = 'WorkflowPreflightFailedError';

  constructor(message = 'a required pre-flight constraint failed', details?: unknown) {
    super('UHLP_WORKFLOW_PREFLIGHT_FAILED', message, details);
  }
}

export class WorkflowTimeoutError extends UhlpError<'UHLP_WORKFLOW_TIMEOUT'> {
  override readonly name = 'WorkflowTimeoutError';

  constructor(message = 'the run ran past its time', details?: unknown) {
    super('UHLP_WORKFLOW_TIMEOUT', message, details);
  }
}

/** An evaluator's target failed the judge more than its max_retries times. */
export class WorkflowEvaluationFailedError extends UhlpError<'UHLP_WORKFLOW_EVALUATION_FAILED'> {
  override readonly name = 'WorkflowEvaluationFailedError';

  constructor(message = 'the target failed the judge more than max_retries times', details?: unknown) {
    super('UHLP_WORKFLOW_EVALUATION_FAILED', message, details);
  }
}

/** An approver rejected the run at an approval node without a reject_route. */
export class WorkflowRejectedError extends UhlpError<'UHLP_WORKFLOW_REJECTED'> {
  override readonly name = 'WorkflowRejectedError';

  constructor(message = 'the approver rejected the run', details?: unknown) {
    super('UHLP_WORKFLOW_REJECTED', message, details);
  }
}

export class WorkflowRunNotFoundError extends UhlpError<'UHLP_WORKFLOW_RUN_NOT_FOUND'> {
  override readonly name = 'WorkflowRunNotFoundError';

  constructor(message = 'no such run (or it has expired)', details?: unknown) {
    super('UHLP_WORKFLOW_RUN_NOT_FOUND', message, details);
  }
}

export class WorkflowRunNotPausedError extends UhlpError<'UHLP_WORKFLOW_RUN_NOT_PAUSED'> {
  override readonly name = 'WorkflowRunNotPausedError';

  constructor(message = 'the run is not paused; only a paused run is resumed', details?: unknown) {
    super('UHLP_WORKFLOW_RUN_NOT_PAUSED', message, details);
  }
}

/** A resume body that is not a decision; details name the field. */
export class WorkflowDecisionInvalidError extends UhlpError<'UHLP_WORKFLOW_DECISION_INVALID'> {
  override readonly name = 'WorkflowDecisionInvalidError';

  constructor(message = 'the resume body is not {"approved", "comment"?, "by"?}', details?: unknown) {
    super('UHLP_WORKFLOW_DECISION_INVALID', message, details);
  }
}

/** The run changed meanwhile (resumed elsewhere, finished, taken over); nothing was applied. */
export class WorkflowRunConflictError extends UhlpError<'UHLP_WORKFLOW_RUN_CONFLICT'> {
  override readonly name = 'WorkflowRunConflictError';

  constructor(message = 'the run was changed meanwhile; the change was not applied', details?: unknown) {
    super('UHLP_WORKFLOW_RUN_CONFLICT', message, details);
  }
}

export class WorkflowStateTooLargeError extends UhlpError<'UHLP_WORKFLOW_STATE_TOO_LARGE'> {
  override readonly name = 'WorkflowStateTooLargeError';

  constructor(message = 'the run record would be over the run size cap', details?: unknown) {
    super('UHLP_WORKFLOW_STATE_TOO_LARGE', message, details);
  }
}

/** After a node, the blackboard breaks the workflow's state.schema. */
export class WorkflowStateInvalidError extends UhlpError<'UHLP_WORKFLOW_STATE_INVALID'> {
  override readonly name = 'WorkflowStateInvalidError';

  constructor(message = 'the blackboard breaks the workflow state.schema', details?: unknown) {
    super('UHLP_WORKFLOW_STATE_INVALID', message, details);
  }
}

/** The run was running when its core stopped, and its persistence is memory. */
export class WorkflowInterruptedError extends UhlpError<'UHLP_WORKFLOW_INTERRUPTED'> {
  override readonly name = 'WorkflowInterruptedError';

  constructor(message = 'the run was running when its core stopped; its persistence is memory', details?: unknown) {
    super('UHLP_WORKFLOW_INTERRUPTED', message, details);
  }
}

/** A cancel of a run that has ended already. */
export class WorkflowRunEndedError extends UhlpError<'UHLP_WORKFLOW_RUN_ENDED'> {
  override readonly name = 'WorkflowRunEndedError';

  constructor(message = 'the run has ended; there is nothing to cancel', details?: unknown) {
    super('UHLP_WORKFLOW_RUN_ENDED', message, details);
  }
}

/** What a run that was cancelled answers the request that started it. */
export class WorkflowCancelledError extends UhlpError<'UHLP_WORKFLOW_CANCELLED'> {
  override readonly name = 'WorkflowCancelledError';

  constructor(message = 'the run was cancelled', details?: unknown) {
    super('UHLP_WORKFLOW_CANCELLED', message, details);
  }
}

/** A run of the request's session is active and the component's doubleTexting refuses (or gave up waiting for) a second one; details name it. */
export class WorkflowSessionBusyError extends UhlpError<'UHLP_WORKFLOW_SESSION_BUSY'> {
  override readonly name = 'WorkflowSessionBusyError';

  constructor(message = "a run of the request's session is active", details?: unknown) {
    super('UHLP_WORKFLOW_SESSION_BUSY', message, details);
  }
}

/** The session's queue of requests waiting for its active run is full. */
export class WorkflowSessionQueueFullError extends UhlpError<'UHLP_WORKFLOW_SESSION_QUEUE_FULL'> {
  override readonly name = 'WorkflowSessionQueueFullError';

  constructor(message = "the session's queue of waiting requests is full", details?: unknown) {
    super('UHLP_WORKFLOW_SESSION_QUEUE_FULL', message, details);
    }
}

/** A replay or fork body that is not one. */
export class WorkflowReplayInvalidError extends UhlpError<'UHLP_WORKFLOW_REPLAY_INVALID'> {
  override readonly name = 'WorkflowReplayInvalidError';

  constructor(message = "the replay or fork request is invalid", details?: unknown) {
    super('UHLP_WORKFLOW_REPLAY_INVALID', message, details);
  }
}

/** A replay or fork from a step the run's trace does not hold. */
export class WorkflowStepOutOfRangeError extends UhlpError<'UHLP_WORKFLOW_STEP_OUT_OF_RANGE'> {
  override readonly name = 'WorkflowStepOutOfRangeError';

  constructor(message = "the run's trace holds no such step", details?: unknown) {
    super('UHLP_WORKFLOW_STEP_OUT_OF_RANGE', message, details);
  }
}

/** A replay or fork from a step whose checkpoint was not kept whole. */
export class WorkflowCheckpointUnavailableError extends UhlpError<'UHLP_WORKFLOW_CHECKPOINT_UNAVAILABLE'> {
  override readonly name = 'WorkflowCheckpointUnavailableError';

  constructor(message = "the state before that step was not kept", details?: unknown) {
    super('UHLP_WORKFLOW_CHECKPOINT_UNAVAILABLE', message, details);
  }
}

/** A fork whose edited blackboard breaks the workflow's state.schema. */
export class WorkflowForkStateInvalidError extends UhlpError<'UHLP_WORKFLOW_FORK_STATE_INVALID'> {
  override readonly name = 'WorkflowForkStateInvalidError';

  constructor(message = "the forked blackboard breaks the workflow's state.schema", details?: unknown) {
    super('UHLP_WORKFLOW_FORK_STATE_INVALID', message, details);
  }
}
