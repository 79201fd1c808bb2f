/**
 * The base of every execution stage: one /execute of a component in a sandbox
 * of its pool. It mints the execution's MCP token (bound to the workflow run,
 * the stream and the app's critical tools when the turn has them), writes the
 * request's context, runs it through the ComponentExecutor, and moves the
 * execution's MCP calls and refusals into the turn's evidence.
 */
import type { LoadedApp } from '../apps/app-snapshot.js';
import { criticalToolsOf } from '../apps/critical-tools.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { McpExecutions } from '../mcp/mcp-executions.js';
import type { GrantBinding } from '../mcp/mcp-token-service.js';
import type { McpCallSummary } from '../mcp/tool-call-recorder.js';
import type { ComponentExecutor } from './component-executor.js';
import type { ExecuteContextWriter } from './execute-context.js';
import type { ExecutionCall, ExecutionResult, ExecutionStage, ExecutionView } from './execution-stage.js';
import { tracingActive } from '../tracing/tracing-active.js';
import { context as traceContext } from '../tracing/spans.js';

/** How long an execution's MCP token outlives the execution's own timeout, at most; it is revoked when the execution ends. */
const MCP_TOKEN_GRACE_MS = 10_000;

/** What every sandbox execution of the core shares. */
export interface SandboxExecutionDeps {
  readonly executor: Pick<ComponentExecutor, 'execute'>;
  readonly contexts: ExecuteContextWriter;
  /** The MCP endpoint URL given to sandboxes; known once the core listens. */
  mcpEndpoint(): string;
  /** Mints each execution's MCP token. @defaultValue none: executions get no token */
  readonly mcp?: McpExecutions;
  /** Where the declared outputs of stored sessions' turns are kept (`<dataDir>/output`). @defaultValue none: outputs are not kept */
  readonly outputsRoot?: string;
}

export class SandboxExecution implements ExecutionStage {
  /** The tools the app marks critical, when it declares tools: its executions' tokens carry them. */
  private readonly criticalTools: ReadonlySet<string> | undefined;

  constructor(
    private readonly deps: SandboxExecutionDeps,
    app: LoadedApp,
  ) {
    this.criticalTools = app.document.spec.tools !== undefined ? criticalToolsOf(app) : undefined;
  }

  /** One /execute of the turn, of the component in the view's form and pool, with an MCP token of its own. */
  async execute(call: ExecutionCall): Promise<ExecutionResult> {
    const { deps } = this;
    const { event, turn } = call;
    const { app, requestId, requestDataJson } = event;
    const view: ExecutionView = call.view ?? event;
    const { component, pool } = view;
    const background = call.view?.background === true;
    // A comparison run after the answer is not the turn: what it calls and writes is checked, not recorded.
    const evidence = background ? newTurnEvidence() : call.evidence;
    // The bundle resolved for the turn, for the view that runs the cs component itself.
    const cs = component.cs !== undefined ? event.cs : undefined;
    // A workflow run's execution lasts as long as the run has time left, not the pool's timeout.
    const timeoutMs = event.workflowRun?.timeoutMs ?? pool.limits.timeoutMs;
    // Minted just before the sandbox is called and revoked when it answers: the token lives as long as the execution.
    const untraced: GrantBinding = {
      appId: app.id,
      componentId: component.id,
      requestId,
      revision: app.revision,
      capabilities: view.capabilities ?? app.document.spec.capabilities ?? {},
      configuration: app.document.spec.configuration ?? {},
      ...(event.triggerDepth !== undefined ? { triggerDepth: event.triggerDepth } : {}),
    };
    // The execution's span: the tool calls its token makes are its children.
    const binding = tracingActive() ? { ...untraced, traceContext: traceContext.active() } : untraced;
    const mcpToken = deps.mcp?.beginExecution(
      event.workflowRun === undefined && event.stream === undefined && this.criticalTools === undefined ? binding : this.runBinding(binding, call, background),
      timeoutMs + MCP_TOKEN_GRACE_MS,
    );
    /** Revokes the token and moves the execution's MCP calls and refusals into the evidence. */
    const endMcp = (): McpCallSummary[] => {
      if (mcpToken === undefined) return [];
      const record = deps.mcp!.endExecution(mcpToken);
      evidence.externalCalls.push(...record.externalCalls);
      evidence.capabilityViolations.push(...record.capabilityViolations);
      return record.calls;
    };
    const context = deps.contexts.json(app, component, {
      mcpEndpoint: deps.mcpEndpoint(),
      timeoutMs,
      sessionId: turn.sessionId,
      turnNumber: turn.turnNumber,
      mcpToken,
      ...(cs !== undefined ? { cs } : {}),
      ...(event.workflowRun?.owner === true ? { workflowRunId: event.workflowRun.runId, workflowLoaded: event.workflowRun.loaded } : {}),
    });
    const body = `{"requestId":${JSON.stringify(requestId)},"requestData":${requestDataJson},"context":${context}}`;
    try {
      const { response, text } = await deps.executor.execute(
        {
          appId: app.id,
          poolName: pool.name,
          timeoutMs,
          ...(component.jit ? { script: { revision: app.revision, path: component.jit.script } } : {}),
          ...(event.workflowRun?.signal !== undefined ? { signal: event.workflowRun.signal } : {}),
        },
        requestId,
        body,
        event.traceId,
        // Outputs of an ambient session (or of a comparison run after the answer) are checked but not kept: nobody could fetch them.
        { sessionId: turn.sessionId, declared: event.declaredOutputs, outputsRoot: turn.ambient || background ? undefined : deps.outputsRoot, evidence },
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

  /** The token binding of a workflow run's execution (or of one with a stream, or of an app that marks critical tools). */
  private runBinding(binding: GrantBinding, call: ExecutionCall, background: boolean): GrantBinding {
    const { event, turn } = call;
    const critical = this.criticalTools;
    return {
      ...binding,
      ...(event.workflowRun !== undefined
        ? { run: { id: event.workflowRun.runId, owner: event.workflowRun.owner, ...(event.workflowRun.signal !== undefined ? { signal: event.workflowRun.signal } : {}) } }
        : {}),
      ...(event.workflowRun !== undefined && !turn.ambient ? { sessionId: turn.sessionId } : {}),
      ...(critical !== undefined && critical.size > 0 ? { criticalTools: critical } : {}),
      // A comparison run of the oracle after the answer writes nothing to the client's stream.
      ...(event.stream !== undefined && !background ? { stream: event.stream } : {}),
    };
  }
}
