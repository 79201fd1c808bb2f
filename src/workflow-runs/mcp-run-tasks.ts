/**
 * Workflow runs as MCP clients see them (MCP 2026-07-28): the tool
 * `core.workflow.start` starts a run of one of the caller's app's WORKFLOW
 * components, and
 *
 * - to a client that declares the `io.modelcontextprotocol/tasks` extension
 *   it answers at once as a task (`resultType: "task"`) whose id is the run's
 *   id; `tasks/get` reads the run (running → working, paused at an approval →
 *   input_required with the approval's question as an elicitation, completed,
 *   failed and timed out → completed with the run's result or its error as a
 *   tool error, cancelled → cancelled), `tasks/update` answers the approval,
 *   `tasks/cancel` cancels the run (run-cancels.ts);
 * - to any other client it answers once the run has ended (the run's result),
 *   or, at an approval, `resultType: "input_required"` (a multi round-trip
 *   request) whose `requestState` is the run's id: the client's retry with the
 *   answer resumes the run (run-approvals.ts), ending in its result or the next
 *   approval's question.
 *
 * The run id stays the credential it is on the HTTP routes, and more: a task is
 * found only through a token of the run's own app, so another app's run is
 * "not found" whatever id is sent.
 */
import { randomUUID } from 'node:crypto';
import { toRunError } from '../contract/workflow/run-view.js';
import type { ExecutionGrant } from '../mcp/mcp-token-service.js';
import { START_TOOL, TaskRpcError, type McpResult, type RetryFields, type RunTaskCalls } from '../mcp/run-task-calls.js';
import type { Logger } from '../logger.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { isUhlpError, UhlpError } from '../shared/errors.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { Decision, RunApprovals } from './run-approvals.js';
import type { RunCancels } from './run-cancels.js';
import { ledgerCancel } from './run-cancel-ledger.js';
import type { RunsLedger } from './runs-routes.js';
import { RUN_ID_HEADER } from './run-links.js';
import { isRunId, type RunRecord } from './run-record.js';
import type { RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

/** How often a client is asked to poll a task. */
export const TASK_POLL_INTERVAL_MS = 500;
/** How long a start waits for its run to be created before it gives up (the pool may be slow to answer). */
const CREATE_WAIT_MS = 30_000;
/** How long a tasks/update waits for the answered run to leave its approval, so that the next tasks/get sees it. */
const RESUME_WAIT_MS = 5_000;
const POLL_MS = 10;

export interface McpRunTasksOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly pipeline: PipelineTurns;
  readonly approvals: RunApprovals;
  readonly cancels: RunCancels;
  readonly logger: Logger;
  /** How long a run (so its task) is kept after its last change, ms. */
  readonly ttlMs: number;
}

/** What the tool's arguments are. */
export interface StartArguments {
  readonly component: string;
  readonly input?: unknown;
}

export class McpRunTasks implements RunTaskCalls {
  private ledger: RunsLedger | undefined;

  constructor(private readonly options: McpRunTasksOptions) {}

  /** Where cancels are ledgered, as the HTTP route's are (known once the core's turn keeper is built). */
  useLedger(ledger: RunsLedger): void {
    this.ledger = ledger;
  }

  offers(grant: ExecutionGrant): boolean {
    let app;
    try {
      app = this.options.catalog.app(grant.appId, grant.revision);
    } catch {
      return false;
    }
    for (const component of app.components.values()) if (component.handler === 'WORKFLOW') return true;
    return false;
  }

