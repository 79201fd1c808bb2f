/**
 * The turn of a WORKFLOW component is a run of its workflow (seed 003 §2.3
 * step 7), which the llm-orchestrator drives in a sandbox through MCP while
 * the core owns the run: the run is created pinned to the app's revision, with
 * its input (the request's body, path and query parameters) after the request
 * interceptors, its policy's critical tools and its time budget, and then
 * driven (run-driver.ts), each of its executions a turn of the component's
 * turn stages. The answer is the run's. Chosen for WORKFLOW components when
 * their app loads; a turn that already belongs to a run (an execution a
 * resume or a sweep started) is the component's turn as it is.
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import type { RequestData } from '../contract/execute-contract.js';
import { requestBody } from '../contract/template-variables.js';
import { JSON_TYPE, type FinalResponse } from '../execution/result-interpreter.js';
import type { Logger } from '../logger.js';
import { PassThroughError } from '../mcp/tool-definition.js';
import { UhlpError } from '../shared/errors.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { TurnDecorator, TurnNotes, TurnRunner } from '../turns/turn-runner.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunDriver } from './run-driver.js';
import { RUN_ID_HEADER } from './run-links.js';
import { newRunId } from './run-record.js';
import { runEnded, type RunService } from './run-service.js';
import { DEFAULT_DOUBLE_TEXTING, type SessionRuns } from './session-runs.js';
import type { InterceptorChain } from './interceptors.js';
import type { WorkflowMetadata } from '../contract/workflow/workflow-schema.js';
import { SESSION_ID_HEADER } from '../turns/turn-keeper.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

export interface WorkflowRunTurnsOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly driver: RunDriver;
  readonly pipeline: PipelineTurns;
  readonly logger: Logger;
  /** The core's runtime state: runs survive a restart only on Redis. */
  readonly stateKind: 'memory' | 'redis';
  /** Each session's active run, and what a second request of the session does meanwhile (session-runs.ts). @defaultValue none: runs of one session do not wait for each other */
  readonly sessions?: SessionRuns;
}

export class WorkflowRunTurns implements TurnDecorator {
  private readonly warnedPersistence = new Set<string>();

  constructor(private readonly options: WorkflowRunTurnsOptions) {}

  decorate(_app: LoadedApp, component: ComponentSpec, inner: TurnRunner): TurnRunner {
    if (component.handler !== 'WORKFLOW') return inner;
    return {
      run: (event, notes) => (event.workflowRun !== undefined ? inner.run(event, notes) : this.run(event, notes, inner)),
    };
  }

  /** Creates the event's run and drives it, each execution a turn of `inner`. */
  private async run(event: TurnEvent, notes: TurnNotes, inner: TurnRunner): Promise<FinalResponse> {
    const { app, component } = event;
    const workflowId = component.workflow!.workflowId;
    const workflow = this.options.catalog.workflow(app, workflowId);
    const runId = newRunId();
    notes[RUN_ID_HEADER] = runId;
    // The request's journal record links to the run it started.
    if (event.journal !== undefined) event.journal.entry.runId = runId;
    const chain = this.options.pipeline.interceptors(app, workflow, event.requestId, runId, event.session !== undefined && 'continue' in event.session ? event.session.continue : undefined);
    event.stream?.useInterceptors(chain);

    const requestData = JSON.parse(event.requestDataJson) as RequestData;
    const http = requestData.httpDetails;
    let intercepted: { input?: unknown; params?: unknown; query?: unknown } | null;
    try {
      intercepted = (await chain.request({ input: requestBody(requestData), params: http?.pathParameters ?? {}, query: http?.queryParameters ?? {} })) as typeof intercepted;
    } catch (error) {
      // A request interceptor that refuses the input answers with its own code and status.
      if (!(error instanceof PassThroughError)) throw error;
      return {
        status: error.appStatus,
        headers: { 'content-type': JSON_TYPE, [RUN_ID_HEADER]: runId },
        body: JSON.stringify({ code: error.appCode, message: error.message, requestId: event.requestId, ...(error.details !== undefined ? { details: error.details } : {}) }),
      };
    }
    const input = intercepted?.input ?? null;
    const timeoutMs = workflow.policy.timeout_seconds !== undefined ? workflow.policy.timeout_seconds * 1000 : event.pool.limits.timeoutMs;
    // Double texting: a continued session's active run decides whether this one starts, waits, or takes over.
    const sessionId = event.session !== undefined && 'continue' in event.session ? event.session.continue : undefined;
    const sessions = this.options.sessions;
    const admission = sessions !== undefined && sessionId !== undefined ? await sessions.admit(sessionId, runId, component.workflow!.doubleTexting ?? DEFAULT_DOUBLE_TEXTING, timeoutMs) : {};
    const blackboard = {
      // An interrupted run's work goes on in this one: its blackboard, with the new input.
      ...(admission.carried !== undefined ? { ...admission.carried.blackboard, interrupted: { runId: admission.carried.runId } } : {}),
      input,
      request: { source: requestData.source, method: http?.method ?? null, path: http?.path.split('?')[0] ?? null, params: intercepted?.params ?? {}, query: intercepted?.query ?? {} },
    };

    const requested = workflow.state.persistence;
    const actual = requested === 'redis' && this.options.stateKind === 'redis' ? 'redis' : 'memory';
    if (requested !== actual && !this.warnedPersistence.has(`${app.id}/${workflowId}`)) {
      this.warnedPersistence.add(`${app.id}/${workflowId}`);
      this.options.logger.warn({ app: app.id, workflow: workflowId }, 'the workflow asks for persistence: redis and the core keeps its state in memory: its runs survive a sandbox death, not a core restart');
    }
    const metadata = workflow.metadata;
    if (metadata !== undefined) {
      // Provenance (seed 004 §5): why this workflow exists, with every run.
      this.options.logger.info(
        { runId, app: app.id, workflow: workflowId, generated_by: metadata.generated_by, confidence_score: metadata.confidence_score, generation_rationale: metadata.generation_rationale },
        'workflow run started',
      );
    }
    try {
      return await this.createAndDrive(runId, event, notes, inner, chain, { workflowId, requested, actual, metadata, input, blackboard, timeoutMs, sessionId: sessionId ?? null });
    } finally {
      if (sessions !== undefined) await this.settleSlot(sessions, runId, sessionId, notes);
    }
  }

