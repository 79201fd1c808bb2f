/**
 * The conversation `core.llm.generate` carries (docs/mcp.md): what the
 * llm-orchestrator sends through MCP and what the core's providers take and
 * answer. OpenAI's chat completions in camelCase: system, user, assistant (text
 * and/or tool calls) and tool (a tool call's result) messages; function tools
 * offered to the model; an optional JSON Schema for structured output; the
 * tokens a completion took. Both sides import these; neither declares its own.
 */

/** One function call the model asked for. `arguments` is the JSON text the model wrote, unparsed. */
export interface LlmToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

export type LlmMessage =
  | { readonly role: 'system' | 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string | null; readonly toolCalls?: readonly LlmToolCall[] }
  | { readonly role: 'tool'; readonly toolCallId: string; readonly content: string };

export type LlmRole = LlmMessage['role'];

/** A function offered to the model (OpenAI's `tools: [{type: 'function', function}]`). */
export interface LlmToolSpec {
  /** Matches the provider's `TOOL_NAME_PATTERN`. */
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments object. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Ask for structured output: the answer should be JSON valid against `schema`. The caller still validates. */
export interface LlmResponseSchema {
  /** Matches the provider's `TOOL_NAME_PATTERN` (OpenAI's rule for schema names). */
  readonly name: string;
  readonly schema: Readonly<Record<string, unknown>>;
}

/** Tokens one completion took. */
export interface LlmUsage {
  readonly prompt: number;
  readonly completion: number;
}