  /**
   * A call of START_TOOL: a new run, or, with `requestState` (a retry of a
   * multi round-trip request), the answer to the run's approval.
   */
  async call(grant: ExecutionGrant, args: unknown, asTask: boolean, retry: RetryFields): Promise<McpResult> {
    if (retry.requestState !== undefined) return this.answerRetry(grant, retry.requestState, retry.inputResponses ?? {});
    let start: StartArguments;
    try {
      start = startArguments(args);
    } catch (error) {
      return toolError(error);
    }
    const app = this.options.catalog.app(grant.appId, grant.revision);
    const component = app.components.get(start.component);
    if (component === undefined || component.handler !== 'WORKFLOW') {
      return toolError(new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `"${start.component.slice(0, 63)}" is no WORKFLOW component of app ${app.id}`, { field: 'component' }));
    }
    const notes: TurnNotes = {};
    const pipeline = this.options.pipeline.attached();
    const running = pipeline.run(
      {
        app,
        component,
        pool: app.pools.get(component.pool)!,
        requestId: randomUUID(),
        source: 'internal',
        route: START_TOOL,
        requestDataJson: canonicalJson({ source: 'trigger', triggerDetails: { sourceAppId: app.id, triggerEvent: `mcp:${START_TOOL}`, payload: start.input ?? null } }),
        session: undefined,
        declaredOutputs: component.declaredOutputs ?? [],
      },
      notes,
    );
    if (!asTask) {
      try {
        await running;
      } catch (error) {
        if (notes[RUN_ID_HEADER] === undefined) return toolError(error);
      }
      const runId = notes[RUN_ID_HEADER];
      if (runId === undefined) return toolError(new UhlpError('UHLP_INTERNAL', 'the run did not start'));
      return this.outcome(await this.options.runs.get(runId));
    }
    // A task: answered once its run exists, while the run goes on.
    let settled: { error?: unknown } | undefined;
    running.then(
      () => (settled = {}),
      (error: unknown) => {
        settled = { error };
        this.options.logger.warn({ err: error, runId: notes[RUN_ID_HEADER] }, 'a workflow run started over MCP failed');
      },
    );
    const deadline = Date.now() + CREATE_WAIT_MS;
    for (;;) {
      const runId = notes[RUN_ID_HEADER];
      const record = runId === undefined ? undefined : await this.options.runs.find(runId);
      if (record !== undefined) return { resultType: 'task', ...this.taskOf(record) };
      if (settled !== undefined) return toolError(settled.error ?? new UhlpError('UHLP_INTERNAL', 'the run did not start'));
      if (Date.now() >= deadline) return toolError(new UhlpError('UHLP_SANDBOX_UNAVAILABLE', 'the run was not created in time'));
      await sleep(POLL_MS);
    }
  }

  /** tasks/get: the task of one of the grant's app's runs. */
  async get(grant: ExecutionGrant, taskId: unknown): Promise<McpResult> {
    const record = await this.own(grant, taskId);
    return { resultType: 'complete', ...this.detailedTaskOf(record) };
  }

  /** tasks/update: the answer to the run's approval; answers to keys not outstanding are ignored. */
  async update(grant: ExecutionGrant, taskId: unknown, inputResponses: unknown): Promise<McpResult> {
    const record = await this.own(grant, taskId);
    if (inputResponses === null || typeof inputResponses !== 'object' || Array.isArray(inputResponses)) {
      throw new TaskRpcError(-32602, 'inputResponses must be an object', { code: 'UHLP_WORKFLOW_DECISION_INVALID', field: 'inputResponses' });
    }
    const key = approvalKey(record);
    const answer = key === undefined ? undefined : (inputResponses as Record<string, unknown>)[key];
    if (key === undefined || answer === undefined) return { resultType: 'complete' };
    let decision: Decision | 'dismissed';
    try {
      decision = decisionOfAnswer(answer, grant);
    } catch (error) {
      if (!isUhlpError(error)) throw error;
      throw new TaskRpcError(-32602, error.message, { code: error.code, field: `inputResponses.${key}` });
    }
    if (decision === 'dismissed') return { resultType: 'complete' };
    this.resumeInBackground(record.id, decision);
    await this.waitWhilePaused(record.id);
    return { resultType: 'complete' };
  }

  /** tasks/cancel: cancels the run (answered at once; the run ends cancelled soon after). */
  async cancel(grant: ExecutionGrant, taskId: unknown): Promise<McpResult> {
    const record = await this.own(grant, taskId);
    const cancellation = { by: `mcp:${grant.componentId}`, via: 'mcp' as const };
    const ledger = this.ledger;
    const entry = ledger === undefined ? undefined : { runId: record.id, appId: record.appId, tier: ledger.tierOf(record.appId), cancellation };
    try {
      const after = await this.options.cancels.cancel(record.id, cancellation, 0);
      if (entry !== undefined) await ledgerCancel(ledger!.turns, ledger!.logger, { ...entry, outcome: after.status });
    } catch (error) {
      if (entry !== undefined) await ledgerCancel(ledger!.turns, ledger!.logger, { ...entry, outcome: isUhlpError(error) ? error.code : 'UHLP_INTERNAL' });
      if (isUhlpError(error) && error.code === 'UHLP_WORKFLOW_RUN_ENDED') {
        throw new TaskRpcError(-32602, `task ${record.id} has ended already (${record.status})`, { code: 'UHLP_WORKFLOW_RUN_ENDED', status: record.status });
      }
      throw error;
    }
    return { resultType: 'complete' };
  }

  /** A retry of a multi round-trip call: `requestState` names the run, `inputResponses` answer its approval. */
  private async answerRetry(grant: ExecutionGrant, requestState: string, inputResponses: Record<string, unknown>): Promise<McpResult> {
    let record: RunRecord;
    try {
      record = await this.own(grant, requestState);
    } catch (error) {
      if (!(error instanceof TaskRpcError)) throw error;
      return toolError(new UhlpError('UHLP_MCP_TASK_NOT_FOUND', error.message));
    }
    const key = approvalKey(record);
    const answer = key === undefined ? undefined : inputResponses[key];
    // Not waiting (any more), or no answer to this question: the run as it is now.
    if (key === undefined || answer === undefined) return this.outcome(record);
    let decision: Decision | 'dismissed';
    try {
      decision = decisionOfAnswer(answer, grant);
    } catch (error) {
      return toolError(error);
    }
    if (decision === 'dismissed') return this.outcome(record, true);
    try {
      await this.options.approvals.resume(record.id, decision, {});
    } catch (error) {
      return toolError(error);
    }
    return this.outcome(await this.options.runs.get(record.id));
  }

  private resumeInBackground(runId: string, decision: Decision): void {
    this.options.approvals.resume(runId, decision, {}).catch((error: unknown) => this.options.logger.warn({ err: error, runId }, 'a workflow run resumed over MCP failed'));
  }

  private async waitWhilePaused(runId: string): Promise<void> {
    const deadline = Date.now() + RESUME_WAIT_MS;
    while (Date.now() < deadline) {
      const record = await this.options.runs.find(runId);
      if (record === undefined || record.status !== 'paused') return;
      await sleep(POLL_MS);
    }
  }

  /** The run `taskId` names, when it is one of the grant's app's; any other id is "not found". */
  private async own(grant: ExecutionGrant, taskId: unknown): Promise<RunRecord> {
    const notFound = (): TaskRpcError => new TaskRpcError(-32602, 'Failed to retrieve task: Task not found', { code: 'UHLP_MCP_TASK_NOT_FOUND' });
    if (typeof taskId !== 'string' || !isRunId(taskId)) throw notFound();
    const record = await this.options.runs.find(taskId);
    if (record === undefined || record.appId !== grant.appId) throw notFound();
    return record;
  }

  /**
   * What a call that waited answers: the run's result (a tool error for a run
   * that failed, timed out or was cancelled), or, at an approval, the
   * approval's question as input_required (unless the client dismissed it:
   * then the paused run, as the HTTP source answers it).
   */
  private outcome(record: RunRecord, dismissed = false): McpResult {
    if (record.status === 'paused' && record.paused !== undefined) {
      const key = approvalKey(record)!;
      if (dismissed) return toolResult({ runId: record.id, status: 'paused', node: record.paused.node, prompt: record.paused.prompt }, false);
      return { resultType: 'input_required', inputRequests: { [key]: approvalRequest(record) }, requestState: record.id };
    }
    if (record.status === 'running') return toolResult({ runId: record.id, status: 'running' }, false);
    return { resultType: 'complete', ...runResult(record) };
  }

  private taskOf(record: RunRecord): Record<string, unknown> {
    const status = taskStatus(record);
    return {
      taskId: record.id,
      status,
      ...(statusMessage(record) !== undefined ? { statusMessage: statusMessage(record) } : {}),
      createdAt: record.createdAt,
      lastUpdatedAt: record.updatedAt,
      ttlMs: this.options.ttlMs,
      pollIntervalMs: TASK_POLL_INTERVAL_MS,
    };
  }

  private detailedTaskOf(record: RunRecord): Record<string, unknown> {
    const task = this.taskOf(record);
    switch (task['status']) {
      case 'input_required':
        return { ...task, inputRequests: { [approvalKey(record)!]: approvalRequest(record) } };
      case 'completed':
        return { ...task, result: { resultType: 'complete', ...runResult(record) } };
      default:
        return task;
    }
  }
}