  /** Frees the session's slot once the run ended; holds the slot of a session its first turn opened while the run waits paused. */
  private async settleSlot(sessions: SessionRuns, runId: string, continued: string | undefined, notes: TurnNotes): Promise<void> {
    const record = await this.options.runs.find(runId).catch(() => undefined);
    const ended = record === undefined || runEnded(record);
    if (continued !== undefined) {
      if (ended) await sessions.release(continued, runId);
      return;
    }
    const opened = notes[SESSION_ID_HEADER];
    if (opened !== undefined && !ended) await sessions.hold(opened, runId).catch(() => undefined);
  }

  private async createAndDrive(
    runId: string,
    event: TurnEvent,
    notes: TurnNotes,
    inner: TurnRunner,
    chain: InterceptorChain,
    run: { workflowId: string; requested: 'memory' | 'redis'; actual: 'memory' | 'redis'; metadata: WorkflowMetadata | undefined; input: unknown; blackboard: Record<string, unknown>; timeoutMs: number; sessionId: string | null },
  ): Promise<FinalResponse> {
    const { app, component } = event;
    const { workflowId, requested, actual, metadata, input, blackboard, timeoutMs } = run;
    const workflow = this.options.catalog.workflow(app, workflowId);
    await this.options.runs.create({
      id: runId,
      appId: app.id,
      componentId: component.id,
      workflowId,
      revision: app.revision,
      persistence: { requested, actual },
      sessionId: run.sessionId,
      ...(metadata !== undefined ? { metadata } : {}),
      input,
      blackboard,
      start: workflow.start,
      timeoutMs,
      allowedTools: workflow.policy.allow_critical_tools,
      ...(workflow.on_cancel !== undefined ? { onCancel: workflow.on_cancel } : {}),
      // Held by this turn now (the pipeline took them); kept for the run's resumptions.
      ...(event.flowSlots !== undefined ? { flowSlots: event.flowSlots } : {}),
    });
    return this.options.driver.drive(runId, event, notes, (attempt) => inner.run(attempt, notes), chain);
  }
}

/** A core without a workflow runtime: a WORKFLOW component's turn is refused (501) before it begins. */
export const WORKFLOWS_NOT_RUN: TurnDecorator = {
  decorate(_app, component, inner) {
    if (component.handler !== 'WORKFLOW') return inner;
    return {
      run(event, notes) {
        if (event.workflowRun !== undefined) return inner.run(event, notes);
        return Promise.reject(
          new UhlpError('UHLP_HANDLER_NOT_SUPPORTED', `component "${component.id}" has handler WORKFLOW, which this core does not run`, { component: component.id, handler: 'WORKFLOW' }),
        );
      },
    };
  },
};
