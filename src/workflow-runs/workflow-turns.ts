/**
 * The core's side of workflow runs (seed 003 §2.3 step 7): a turn of a
 * WORKFLOW component becomes a run that the llm-orchestrator drives in a
 * sandbox through MCP, while the core owns the run.
 *
 * 1. The run is created pinned to the app's revision: its input (the
 *    request's body, path and query parameters) after the request
 *    interceptors, its policy's critical tools, its time budget.
 * 2. An execution of the run is one turn through the pipeline, its token
 *    bound to the run as owner; it loads the run, runs nodes and checkpoints
 *    after each one. When the sandbox dies (or answers something that is not
 *    an answer), the core claims the run for a new execution on another
 *    sandbox, which goes on from the last checkpoint: a completed node never
 *    runs twice. At most MAX_RESUMES times.
 * 3. The answer is the run's: its result (through the response
 *    interceptors), 202 with `Location: /_uhlp/runs/<id>` when an approval
 *    node paused it, its error (504 UHLP_WORKFLOW_TIMEOUT past its time).
 *
 * It also serves the workflow tools (load, checkpoint, invoke, the critical
 * tool gate), resumes paused runs on an approver's decision, and, on a core
 * whose runtime state is Redis, picks up running runs nobody holds (their
 * core stopped) and drives them to their end.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { ComponentSpec } from '../apps/schema/app-definition-schema.js';
import { errorBody, InternalError, UhlpError } from '../shared/errors.js';
import { WorkflowInterruptedError, WorkflowTimeoutError } from '../shared/workflow-errors.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import { JSON_TYPE } from '../execution/result-interpreter.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type { Logger } from '../logger.js';
import type { ExecutionGrant } from '../mcp/mcp-token-service.js';
import { PassThroughError, type WorkflowServices } from '../mcp/tool-definition.js';
import { requestBody } from '../contract/template-variables.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { RequestData } from '../contract/execute-contract.js';
import type { TurnEvent } from '../turns/turn-event.js';
import type { TurnNotes, TurnPipeline, WorkflowTurnsPort } from '../turns/turn-pipeline.js';
import { SESSION_ID_HEADER } from '../turns/turn-keeper.js';
import { interceptorChain, type InterceptorChain } from './interceptors.js';
import { newRunId, traceOf, type RunRecord } from './run-record.js';
import { toRunError, type Approval, type RunError } from '../contract/workflow/run-view.js';
import type { Checkpoint, RunService } from './run-service.js';
import { interceptorContext, type StreamPacket } from '../contract/workflow/stream-packets.js';
import type { WorkflowCatalog } from './workflow-catalog.js';
import type { WorkflowDefinition } from '../contract/workflow/workflow-schema.js';

export const RUN_ID_HEADER = 'x-uhlp-run-id';
export const RUNS_PATH = '/_uhlp/runs';

/** New executions of a run after sandbox deaths, at most. */
export const MAX_RESUMES = 3;
/** Longest execution of a run: the sandbox client's ceiling. */
const MAX_EXECUTION_MS = 3_600_000;
/** The core waits this much past a run's time before it ends the execution itself: the orchestrator reports its own timeout first. */
const TIMEOUT_GRACE_MS = 1_000;
/** Errors of an execution after which the run goes on from its checkpoint on another sandbox. */
const RESUMABLE = new Set(['UHLP_SANDBOX_DIED', 'UHLP_SANDBOX_BAD_RESPONSE', 'UHLP_SANDBOX_ERROR', 'UHLP_SANDBOX_TIMEOUT']);
/** How long a core holds a run it drives before renewing; another core takes over a run whose hold lapsed. */
const RUN_LEASE_MS = 10_000;
/** How often a core with Redis state looks for runs nobody drives. */
const ORPHAN_SWEEP_MS = 5_000;

export interface WorkflowTurnsOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly logger: Logger;
  /** The core's runtime state: runs survive a restart only on Redis. */
  readonly stateKind: 'memory' | 'redis';
  /** This core, for the leases of the runs it drives. */
  readonly instanceId: string;
}

