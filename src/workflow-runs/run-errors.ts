/** The errors a run records when the core ends it: past its time, or failed in the core. */
import { UhlpError } from '../shared/errors.js';
import type { RunError } from '../contract/workflow/run-view.js';
import type { RunRecord } from './run-record.js';

export function timeoutError(record: RunRecord): RunError {
  return { code: 'UHLP_WORKFLOW_TIMEOUT', message: `the run ran past its ${record.timing.timeoutMs} ms`, status: 504, details: { timeoutMs: record.timing.timeoutMs } };
}

export function runErrorOf(error: unknown): RunError {
  if (error instanceof UhlpError) return { code: error.code, message: error.message, status: error.statusCode, ...(error.details !== undefined ? { details: error.details } : {}) };
  return { code: 'UHLP_INTERNAL', message: 'the run failed in the core', status: 500 };
}