/** The task status of a run (the extension's set). */
function taskStatus(record: RunRecord): 'working' | 'input_required' | 'completed' | 'cancelled' {
  switch (record.status) {
    case 'paused':
      return 'input_required';
    case 'cancelled':
      return 'cancelled';
    case 'running':
      return 'working';
    default:
      // A run that failed or timed out is a tool error, which the extension reports as a completed task (`failed` is for JSON-RPC errors only).
      return 'completed';
  }
}

function statusMessage(record: RunRecord): string | undefined {
  if (record.status === 'running' && record.cancellation !== undefined) return `cancelling (asked by ${record.cancellation.by})`;
  if (record.status === 'paused' && record.paused !== undefined) return `waiting for approval at ${record.paused.node}`;
  if (record.status === 'cancelled' && record.cancellation !== undefined) return `cancelled by ${record.cancellation.by} (${record.cancellation.via})`;
  if (record.error !== undefined) return `${record.status}: ${record.error.code}`;
  return undefined;
}

/** The key of the approval a paused run waits for: unique over the run's life (each resume is a new attempt). */
function approvalKey(record: RunRecord): string | undefined {
  if (record.status !== 'paused' || record.paused === undefined) return undefined;
  return `approval:${record.paused.node}:${record.attempts}`;
}

/** The approval's question, as a form elicitation. */
function approvalRequest(record: RunRecord): Record<string, unknown> {
  return {
    method: 'elicitation/create',
    params: {
      mode: 'form',
      message: record.paused!.prompt,
      requestedSchema: {
        type: 'object',
        properties: {
          approved: { type: 'boolean', title: 'Approve', description: `Approve the step after ${record.paused!.node}` },
          comment: { type: 'string', title: 'Comment', maxLength: 4096 },
        },
        required: ['approved'],
      },
    },
  };
}

