/**
 * The errors a runner answers an execution with, one class per code (undici's
 * errors are the model): a literal `name` and `code`, a default message, and
 * the status the registry (errors.ts) gives the code. A runner answers them as
 * the /execute `error` result (script-result.ts `errorResult`), so the status a
 * client gets is the registry's.
 */
import { UhlpError } from './errors.js';

/** The task in the /execute context is not one this runner runs, or breaks its schema. */
export class ExecuteBadRequestError extends UhlpError<'UHLP_EXECUTE_BAD_REQUEST'> {
  override readonly name = 'ExecuteBadRequestError';

  constructor(message = 'the /execute request names no task this runner can run', details?: unknown) {
    super('UHLP_EXECUTE_BAD_REQUEST', message, details);
  }
}

export class ScriptNotFoundError extends UhlpError<'UHLP_SCRIPT_NOT_FOUND'> {
  override readonly name = 'ScriptNotFoundError';

  constructor(message = 'the script does not exist in the revision', details?: unknown) {
    super('UHLP_SCRIPT_NOT_FOUND', message, details);
  }
}

export class ScriptLoadFailedError extends UhlpError<'UHLP_SCRIPT_LOAD_FAILED'> {
  override readonly name = 'ScriptLoadFailedError';

  constructor(message = 'the script could not be loaded', details?: unknown) {
    super('UHLP_SCRIPT_LOAD_FAILED', message, details);
  }
}

export class FunctionNotFoundError extends UhlpError<'UHLP_FUNCTION_NOT_FOUND'> {
  override readonly name = 'FunctionNotFoundError';

  constructor(message = 'the script exports no such function', details?: unknown) {
    super('UHLP_FUNCTION_NOT_FOUND', message, details);
  }
}

/** The script threw something without a string code of its own. */
export class ScriptExceptionError extends UhlpError<'UHLP_SCRIPT_EXCEPTION'> {
  override readonly name = 'ScriptExceptionError';

  constructor(message = 'the script threw', details?: unknown) {
    super('UHLP_SCRIPT_EXCEPTION', message, details);
  }
}

export class ScriptBadResultError extends UhlpError<'UHLP_SCRIPT_BAD_RESULT'> {
  override readonly name = 'ScriptBadResultError';

  constructor(message = 'the returned value cannot be answered', details?: unknown) {
    super('UHLP_SCRIPT_BAD_RESULT', message, details);
  }
}

/** Refused by the template sandbox; details name the file, line, column and cause. */
export class PromptTemplateInvalidError extends UhlpError<'UHLP_PROMPT_TEMPLATE_INVALID'> {
  override readonly name = 'PromptTemplateInvalidError';

  constructor(message = 'the prompt template is refused by the template sandbox', details?: unknown) {
    super('UHLP_PROMPT_TEMPLATE_INVALID', message, details);
  }
}

/** A template that cannot be read or fails to render; details name the file, line, column and cause. */
export class PromptTemplateFailedError extends UhlpError<'UHLP_PROMPT_TEMPLATE_ERROR'> {
  override readonly name = 'PromptTemplateFailedError';

  constructor(message = 'the prompt template failed to render', details?: unknown) {
    super('UHLP_PROMPT_TEMPLATE_ERROR', message, details);
  }
}

export class LlmOutputSchemaInvalidError extends UhlpError<'UHLP_LLM_OUTPUT_SCHEMA_INVALID'> {
  override readonly name = 'LlmOutputSchemaInvalidError';

  constructor(message = 'the output schema cannot be read or does not compile', details?: unknown) {
    super('UHLP_LLM_OUTPUT_SCHEMA_INVALID', message, details);
  }
}

/** The model's answer failed the output schema after every attempt (or a judge answered no score). */
export class LlmOutputInvalidError extends UhlpError<'UHLP_LLM_OUTPUT_INVALID'> {
  override readonly name = 'LlmOutputInvalidError';

  constructor(message = "the model's answer failed the output schema", details?: unknown) {
    super('UHLP_LLM_OUTPUT_INVALID', message, details);
  }
}

export class LlmToolLoopLimitError extends UhlpError<'UHLP_LLM_TOOL_LOOP_LIMIT'> {
  override readonly name = 'LlmToolLoopLimitError';

  constructor(message = 'the model asked for more tool calls than maxToolCalls', details?: unknown) {
    super('UHLP_LLM_TOOL_LOOP_LIMIT', message, details);
  }
}
