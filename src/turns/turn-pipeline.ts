/**
 * The one turn pipeline every source runs its events through: how deep its
 * JSON input may nest (json-depth.ts), the app's rate limit, once-only runs (an Idempotency-Key, an invocation id), the session and
 * its turn, the execution's MCP token, the execution in a sandbox with its write
 * surface, the ledger's exec and evidence entries, and the answer the contract's
 * result maps to. Sources only turn their input into a TurnEvent and the answer
 * into what they owe their caller (an HTTP response, a queue acknowledgement).
 */
import { UhlpError } from '../shared/errors.js';
import type { ComponentExecutor } from '../execution/component-executor.js';
import { ExecuteContextWriter } from '../execution/execute-context.js';
import { interpretResult, type FinalResponse } from '../execution/result-interpreter.js';
import { newTurnEvidence, type TurnEvidence } from '../ledger/turn-evidence.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { GrantBinding } from '../mcp/mcp-token-service.js';
import type { McpCallSummary } from '../mcp/tool-call-recorder.js';
import type { Metrics } from '../metrics.js';
import type { ExecutionResult, ExecutionView, TurnOracle } from '../oracle/oracle-turns.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { REPLAYED_HEADER, runIdempotent } from './idempotency.js';
import type { LoadedApp } from '../apps/app-snapshot.js';
import type { TurnEvent } from './turn-event.js';
import { checkTurnInputDepth } from './json-depth.js';
import { resolveCsComponent } from '../functions/resolve-cs-component.js';
import type { CsTarget } from '../contract/cs-bundle/activation-context.js';
import { SESSION_ID_HEADER, TURN_HEADER, type Turn, type TurnKeeper } from './turn-keeper.js';

export interface TurnPipelineDeps {
  readonly executor: ComponentExecutor;
  readonly metrics: Metrics;
  /** The runtime store's concerns a turn uses: rate limits, once-only records, cs-js functions. */
  readonly store: Pick<RuntimeStore, 'rateLimits' | 'idempotency' | 'functions'>;
  readonly turns: TurnKeeper;
  /** How long completed once-only answers are replayed, ms. */
  readonly idempotencyTtlMs: number;
  /** The MCP endpoint URL given to sandboxes; known once the core listens. */
  mcpEndpoint(): string;
  /** Mints each execution's MCP token. @defaultValue none: executions get no token */
  readonly mcp?: McpExecutions;
  /** Where the declared outputs of stored sessions' turns are kept (`<dataDir>/output`). @defaultValue none: outputs are not kept */
  readonly outputsRoot?: string;
  /** The optimization oracle: samples optimized components, routes promoted ones. @defaultValue none */
  readonly oracle?: TurnOracle;
  /** Runs the turns of WORKFLOW components (src/workflow-runs/workflow-turns.ts). @defaultValue none: they get 501 */
  readonly workflows?: WorkflowTurnsPort;
}

/** What the pipeline asks of the workflow runtime. */
export interface WorkflowTurnsPort {
  /** Runs a WORKFLOW component's turn as a run: `attempt` executes one turn of it (again after a sandbox died). */
  run(event: TurnEvent, notes: TurnNotes, attempt: (event: TurnEvent) => Promise<FinalResponse>): Promise<FinalResponse>;
  /** Tools the app marks risk_level: critical. */
  criticalTools(app: LoadedApp): ReadonlySet<string>;
}

/**
 * What the pipeline says about the turn beside its answer, as answer headers:
 * the session and turn (stored sessions only), Retry-After, a replay. The HTTP
 * source sends them; other sources read what they need.
 */
export type TurnNotes = Record<string, string>;

/** How long an execution's MCP token outlives the execution's own timeout, at most; it is revoked when the execution ends. */
const MCP_TOKEN_GRACE_MS = 10_000;

export class TurnPipeline {
  private readonly contexts = new ExecuteContextWriter();

  constructor(private readonly deps: TurnPipelineDeps) {}

  /** Runs one turn; rejects with the UhlpError its caller answers (rate limit, session, sandbox failures). */
  run(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    // Before anything of the turn, whatever its source and handler: a value too deep to serialize is never let in.
    try {
      checkTurnInputDepth(event.requestDataJson);
    } catch (error) {
      return Promise.reject(error);
    }
    // Most events have neither a limit nor a key: straight to the turn, with no promise of their own here.
    if (event.once === undefined && event.app.document.spec.limits?.requestsPerSecond === undefined) return this.execute(event, notes);
    return this.runLimited(event, notes);
  }