/** An approver's decision (POST /_uhlp/runs/<id>/resume). */
export type Decision = Omit<Approval, 'at'>;

export class WorkflowTurns implements WorkflowTurnsPort, WorkflowServices {
  private pipeline: TurnPipeline | undefined;
  /** Who holds this core's run leases: one owner per process, so a restarted core waits for the old holds to lapse. */
  private readonly leaseOwner: string;
  private sweeper: NodeJS.Timeout | undefined;
  /** The core is stopping: runs it drives are left running for the next core (Redis) rather than failed. */
  private stopping = false;
  private readonly driving = new Set<string>();
  private warnedPersistence = new Set<string>();

  constructor(private readonly options: WorkflowTurnsOptions) {
    this.leaseOwner = `${options.instanceId}/${process.pid}/${randomBytes(4).toString('hex')}`;
  }

  /** The pipeline resumed and invoked turns run through (it is built after the MCP server that needs this object). */
  attach(pipeline: TurnPipeline): void {
    this.pipeline = pipeline;
  }

  criticalTools(app: LoadedApp): ReadonlySet<string> {
    return this.options.catalog.criticalTools(app);
  }

  // ---- turns -------------------------------------------------------------

  async run(event: TurnEvent, notes: TurnNotes, attempt: (event: TurnEvent) => Promise<FinalResponse>): Promise<FinalResponse> {
    const { app, component } = event;
    const workflowId = component.workflow!.workflowId;
    const workflow = this.options.catalog.workflow(app, workflowId);
    const runId = newRunId();
    notes[RUN_ID_HEADER] = runId;
    const chain = this.chainFor(app, workflow, event.requestId, runId, event.session !== undefined && 'continue' in event.session ? event.session.continue : undefined);
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
    const blackboard = {
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
    await this.options.runs.create({
      id: runId,
      appId: app.id,
      componentId: component.id,
      workflowId,
      revision: app.revision,
      persistence: { requested, actual },
      sessionId: event.session !== undefined && 'continue' in event.session ? event.session.continue : null,
      ...(metadata !== undefined ? { metadata } : {}),
      input,
      blackboard,
      start: workflow.start,
      timeoutMs: workflow.policy.timeout_seconds !== undefined ? workflow.policy.timeout_seconds * 1000 : event.pool.limits.timeoutMs,
      allowedTools: workflow.policy.allow_critical_tools,
    });
    return this.drive(runId, event, notes, attempt, chain);
  }

  /** Records an approver's decision and runs the paused run on. */
  async resume(runId: string, decision: Decision, notes: TurnNotes): Promise<FinalResponse> {
    const pipeline = this.requirePipeline();
    const record = await this.options.runs.get(runId);
    if (record.status !== 'paused' || record.paused === undefined) {
      throw new UhlpError('UHLP_WORKFLOW_RUN_NOT_PAUSED', `run ${runId} is ${record.status}; only a paused run is resumed`, { status: record.status });
    }
    const { app, component, workflow } = this.pinned(record);
    const node = workflow.nodes[record.paused.node];
    await this.options.runs.resume(runId, decision, node?.type === 'approval' ? node.grants : []);
    const requestId = randomUUID();
    notes[RUN_ID_HEADER] = runId;
    const event = this.runEvent(record, app, component, requestId, { source: 'internal', resume: { runId, approved: decision.approved } });
    return this.drive(runId, event, notes, (next) => pipeline.run(next, notes), this.chainFor(app, workflow, requestId, runId, record.sessionId ?? undefined));
  }

  /** The run as clients see it: its record without the engine's bookkeeping. */
  async view(runId: string): Promise<Record<string, unknown>> {
    const record = await this.options.runs.get(runId);
    const redact = await this.resultRedactor(record);
    return {
      id: record.id,
      app: record.appId,
      component: record.componentId,
      workflowId: record.workflowId,
      revision: record.revision,
      status: record.status,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
      attempts: record.attempts,
      persistence: record.persistence,
      position: record.state.position,
      blackboard: await redact(record.state.blackboard),
      approvals: record.approvals,
      ...(record.paused !== undefined ? { paused: record.paused } : {}),
      ...(record.status === 'completed' ? { result: await redact(record.result) } : {}),
      ...(record.error !== undefined ? { error: record.error } : {}),
      metadata: record.metadata ?? null,
      steps: record.droppedSteps + record.steps.length,
      links: { self: `${RUNS_PATH}/${record.id}`, trace: `${RUNS_PATH}/${record.id}/trace`, ...(record.status === 'paused' ? { resume: `${RUNS_PATH}/${record.id}/resume` } : {}) },
    };
  }

  /** The tools the approval node a paused run waits at grants: what approving it allows. */
  async pendingGrants(runId: string): Promise<readonly string[]> {
    const record = await this.options.runs.get(runId);
    if (record.status !== 'paused' || record.paused === undefined) return [];
    try {
      const node = this.pinned(record).workflow.nodes[record.paused.node];
      return node?.type === 'approval' ? node.grants : [];
    } catch {
      // A revision that cannot be read any more grants nothing a reader can be shown.
      return [];
    }
  }

  /** The run's trace (seed 004 §8), its values through the response interceptors that are built in. */
  async trace(runId: string): Promise<Record<string, unknown>> {
    const record = await this.options.runs.get(runId);
    const redact = await this.resultRedactor(record);
    return { ...traceOf(record), steps: await Promise.all(record.steps.map(async (step) => (await redact(step)) as Record<string, unknown>)) };
  }

  // ---- the workflow tools -------------------------------------------------

  async load(grant: ExecutionGrant): Promise<Record<string, unknown>> {
    const runId = grant.run!.id;
    const run = await this.options.runs.view(runId, grant.requestId);
    const app = this.options.catalog.app(grant.appId, run.revision);
    const components: Record<string, unknown> = {};
    for (const component of app.components.values()) {
      if (component.handler === 'LLM') components[component.id] = { handler: 'LLM', llm: component.llm };
      else components[component.id] = { handler: component.handler };
    }
    return { run, workflowFile: `workflows/${run.workflowId}.yaml`, components };
  }

  async checkpoint(grant: ExecutionGrant, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const checkpoint = args as unknown as Checkpoint & { emit?: StreamPacket[] };
    // Packets first: a node's stream ends before the step that ran it is saved.
    for (const packet of checkpoint.emit ?? []) grant.stream?.packet(packet);
    const record = await this.options.runs.checkpoint(grant.run!.id, grant.requestId, checkpoint);
    return { status: record.status, steps: record.droppedSteps + record.steps.length, remainingMs: this.options.runs.remainingMs(record) };
  }

  async invoke(grant: ExecutionGrant, componentId: string, input: unknown, node: string | undefined): Promise<Record<string, unknown>> {
    const app = this.options.catalog.app(grant.appId, grant.revision);
    const component = app.components.get(componentId);
    if (component === undefined || component.handler !== 'JIT') {
      throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `"${componentId.slice(0, 63)}" is no JIT component of app ${app.id}`, { field: 'component' });
    }
    const final = await this.runComponent(app, component, {
      payload: input,
      triggerEvent: `workflow:${grant.componentId}/${node ?? 'step'}`,
      runId: grant.run!.id,
      ...(grant.sessionId !== undefined ? { sessionId: grant.sessionId } : {}),
    });
    const result = final.result;
    if (result === undefined) throw new UhlpError('UHLP_INTERNAL', `component ${componentId} answered no result`);
    if (result.resultType === 'error') {
      const data = result.data as { code?: unknown; message?: unknown; status?: unknown; details?: unknown };
      throw new PassThroughError(
        typeof data.code === 'string' ? data.code : 'UHLP_SCRIPT_EXCEPTION',
        typeof data.message === 'string' ? data.message : `component ${componentId} failed`,
        final.status,
        data.details,
      );
    }
    return { resultType: result.resultType, data: result.data ?? null };
  }

