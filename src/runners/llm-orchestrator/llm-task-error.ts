/**
 * A failure of an LLM task the orchestrator answers as the /execute `error`
 * result: the code (src/shared/errors.ts), the HTTP status the core answers with, and
 * details for the client. The runner server maps it (resultFromThrown), as it
 * maps the core's own tool errors, which pass through with their codes.
 */
export class LlmTaskError extends Error {
  constructor(
    readonly code: 'UHLP_PROMPT_TEMPLATE_INVALID' | 'UHLP_PROMPT_TEMPLATE_ERROR' | 'UHLP_LLM_OUTPUT_INVALID' | 'UHLP_LLM_TOOL_LOOP_LIMIT' | 'UHLP_LLM_OUTPUT_SCHEMA_INVALID',
    message: string,
    readonly status: number,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'LlmTaskError';
  }
}