  private async runLimited(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    const { app, pool, once } = event;
    const limit = app.document.spec.limits?.requestsPerSecond;
    if (limit !== undefined) {
      const decision = await this.deps.store.rateLimits.hitRateLimit(app.id, limit);
      if (!decision.allowed) {
        this.deps.metrics.rateLimited.labels(app.id).inc();
        notes['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
        throw new UhlpError('UHLP_RATE_LIMITED', `app "${app.id}" accepts ${limit} requests per second`, { limit, retryAfterMs: decision.retryAfterMs });
      }
    }
    if (once === undefined) return this.execute(event, notes);

    const outcome = await runIdempotent(
      {
        store: this.deps.store.idempotency,
        appId: app.id,
        key: once.key,
        fingerprint: once.fingerprint,
        ttlMs: this.deps.idempotencyTtlMs,
        inFlightTtlMs: once.inFlightTtlMs ?? pool.acquireTimeoutMs + pool.limits.timeoutMs + 30_000,
        successOnly: once.successOnly === true,
        waitMs: pool.acquireTimeoutMs + pool.limits.timeoutMs,
      },
      () => this.execute(event, notes),
    );
    if (outcome.replayed) {
      this.deps.metrics.idempotentReplays.labels(app.id).inc();
      notes[REPLAYED_HEADER] = 'true';
    }
    // A stored answer is shared by every replay: each gets headers of its own.
    return outcome.replayed ? { ...outcome.response, headers: { ...outcome.response.headers } } : outcome.response;
  }

  /** One turn: session, /execute in a sandbox (or, as the oracle plans it, two), ledger, result mapping. */
  private async execute(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    const { deps } = this;
    const { app, component, requestId, requestDataJson } = event;
    if (component.handler === 'WORKFLOW' && event.workflowRun === undefined) {
      if (deps.workflows === undefined) {
        throw new UhlpError('UHLP_HANDLER_NOT_SUPPORTED', `component "${component.id}" has handler WORKFLOW, which this core does not run`, { component: component.id, handler: 'WORKFLOW' });
      }
      return deps.workflows.run(event, notes, (attempt) => this.execute(attempt, notes));
    }
    const started = performance.now();
    // A cs component runs the bundle its ref names now; a ref that names nothing fails before the turn begins.
    const cs = component.cs !== undefined ? await resolveCsComponent(deps.store.functions, app.id, component.cs) : undefined;
    const begun = deps.turns.begin(app.id, app.document.spec.deploymentMode, event.session, { requestId, policy: app.document.spec.ledger });
    const turn = begun instanceof Promise ? await begun : begun;
    // An ambient session cannot be continued by the client, so it is not named to it.
    if (!turn.ambient) {
      notes[SESSION_ID_HEADER] = turn.sessionId;
      notes[TURN_HEADER] = String(turn.turnNumber);
    }
    const turnEvidence = newTurnEvidence();
    for (const output of event.declaredOutputs) turnEvidence.declaredWrites.push({ path: output.path, role: output.role });
    const plan = deps.oracle?.plan(event, turn);
    let answerJson: string | undefined;
    let status: string;
    let answer: FinalResponse | undefined;
    let failure: unknown;
    try {
      const { response, text } =
        plan === undefined
          ? await this.executeView(event, turn, event, turnEvidence, cs)
          : await plan.run((view) => this.executeView(event, turn, view, view.background ? newTurnEvidence() : turnEvidence, cs));
      answerJson = text;
      status = response.resultType === 'error' ? 'error' : 'ok';
      // Mapped before the turn is recorded: an answer that cannot be sent is the turn's outcome, recorded once.
      answer = interpretResult(response, requestId);
      if (event.keepResult === true) answer.result = { resultType: response.resultType, data: response.data };
      // The execution's time, without the wait for the ledger below (observed once, as the turn ended).
      deps.metrics.turnSeconds.labels(app.id, component.id, status).observe((performance.now() - started) / 1000);
    } catch (error) {
      failure = error;
      status = error instanceof UhlpError ? error.code : 'UHLP_INTERNAL';
      deps.metrics.turnSeconds.labels(app.id, component.id, 'failed').observe((performance.now() - started) / 1000);
    }
    // The one place the pipeline waits for the ledger: with `sync` or `fsync` durability the answer
    // (or the error) leaves only once the turn's entries are written; with `async`, record() returns nothing.
    const recorded = deps.turns.record(turn, requestDataJson, { status, answerJson, evidence: turnEvidence });
    if (recorded !== undefined) await recorded;
    if (answer === undefined) throw failure;
    return answer;
  }

  /** One /execute of the turn, of the component in the view's form and pool, with an MCP token of its own. */
  private async executeView(event: TurnEvent, turn: Turn, view: ExecutionView, turnEvidence: TurnEvidence, resolvedCs?: CsTarget): Promise<ExecutionResult> {
    const { deps } = this;
    const { app, requestId, requestDataJson } = event;
    const { component, pool } = view;
    // The bundle resolved for the turn, for the view that runs the cs component itself.
    const cs = component.cs !== undefined ? resolvedCs : undefined;
    // A workflow run's execution lasts as long as the run has time left, not the pool's timeout.
    const timeoutMs = event.workflowRun?.timeoutMs ?? pool.limits.timeoutMs;
    // Minted just before the sandbox is called and revoked when it answers: the token lives as long as the execution.
    const binding = {
      appId: app.id,
      componentId: component.id,
      requestId,
      revision: app.revision,
      capabilities: view.capabilities ?? app.document.spec.capabilities ?? {},
      configuration: app.document.spec.configuration ?? {},
      ...(event.triggerDepth !== undefined ? { triggerDepth: event.triggerDepth } : {}),
    };
    const mcpToken = deps.mcp?.beginExecution(
      event.workflowRun === undefined && event.stream === undefined && app.document.spec.tools === undefined ? binding : this.workflowBinding(binding, event, turn, view.background === true),
      timeoutMs + MCP_TOKEN_GRACE_MS,
    );
    /** Revokes the token and moves the execution's MCP calls and refusals into the turn's evidence. */
    const endMcp = (): McpCallSummary[] => {
      if (mcpToken === undefined) return [];
      const record = deps.mcp!.endExecution(mcpToken);
      turnEvidence.externalCalls.push(...record.externalCalls);
      turnEvidence.capabilityViolations.push(...record.capabilityViolations);
      return record.calls;
    };
    const context = this.contexts.json(app, component, {
      mcpEndpoint: deps.mcpEndpoint(),
      timeoutMs,
      sessionId: turn.sessionId,
      turnNumber: turn.turnNumber,
      mcpToken,
      ...(cs !== undefined ? { cs } : {}),
      ...(event.workflowRun?.owner === true ? { workflowRunId: event.workflowRun.runId } : {}),
    });
    const body = `{"requestId":${JSON.stringify(requestId)},"requestData":${requestDataJson},"context":${context}}`;
    try {
      const { response, text } = await deps.executor.execute(
        { appId: app.id, poolName: pool.name, timeoutMs, ...(component.jit ? { script: { revision: app.revision, path: component.jit.script } } : {}) },
        requestId,
        body,
        event.traceId,
        // Outputs of an ambient session (or of a comparison run after the answer) are checked but not kept: nobody could fetch them.
        { sessionId: turn.sessionId, declared: event.declaredOutputs, outputsRoot: turn.ambient || view.background ? undefined : deps.outputsRoot, evidence: turnEvidence },
      );
      const mcpCalls = endMcp();
      // The core's own record wins over what the runner reported: the sandbox is not trusted to count.
      if (mcpCalls.length > 0) response.metrics = { ...response.metrics, mcp_calls: mcpCalls };
      return { response, text };
    } catch (error) {
      endMcp();
      throw error;
    }
  }

  /** The token binding of a workflow's execution (or of one with a stream, or of an app that marks critical tools). */
  private workflowBinding(binding: GrantBinding, event: TurnEvent, turn: Turn, background: boolean): GrantBinding {
    const critical = event.app.document.spec.tools !== undefined ? this.deps.workflows?.criticalTools(event.app) : undefined;
    return {
      ...binding,
      ...(event.workflowRun !== undefined ? { run: { id: event.workflowRun.runId, owner: event.workflowRun.owner } } : {}),
      ...(event.workflowRun !== undefined && !turn.ambient ? { sessionId: turn.sessionId } : {}),
      ...(critical !== undefined && critical.size > 0 ? { criticalTools: critical } : {}),
      // A comparison run of the oracle after the answer writes nothing to the client's stream.
      ...(event.stream !== undefined && !background ? { stream: event.stream } : {}),
    };
  }
}