/**
 * The decision an elicitation result carries: `accept` with `{approved,
 * comment?}`, `decline` (not approved); `cancel` (the user dismissed the
 * question) decides nothing. Anything else: UHLP_WORKFLOW_DECISION_INVALID.
 */
function decisionOfAnswer(answer: unknown, grant: ExecutionGrant): Decision | 'dismissed' {
  const bad = (field: string, reason: string): never => {
    throw new UhlpError('UHLP_WORKFLOW_DECISION_INVALID', `${field}: ${reason}`, { field });
  };
  if (answer === null || typeof answer !== 'object' || Array.isArray(answer)) return bad('answer', 'must be an elicitation result {action, content?}');
  const { action, content } = answer as { action?: unknown; content?: unknown };
  const by = `mcp:${grant.componentId}`;
  if (action === 'cancel') return 'dismissed';
  if (action === 'decline') return { approved: false, by };
  if (action !== 'accept') return bad('action', 'must be accept, decline or cancel');
  if (content === null || typeof content !== 'object' || Array.isArray(content)) return bad('content', 'must be an object {approved, comment?}');
  const fields = content as Record<string, unknown>;
  if (typeof fields['approved'] !== 'boolean') return bad('content.approved', 'must be true or false');
  const comment = fields['comment'];
  if (comment !== undefined && (typeof comment !== 'string' || comment.length > 4096)) return bad('content.comment', 'must be a string of at most 4096 characters');
  return { approved: fields['approved'], by, ...(typeof comment === 'string' && comment.length > 0 ? { comment } : {}) };
}

/** The run's end as a tool result: its result, or its error as a tool error. */
function runResult(record: RunRecord): Record<string, unknown> {
  if (record.status === 'completed') {
    const result = record.result ?? null;
    return toolResult(typeof result === 'object' && result !== null && !Array.isArray(result) ? (result as Record<string, unknown>) : { result }, false, record.id);
  }
  const error = record.error ?? toRunError(new UhlpError('UHLP_INTERNAL', `run ${record.id} ended ${record.status}`));
  return toolResult({ code: error.code, message: error.message, status: error.status, ...(error.details !== undefined ? { details: error.details } : {}), runId: record.id }, true, record.id);
}

function toolResult(structured: Record<string, unknown>, isError: boolean, runId?: string): McpResult {
  return {
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    ...(isError ? { isError: true } : {}),
    ...(runId !== undefined ? { _meta: { 'dev.uhlp/runId': runId } } : {}),
  };
}

function toolError(error: unknown): McpResult {
  const uhlp = isUhlpError(error) ? error : new UhlpError('UHLP_INTERNAL', 'the run could not be started');
  return toolResult({ code: uhlp.code, message: uhlp.message, status: uhlp.statusCode, ...(uhlp.details !== undefined ? { details: uhlp.details } : {}) }, true);
}

function startArguments(args: unknown): StartArguments {
  const bad = (field: string, reason: string): never => {
    throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `${START_TOOL}: ${field}: ${reason}`, { tool: START_TOOL, field });
  };
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return bad('arguments', 'must be an object {component, input?}');
  const record = args as Record<string, unknown>;
  for (const key of Object.keys(record)) if (key !== 'component' && key !== 'input') bad(key.slice(0, 64), 'is not an argument of the tool');
  if (typeof record['component'] !== 'string' || record['component'].length === 0 || record['component'].length > 128) return bad('component', 'must be a component id');
  return { component: record['component'], ...(record['input'] !== undefined ? { input: record['input'] } : {}) };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
