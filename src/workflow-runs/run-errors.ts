/** The errors a run records when the core ends it: past its time, or failed in the core. */
import { InternalError, UhlpError } from '../shared/errors.js';
import { WorkflowTimeoutError } from '../shared/workflow-errors.js';
import { toRunError, type RunError } from '../contract/workflow/run-view.js';
import type { RunRecord } from './run-record.js';

export function timeoutError(record: RunRecord): RunError {
  return toRunError(new WorkflowTimeoutError(`the run ran past its ${record.timing.timeoutMs} ms`, { timeoutMs: record.timing.timeoutMs }));
}

export function runErrorOf(error: unknown): RunError {
  return toRunError(error instanceof UhlpError ? error : new InternalError('the run failed in the core'));
}