  async criticalAllowed(grant: ExecutionGrant, tool: string): Promise<boolean> {
    if (grant.run === undefined) return false;
    const record = await this.options.runs.find(grant.run.id);
    return record !== undefined && record.status === 'running' && record.allowedTools.includes(tool);
  }

  // ---- runs nobody drives ------------------------------------------------

  /** Looks for orphaned runs now and every few seconds (Redis state only: in memory, runs end with their core). */
  startSweeping(): void {
    if (this.options.stateKind !== 'redis' || this.sweeper !== undefined) return;
    const sweep = (): void => {
      void this.sweepOrphans().catch((error: unknown) => this.options.logger.warn({ err: error }, 'workflow runs not swept'));
    };
    sweep();
    this.sweeper = setInterval(sweep, ORPHAN_SWEEP_MS);
    this.sweeper.unref();
  }

  stopSweeping(): void {
    this.stopping = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Drives every running run no core holds; runs of memory persistence end as interrupted. */
  async sweepOrphans(): Promise<void> {
    const store = this.options.runs.store;
    for (const id of await store.listActiveRuns()) {
      if (this.driving.has(id)) continue;
      const record = await this.options.runs.find(id);
      if (record === undefined || record.status !== 'running') continue;
      if ((await store.getLease(runLease(id))) !== undefined) continue;
      if (record.persistence.actual !== 'redis') {
        await this.options.runs.finish(id, 'failed', toRunError(new WorkflowInterruptedError('the run was running when its core stopped; its persistence is memory')));
        continue;
      }
      const pipeline = this.requirePipeline();
      let pinned: ReturnType<WorkflowTurns['pinned']>;
      try {
        pinned = this.pinned(record);
      } catch (error) {
        await this.options.runs.finish(id, 'failed', runErrorOf(error));
        continue;
      }
      const requestId = randomUUID();
      const event = this.runEvent(record, pinned.app, pinned.component, requestId, { source: 'internal', resume: { runId: id, after: 'restart' } });
      this.options.logger.info({ runId: id, app: record.appId }, 'resuming a workflow run whose core stopped');
      const notes: TurnNotes = {};
      void this.drive(id, event, notes, (next) => pipeline.run(next, notes), this.chainFor(pinned.app, pinned.workflow, requestId, id, record.sessionId ?? undefined)).catch(
        (error: unknown) => this.options.logger.warn({ err: error, runId: id }, 'resumed workflow run failed'),
      );
    }
  }

  // ---- driving a run -------------------------------------------------------

  /** Executes the run until it pauses or ends, on a new sandbox after each death; answers what the run answers. */
  private async drive(runId: string, first: TurnEvent, notes: TurnNotes, attempt: (event: TurnEvent) => Promise<FinalResponse>, chain: InterceptorChain): Promise<FinalResponse> {
    const { runs } = this.options;
    const store = runs.store;
    this.driving.add(runId);
    let renew: NodeJS.Timeout | undefined;
    try {
      if (!(await store.acquireLease(runLease(runId), this.leaseOwner, RUN_LEASE_MS))) {
        throw new UhlpError('UHLP_WORKFLOW_RUN_CONFLICT', `run ${runId} is driven by another core`);
      }
      renew = setInterval(() => void store.renewLease(runLease(runId), this.leaseOwner, RUN_LEASE_MS).catch(() => undefined), RUN_LEASE_MS / 3);
      renew.unref();
      let event = first;
      for (let resumes = 0; ; resumes++) {
        const claimed = await runs.claim(runId, event.requestId);
        const remaining = runs.remainingMs(claimed);
        if (remaining <= 0) return this.timedOut(await runs.finish(runId, 'timed_out', timeoutError(claimed)), event.requestId);
        const timeoutMs = Math.min(MAX_EXECUTION_MS, remaining + TIMEOUT_GRACE_MS);
        let final: FinalResponse;
        try {
          final = await attempt({ ...event, workflowRun: { runId, owner: true, timeoutMs } });
        } catch (error) {
          const record = await runs.get(runId);
          if (record.status !== 'running') return this.answer(record, undefined, chain, event.requestId);
          if (runs.remainingMs(record) <= 0) return this.timedOut(await runs.finish(runId, 'timed_out', timeoutError(record)), event.requestId);
          // A stopping core's sandboxes go away under its runs: a run that survives a restart waits for the next core.
          if (this.stopping && record.persistence.actual === 'redis') throw error;
          if (!(error instanceof UhlpError) || !RESUMABLE.has(error.code) || resumes >= MAX_RESUMES) {
            await runs.finish(runId, 'failed', runErrorOf(error));
            throw error;
          }
          this.options.logger.warn({ runId, code: error.code, resumes: resumes + 1 }, 'the sandbox of a workflow run failed; the run goes on from its last checkpoint on another sandbox');
          // The same session, on a fresh sandbox, as a new execution.
          const sessionId = notes[SESSION_ID_HEADER] ?? record.sessionId ?? undefined;
          event = { ...event, requestId: randomUUID(), ...(sessionId !== undefined ? { session: { continue: sessionId } } : {}) };
          continue;
        }
        const record = await runs.get(runId);
        if (record.status === 'running') {
          const error = new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', 'the llm-orchestrator answered before the run paused or ended');
          await runs.finish(runId, 'failed', runErrorOf(error));
          throw error;
        }
        return this.answer(record, final, chain, event.requestId);
      }
    } finally {
      clearInterval(renew);
      this.driving.delete(runId);
      await store.releaseLease(runLease(runId), this.leaseOwner).catch(() => undefined);
    }
  }

  /** The answer of a run that paused or ended. */
  private async answer(record: RunRecord, final: FinalResponse | undefined, chain: InterceptorChain, requestId: string): Promise<FinalResponse> {
    const headers: Record<string, string> = { 'content-type': JSON_TYPE, [RUN_ID_HEADER]: record.id };
    switch (record.status) {
      case 'completed': {
        const result = chain.intercepts ? await chain.result(record.result ?? null) : (record.result ?? null);
        return { status: 200, headers, body: JSON.stringify(result) };
      }
      case 'paused': {
        const self = `${RUNS_PATH}/${record.id}`;
        headers['location'] = self;
        return {
          status: 202,
          headers,
          body: JSON.stringify({
            runId: record.id,
            status: 'paused',
            node: record.paused?.node ?? null,
            prompt: record.paused?.prompt ?? null,
            links: { self, resume: `${self}/resume`, trace: `${self}/trace` },
          }),
        };
      }
      default: {
        if (record.status === 'timed_out') return this.timedOut(record, requestId);
        if (final !== undefined && final.status >= 400) return { ...final, headers: { ...final.headers, [RUN_ID_HEADER]: record.id } };
        const error = record.error ?? toRunError(new InternalError('the run failed'));
        return { status: error.status, headers, body: JSON.stringify({ code: error.code, message: error.message, requestId, ...(error.details !== undefined ? { details: error.details } : {}) }) };
      }
    }
  }

  private timedOut(record: RunRecord, requestId: string): FinalResponse {
    const error = record.error ?? timeoutError(record);
    const timeout = new WorkflowTimeoutError(error.message, { runId: record.id, timeoutMs: record.timing.timeoutMs });
    return {
      status: timeout.statusCode,
      headers: { 'content-type': JSON_TYPE, [RUN_ID_HEADER]: record.id },
      body: JSON.stringify(errorBody(timeout, requestId)),
    };
  }

  // ---- helpers -----------------------------------------------------------

  /** The run's app, component and workflow at its pinned revision. */
  private pinned(record: RunRecord): { app: LoadedApp; component: ComponentSpec; workflow: WorkflowDefinition } {
    const app = this.options.catalog.app(record.appId, record.revision);
    const component = app.components.get(record.componentId);
    if (component === undefined || component.workflow === undefined) {
      throw new UhlpError('UHLP_WORKFLOW_INVALID', `app ${record.appId} at ${record.revision.slice(0, 12)} has no workflow component ${record.componentId}`);
    }
    return { app, component, workflow: this.options.catalog.workflow(app, component.workflow.workflowId) };
  }

  /** A turn of the run's component that no client request started (a resume). */
  private runEvent(record: RunRecord, app: LoadedApp, component: ComponentSpec, requestId: string, requestData: Record<string, unknown>): TurnEvent {
    return {
      app,
      component,
      pool: app.pools.get(component.pool)!,
      requestId,
      requestDataJson: canonicalJson(requestData),
      session: record.sessionId !== null ? { continue: record.sessionId } : undefined,
      declaredOutputs: component.declaredOutputs ?? [],
    };
  }

  /** Runs a JIT component of the app through the pipeline, as a step or an interceptor of a run; the answer keeps its result. */
  private runComponent(
    app: LoadedApp,
    component: ComponentSpec,
    call: { payload: unknown; triggerEvent: string; runId: string; sessionId?: string },
  ): Promise<FinalResponse> {
    const pipeline = this.requirePipeline();
    return pipeline.run(
      {
        app,
        component,
        pool: app.pools.get(component.pool)!,
        requestId: randomUUID(),
        requestDataJson: canonicalJson({ source: 'trigger', triggerDetails: { sourceAppId: app.id, triggerEvent: call.triggerEvent, payload: call.payload ?? null } }),
        session: call.sessionId !== undefined ? { continue: call.sessionId } : undefined,
        declaredOutputs: component.declaredOutputs ?? [],
        workflowRun: { runId: call.runId, owner: false },
        keepResult: true,
      },
      {},
    );
  }

  private chainFor(app: LoadedApp, workflow: WorkflowDefinition, requestId: string, runId: string, sessionId: string | undefined): InterceptorChain {
    return interceptorChain({
      context: interceptorContext(requestId, new Date(), runId),
      request: workflow.interceptors.request,
      response: workflow.interceptors.response,
      logger: this.options.logger,
      invoke: async (name, payload) => {
        const component = app.components.get(name);
        if (component === undefined || component.handler !== 'JIT') throw new UhlpError('UHLP_WORKFLOW_INVALID', `interceptor ${name} is no JIT component of app ${app.id}`);
        const final = await this.runComponent(app, component, { payload, triggerEvent: `interceptor:${String(payload['interceptor'])}`, runId, ...(sessionId !== undefined ? { sessionId } : {}) });
        if (final.result?.resultType === 'error') {
          const data = final.result.data as { code?: unknown; message?: unknown; details?: unknown };
          throw new PassThroughError(typeof data.code === 'string' ? data.code : 'UHLP_SCRIPT_EXCEPTION', typeof data.message === 'string' ? data.message : `interceptor ${name} failed`, final.status, data.details);
        }
        return final.result?.data ?? null;
      },
    });
  }

  /** Values of a run as clients read them: through the built-in response interceptors (pii-redact) only. */
  private async resultRedactor(record: RunRecord): Promise<(value: unknown) => Promise<unknown>> {
    let builtIns: readonly string[] = [];
    try {
      builtIns = this.pinned(record).workflow.interceptors.response.filter((name) => name === 'pii-redact');
    } catch {
      // A revision that cannot be read any more: the record is shown as it is.
    }
    if (builtIns.length === 0) return async (value) => value;
    const chain = interceptorChain({ context: interceptorContext(record.id, new Date(), record.id), request: [], response: builtIns, logger: this.options.logger, invoke: async () => null });
    return (value) => chain.result(value);
  }

  private requirePipeline(): TurnPipeline {
    if (this.pipeline === undefined) throw new UhlpError('UHLP_INTERNAL', 'the workflow runtime has no turn pipeline');
    return this.pipeline;
  }
}

function runLease(runId: string): string {
  return `run:${runId}`;
}

function timeoutError(record: RunRecord): RunError {
  return toRunError(new WorkflowTimeoutError(`the run ran past its ${record.timing.timeoutMs} ms`, { timeoutMs: record.timing.timeoutMs }));
}

function runErrorOf(error: unknown): RunError {
  return toRunError(error instanceof UhlpError ? error : new InternalError('the run failed in the core'));
}
