/**
 * What the MCP endpoint asks of the core's workflow runs for the clients that
 * start and follow them (src/workflow-runs/mcp-run-tasks.ts): the start tool,
 * and the methods of the `io.modelcontextprotocol/tasks` extension. The
 * endpoint only routes; what a task is, and who may see it, is decided there.
 */
import type { ExecutionGrant } from './mcp-token-service.js';

/** The tool that starts a run of a WORKFLOW component of the caller's app. */
export const START_TOOL = 'core.workflow.start';
/** The extension a client declares in its per-request capabilities to be answered with tasks. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The extension's methods, answered by the core itself on the 2026-07-28 revision. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** A result object as the MCP server writes it (`resultType` included). */
export type McpResult = Record<string, unknown>;

/** A multi round-trip retry's fields: the echoed `requestState` and the client's `inputResponses`. */
export interface RetryFields {
  readonly requestState?: string;
  readonly inputResponses?: Record<string, unknown>;
}

export interface RunTaskCalls {
  /** Whether the grant's app (at its revision) has a WORKFLOW component to start: the tool is listed only then. */
  offers(grant: ExecutionGrant): boolean;
  /** A call of START_TOOL: a task (`asTask`), the run's result, or its approval's question as input_required. */
  call(grant: ExecutionGrant, args: unknown, asTask: boolean, retry: RetryFields): Promise<McpResult>;
  get(grant: ExecutionGrant, taskId: unknown): Promise<McpResult>;
  update(grant: ExecutionGrant, taskId: unknown, inputResponses: unknown): Promise<McpResult>;
  cancel(grant: ExecutionGrant, taskId: unknown): Promise<McpResult>;
}

/** The JSON-RPC error a task method answers: `-32602` for an unknown task or a malformed answer; `data.code` is the core's stable code. */
export class TaskRpcError extends Error {
  constructor(
    readonly rpcCode: number,
    message: string,
    readonly data: { readonly code: string; readonly field?: string; readonly status?: string },
  ) {
    super(message);
  }
}

/** START_TOOL as tools/list shows it. */
export const START_TOOL_LISTING = {
  name: START_TOOL,
  description:
    "Starts a run of a WORKFLOW component of the caller's app with `input` as its body. A client that declares the io.modelcontextprotocol/tasks extension gets a task (the run's id) to poll, answer and cancel; any other client gets the run's result, or its approval's question as input_required.",
  inputSchema: {
    type: 'object',
    properties: { component: { type: 'string', minLength: 1, maxLength: 128 }, input: {} },
    required: ['component'],
    additionalProperties: false,
  },
};

/** Whether a request's `_meta` declares the tasks extension among the client's capabilities. */
export function declaresTasks(params: unknown): boolean {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const capabilities = meta?.['io.modelcontextprotocol/clientCapabilities'] as { extensions?: Record<string, unknown> } | undefined;
  const extensions = capabilities?.extensions;
  return extensions !== undefined && extensions !== null && typeof extensions === 'object' && Object.hasOwn(extensions, TASKS_EXTENSION);
}

/** Whether a request's `_meta` declares form elicitation, which an approval's question needs. */
export function declaresElicitation(params: unknown): boolean {
  const meta = (params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  const capabilities = meta?.['io.modelcontextprotocol/clientCapabilities'] as { elicitation?: unknown } | undefined;
  return capabilities?.elicitation !== undefined && capabilities.elicitation !== null;
}

/**
 * The start tool's answer for a client that cannot be asked (no elicitation,
 * or a revision before input_required): an input_required answer becomes the
 * paused run `{runId, status: "paused", inputRequests}`, for the client to
 * decide over HTTP (`POST /_uhlp/runs/<id>/resume`); any other answer is kept.
 */
export function unaskedAnswer(answer: McpResult): McpResult {
  if (answer['resultType'] !== 'input_required') return answer;
  const paused = { runId: answer['requestState'], status: 'paused', inputRequests: answer['inputRequests'] };
  return { resultType: 'complete', content: [{ type: 'text', text: JSON.stringify(paused) }], structuredContent: paused };
}
