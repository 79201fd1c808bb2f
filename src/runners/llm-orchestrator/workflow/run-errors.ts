/**
 * Any failure of a step as the run's error (run-view.ts RunError): a registry
 * error with its code and status; the core's refusal of a tool call with the
 * code, status and details it came with; another coded error with its own
 * code; anything else as UHLP_INTERNAL, saying nothing of what it was.
 * Messages are cut to what a run record keeps.
 */
import { errorStatus, InternalError, UhlpError } from '../../../shared/errors.js';
import { toRunError, type RunError } from '../../../contract/workflow/run-view.js';
import { ToolCallError } from '../../kit/tools-client.js';

/** Longest message of a run's error. */
const MAX_MESSAGE_CHARS = 4096;

export function asRunError(error: unknown): RunError {
  if (error instanceof UhlpError) return cut(toRunError(error));
  // A refusal the core sent without a status failed as a call does.
  if (error instanceof ToolCallError) return cut({ code: error.code, message: error.message, status: error.status ?? errorStatus('UHLP_MCP_CALL_FAILED'), ...(error.details !== undefined ? { details: error.details } : {}) });
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') {
    const coded = error as Error & { code: string; status?: number; details?: unknown };
    return cut({ code: coded.code, message: coded.message, status: typeof coded.status === 'number' ? coded.status : errorStatus('UHLP_INTERNAL'), ...(coded.details !== undefined ? { details: coded.details } : {}) });
  }
  return toRunError(new InternalError('the workflow step failed'));
}

function cut(error: RunError): RunError {
  return error.message.length > MAX_MESSAGE_CHARS ? { ...error, message: error.message.slice(0, MAX_MESSAGE_CHARS) } : error;
}
