/**
 * The llm-orchestrator's workflow engine (seed 003 §2.3 step 7, seed 004): one
 * execution drives one workflow run that the core owns.
 *
 * 1. `core.workflow.load` gives the run: its position (the frontier of nodes
 *    due), blackboard, retries, approvals and time left. The workflow file is
 *    read at the run's revision and validated again (validate-workflow.ts).
 * 2. A fresh run checks the workflow's requirements (pre-flight, 422 on a
 *    failed required one); every node checks its own before it runs.
 * 3. Nodes run one at a time (sequential), or every node of the frontier at
 *    once (parallel: `next` lists branches, `join` waits for them). After each
 *    node (each wave in parallel mode) a checkpoint goes to the core with the
 *    state and the trace steps (SimulationStep), so a new execution after a
 *    sandbox death goes on from there: a completed node never runs twice. The
 *    checkpoint is sent before the next node does anything outside the run:
 *    with the next JIT step's call (the core applies it before it runs the
 *    component), or on its own; only routers, approvals and ends, which touch
 *    nothing outside the blackboard, may run before it is sent.
 * 4. A failed step (429 or 5xx) is retried with backoff up to max_retries;
 *    the run stops at its time (504, timed_out), at an approval node with no
 *    decision yet (paused), at an end node (completed) or on an error (failed).
 *
 * Agents and judges are LLM calls through `core.llm.generate` (conversation.ts),
 * JIT nodes are run by the core (`core.component.invoke`), tool nodes are MCP
 * calls; everything goes through the execution's token, so the core's
 * capability checks and its critical-tool gate hold for every step.
 */
import { backoffDelay } from '../../../shared/backoff.js';
import { withDeadline } from '../../../shared/deadline.js';
import type { ExecuteRequest } from '../../../contract/execute-contract.js';
import { compileOutputSchema } from '../../../contract/output-schema.js';
import type { LlmComponentSpec } from '../../../contract/llm-component-schema.js';
import type { Executor } from '../../kit/executor.js';
import type { ScriptResult } from '../../kit/script-result.js';
import { runnerErrorResult } from '../../kit/script-result.js';
import { ToolCallError, type ExecutionTools } from '../../kit/tools-client.js';
import { mapInputs, readPath, writePath, type Blackboard } from '../../../contract/workflow/blackboard.js';
import { checkConstraints } from '../../../contract/workflow/preflight.js';
import { bounded, type EngineState, type RunError, type RunView, type SimulationStep } from '../../../contract/workflow/run-view.js';
import type { StreamPacket } from '../../../contract/workflow/stream-packets.js';
import { readWorkflow, type WorkflowAppView, type WorkflowRead } from '../../../contract/workflow/validate-workflow.js';
import type { AgentNode, Constraint, EvaluatorNode, WorkflowDefinition, WorkflowNode } from '../../../contract/workflow/workflow-schema.js';
import { nextOf } from '../../../contract/workflow/workflow-schema.js';
import { answerJson, judgeAnswer } from '../answer-judge.js';
import { converse } from '../conversation.js';
import { DefinitionFileError, DefinitionFiles } from '../definition-files.js';
import type { LlmMessage } from '../../../contract/llm-messages.js';
import { mcpGenerate, type GenerateRequest } from '../generate-client.js';
import { readLlmTaskSpec } from '../llm-task-spec.js';
import { ModelTools } from '../model-tools.js';
import { OutputSchemas } from '../output-schemas.js';
import { PromptTemplateError, PromptTemplates } from '../prompt-templates.js';
import { queryText, SkillIndex } from '../skill-index.js';
import { templateVariables } from '../../../contract/template-variables.js';
import { functionName } from '../tool-names.js';

export const LOAD_TOOL = 'core.workflow.load';
export const CHECKPOINT_TOOL = 'core.workflow.checkpoint';
export const EMIT_TOOL = 'core.workflow.emit';
export const INVOKE_TOOL = 'core.component.invoke';

/** Validated workflows kept per sandbox (app, revision, file). */
const KEPT_WORKFLOWS = 32;
/** Longest NODE_STREAM chunk a JIT node's result is sent as. */
const MAX_CHUNK_CHARS = 64 * 1024;
/** Nodes before which a pending checkpoint need not be sent on its own (see step 3 above). */
const DEFERRING: ReadonlySet<string> = new Set(['jit', 'router', 'approval', 'end']);
/** Codes a step is never retried on: retrying cannot change them. */
const FINAL_CODES = new Set([
  'UHLP_WORKFLOW_TIMEOUT',
  'UHLP_WORKFLOW_STATE_TOO_LARGE',
  'UHLP_WORKFLOW_RUN_CONFLICT',
  'UHLP_WORKFLOW_EVALUATION_FAILED',
  'UHLP_WORKFLOW_PREFLIGHT_FAILED',
  'UHLP_WORKFLOW_INVALID',
  'UHLP_TOOL_APPROVAL_REQUIRED',
  'UHLP_CAPABILITY_DENIED',
]);

/** A failure of the run with the code and status the client gets. */
export class WorkflowRunError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'WorkflowRunError';
  }

  toRunError(): RunError {
    return { code: this.code, message: this.message.slice(0, 4096), status: this.status, ...(this.details !== undefined ? { details: this.details } : {}) };
  }
}

/** What one node did: where the run goes, and what the trace says of it. */
interface NodeOutcome {
  readonly next: readonly string[];
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly output?: unknown;
  /** An approval node with no decision: the run pauses here. */
  readonly pause?: { readonly prompt: string };
  /** An end node: the run's result. */
  readonly end?: { readonly result: unknown };
  readonly emit?: readonly StreamPacket[];
}

export interface WorkflowExecutorOptions {
  /** Waits between retries of a step (tests make it instant). @defaultValue setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
}

export function createWorkflowExecutor(options: WorkflowExecutorOptions = {}): Executor {
  const files = new DefinitionFiles();
  const templates = new PromptTemplates(files);
  const schemas = new OutputSchemas(files);
  const modelTools = new ModelTools();
  const skills = new SkillIndex(files);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const stateSchemas = new Map<string, ReturnType<typeof compileOutputSchema>>();
  const workflows = new Map<string, WorkflowRead>();

  return async (request, tools): Promise<ScriptResult> => {
    const info = request.context.workflowInfo;
    const revision = request.context.taskDetails?.revision;
    if (info?.runId === undefined || revision === undefined) return runnerErrorResult('UHLP_EXECUTE_BAD_REQUEST', 'context.workflowInfo.runId and taskDetails.revision are required to run a workflow');
    const loaded = await tools.call(LOAD_TOOL, {});
    const run = loaded['run'] as RunView;
    const components = (loaded['components'] ?? {}) as Record<string, { handler: 'JIT' | 'LLM' | 'WORKFLOW'; llm?: unknown }>;
    const appId = request.context.appId;
    const scope = { appId, revision: run.revision, tools };
    const state: MutableState = structuredClone(run.state) as MutableState;
    const runner = new RunDriver(request, tools, run, state);

    let workflow: WorkflowDefinition;
    try {
      const file = String(loaded['workflowFile']);
      const key = `${appId}\0${run.revision}\0${file}`;
      // A revision never changes: its workflow is parsed and validated once per sandbox.
      let read = workflows.get(key);
      if (read === undefined) {
        const text = await files.read(appId, run.revision, file, tools);
        const view: WorkflowAppView = { componentHandler: (id) => components[id]?.handler };
        read = readWorkflow(text, view);
        workflows.set(key, read);
        for (const old of workflows.keys()) {
          if (workflows.size <= KEPT_WORKFLOWS) break;
          workflows.delete(old);
        }
      }
      if (!read.ok) throw new WorkflowRunError('UHLP_WORKFLOW_INVALID', `workflows/${run.workflowId}.yaml is invalid: ${read.problems[0]!.path}: ${read.problems[0]!.reason}`, 500, { problems: read.problems });
      workflow = read.workflow;
    } catch (error) {
      if (error instanceof DefinitionFileError) return runner.fail({ code: 'UHLP_WORKFLOW_INVALID', message: `workflows/${run.workflowId}.yaml cannot be read: ${error.message}`, status: 500 });
      return runner.fail(asRunError(error));
    }

    const schemaKey = `${appId}\0${run.revision}\0${run.workflowId}`;
    let stateSchema = stateSchemas.get(schemaKey);
    if (stateSchema === undefined && workflow.state.schema !== undefined) {
      stateSchema = compileOutputSchema(workflow.state.schema);
      stateSchemas.set(schemaKey, stateSchema);
      for (const old of stateSchemas.keys()) {
        if (stateSchemas.size <= KEPT_WORKFLOWS) break;
        stateSchemas.delete(old);
      }
    }

    if (run.fresh) {
      const problem = preflight(workflow.requirements, state.blackboard);
      if (problem !== undefined) return runner.fail(problem);
    }

    const deps: NodeDeps = {
      request,
      tools,
      scope,
      workflow,
      components,
      templates,
      schemas,
      modelTools,
      skills,
      files,
      state,
      workflowId: run.workflowId,
      approvals: run.approvals,
      takePending: () => runner.take(),
      sendCheckpointed: (tool, args) => runner.send(tool, args),
    };

    while (state.position.frontier.length > 0) {
      const wave = workflow.policy.execution_mode === 'parallel' ? [...state.position.frontier] : [state.position.frontier[0]!];
      // The checkpoint of the nodes before rides with the next JIT step's call (applied before it runs), or
      // with the run's last checkpoint after a node that touches nothing outside the blackboard (router,
      // approval, end); before an LLM or tool call it is sent on its own.
      const next = wave.length === 1 ? workflow.nodes[wave[0]!]!.type : undefined;
      if (next === undefined || !DEFERRING.has(next)) await runner.flush();
      const results = await Promise.all(
        wave.map(async (id) => {
          const started = performance.now();
          try {
            const outcome = await runner.withinTime(() => runWithRetries(id, deps, sleep));
            return { id, outcome, durationMs: performance.now() - started };
          } catch (error) {
            return { id, error: asRunError(error), durationMs: performance.now() - started };
          }
        }),
      );

      const steps: SimulationStep[] = [];
      const emit: StreamPacket[] = [];
      let failure: RunError | undefined;
      let pause: { node: string; prompt: string } | undefined;
      let end: { result: unknown } | undefined;
      const frontier = state.position.frontier.filter((id) => !wave.includes(id));
      for (const result of results) {
        const node = workflow.nodes[result.id]!;
        if (result.error !== undefined) {
          failure ??= result.error;
          steps.push(runner.step(result.id, node, { thought: `${node.type} node failed`, action: { type: node.type }, observation: null, error: result.error, durationMs: result.durationMs }));
          continue;
        }
        const outcome = result.outcome!;
        if (outcome.emit !== undefined) emit.push(...outcome.emit);
        if (outcome.pause !== undefined) {
          pause ??= { node: result.id, prompt: outcome.pause.prompt };
          frontier.push(result.id);
          continue;
        }
        state.nodesRun++;
        steps.push(runner.step(result.id, node, { ...outcome, durationMs: result.durationMs }));
        if (outcome.end !== undefined) end ??= outcome.end;
        for (const target of outcome.next) advance(workflow, state, frontier, result.id, target);
      }
      state.position = { frontier: [...new Set(frontier)], arrived: state.position.arrived };

      if (failure === undefined && stateSchema?.validate !== undefined && !stateSchema.validate(state.blackboard)) {
        failure = { code: 'UHLP_WORKFLOW_STATE_INVALID', message: 'the blackboard breaks the workflow state.schema', status: 500, details: { errors: (stateSchema.validate.errors ?? []).slice(0, 10).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`) } };
      }
      if (failure !== undefined) return runner.fail(failure, steps, emit);
      if (end !== undefined) {
        await runner.checkpoint({ steps, emit, status: 'completed', result: end.result });
        return { resultType: 'generic', data: end.result ?? null };
      }
      if (pause !== undefined) {
        await runner.checkpoint({ steps, emit, status: 'paused', paused: pause });
        return { resultType: 'generic', data: { status: 'paused', node: pause.node } };
      }
      runner.defer(steps, emit);
    }
    return runner.fail({ code: 'UHLP_WORKFLOW_INVALID', message: 'the run has no node left to run and reached no end node', status: 500 });
  };
}

type MutableState = { -readonly [K in keyof EngineState]: EngineState[K] } & {
  position: { frontier: string[]; arrived: Record<string, string[]> };
  blackboard: Blackboard;
  retries: Record<string, number>;
  loops: Record<string, number>;
  feedback: Record<string, string>;
};

/** A step's copy of the blackboard, or the note of its size that the core would keep instead (run-record.ts `bounded`). */
function snapshotOf(board: Blackboard): unknown {
  const kept = bounded(board);
  return kept === board ? structuredClone(board) : kept;
}

/** Moves the run from `from` to `target`: a join node waits until every node it names has led to it. */
function advance(workflow: WorkflowDefinition, state: MutableState, frontier: string[], from: string, target: string): void {
  const join = workflow.nodes[target]?.join;
  if (join === undefined || !join.includes(from)) {
    frontier.push(target);
    return;
  }
  const arrived = new Set(state.position.arrived[target] ?? []);
  arrived.add(from);
  if (join.every((id) => arrived.has(id))) {
    delete state.position.arrived[target];
    frontier.push(target);
  } else state.position.arrived[target] = [...arrived];
}

/** The run's checkpoints, trace steps and time. */
class RunDriver {
  private nextIndex: number;
  private readonly deadline: number;
  /** Steps (and packets) of completed nodes not sent to the core yet. */
  private pending: { steps: SimulationStep[]; emit: StreamPacket[] } | undefined;
  /** The run has ended on the core's side (a checkpoint too large failed it): no checkpoint is sent any more. */
  private ended = false;

  constructor(
    private readonly request: ExecuteRequest,
    private readonly tools: ExecutionTools,
    private readonly run: RunView,
    private readonly state: MutableState,
  ) {
    this.nextIndex = run.nextStep;
    this.deadline = performance.now() + run.remainingMs;
  }

  step(id: string, node: WorkflowNode, what: { thought: string; action: Record<string, unknown>; observation: unknown; output?: unknown; error?: RunError; durationMs: number }): SimulationStep {
    return {
      index: this.nextIndex++,
      at: new Date().toISOString(),
      workflowId: this.run.workflowId,
      stepId: id,
      node: id,
      type: node.type,
      status: what.error !== undefined ? 'failed' : 'completed',
      thought: what.thought.slice(0, 8192),
      action: what.action,
      // Bounded here as the core bounds what it keeps: a checkpoint carries no more of a step than its record will.
      observation: bounded(what.observation),
      snapshot: snapshotOf(this.state.blackboard),
      ...(what.output !== undefined ? { output: bounded(what.output) } : {}),
      ...(what.error !== undefined ? { error: what.error } : {}),
      durationMs: Math.round(what.durationMs * 1000) / 1000,
    };
  }

  /** Keeps a wave's steps for the next checkpoint: the next call to the core takes them. */
  defer(steps: SimulationStep[], emit: StreamPacket[]): void {
    this.pending ??= { steps: [], emit: [] };
    this.pending.steps.push(...steps);
    this.pending.emit.push(...emit);
  }

  /** The pending checkpoint (state, steps, packets), for a call that applies it; none when nothing is pending. */
  take(): Record<string, unknown> | undefined {
    const pending = this.pending;
    if (pending === undefined) return undefined;
    this.pending = undefined;
    return { state: structuredClone(this.state), steps: pending.steps, ...(pending.emit.length > 0 ? { emit: pending.emit.slice(0, 256) } : {}) };
  }

  /** Sends the pending checkpoint on its own. */
  async flush(): Promise<void> {
    if (this.pending !== undefined) await this.checkpoint({ steps: [] });
  }

  async checkpoint(extra: { steps: SimulationStep[]; emit?: StreamPacket[]; status?: string; result?: unknown; error?: RunError; paused?: { node: string; prompt: string } }): Promise<void> {
    const { emit = [], steps, ...rest } = extra;
    const pending = this.pending;
    this.pending = undefined;
    const allSteps = pending !== undefined ? [...pending.steps, ...steps] : steps;
    const allEmit = pending !== undefined ? [...pending.emit, ...emit] : emit;
    await this.send(CHECKPOINT_TOOL, { state: this.state, steps: allSteps, ...rest, ...(allEmit.length > 0 ? { emit: allEmit.slice(0, 256) } : {}) });
  }

  /**
   * A call that carries a checkpoint: core.workflow.checkpoint, or
   * core.component.invoke with the pending one. Over the run cap the core fails
   * the run itself (UHLP_WORKFLOW_STATE_TOO_LARGE) and nothing more is sent.
   * Over the MCP endpoint's body limit the core cannot read it at all (413
   * UHLP_BODY_TOO_LARGE): the run is failed from here with the same code, by a
   * checkpoint without the state, so that the run keeps the state of its last
   * checkpoint.
   */
  async send(tool: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    try {
      return await this.tools.call(tool, args);
    } catch (error) {
      if (!(error instanceof ToolCallError)) throw error;
      if (error.code === 'UHLP_WORKFLOW_STATE_TOO_LARGE') this.ended = true;
      if (error.code !== 'UHLP_BODY_TOO_LARGE') throw error;
      const failure = new WorkflowRunError('UHLP_WORKFLOW_STATE_TOO_LARGE', `the run's checkpoint is too large for the core to read (${error.message}); the run failed`, 500, error.details);
      this.ended = true;
      await this.tools.call(CHECKPOINT_TOOL, { steps: [], status: 'failed', error: failure.toRunError() });
      throw failure;
    }
  }

  /** Ends the run failed (timed_out for a timeout) and answers its error; a run the core has ended already is not checkpointed again. */
  async fail(error: RunError, steps: SimulationStep[] = [], emit: StreamPacket[] = []): Promise<ScriptResult> {
    const status = error.code === 'UHLP_WORKFLOW_TIMEOUT' ? 'timed_out' : 'failed';
    if (!this.ended) await this.checkpoint({ steps, emit, status, error });
    return { resultType: 'error', data: { code: error.code, message: error.message, status: error.status, ...(error.details !== undefined ? { details: error.details } : {}) } };
  }

  /** `work`, or UHLP_WORKFLOW_TIMEOUT once the run's time is spent. */
  async withinTime<T>(work: () => Promise<T>): Promise<T> {
    const left = this.deadline - performance.now();
    if (left <= 0) throw this.timeout();
    return withDeadline(work(), left, () => this.timeout());
  }

  private timeout(): WorkflowRunError {
    return new WorkflowRunError('UHLP_WORKFLOW_TIMEOUT', `the run ran past its time (request ${this.request.requestId})`, 504, { runId: this.run.id });
  }
}

interface NodeDeps {
  readonly request: ExecuteRequest;
  readonly tools: ExecutionTools;
  readonly scope: { readonly appId: string; readonly revision: string; readonly tools: ExecutionTools };
  readonly workflow: WorkflowDefinition;
  readonly workflowId: string;
  readonly components: Readonly<Record<string, { handler: string; llm?: unknown }>>;
  readonly templates: PromptTemplates;
  readonly schemas: OutputSchemas;
  readonly modelTools: ModelTools;
  readonly skills: SkillIndex;
  readonly files: DefinitionFiles;
  readonly state: MutableState;
  readonly approvals: RunView['approvals'];
  /** The checkpoint still to send, taken by the next JIT step's call. */
  readonly takePending: () => Record<string, unknown> | undefined;
  /** Makes a call that carries a checkpoint (RunDriver.send). */
  readonly sendCheckpointed: (tool: string, args: Record<string, unknown>) => Promise<Record<string, unknown>>;
}

/** Runs a node, again after a failure that may pass (429, 5xx), with backoff, up to its max_retries. */
async function runWithRetries(id: string, deps: NodeDeps, sleep: (ms: number) => Promise<void>): Promise<NodeOutcome> {
  const node = deps.workflow.nodes[id]!;
  if (node.requirements !== undefined) {
    const problem = preflight(node.requirements, deps.state.blackboard, id);
    if (problem !== undefined) throw new WorkflowRunError(problem.code, problem.message, problem.status, problem.details);
  }
  const allowed = ('max_retries' in node && node.type !== 'evaluator' ? node.max_retries : undefined) ?? deps.workflow.policy.max_retries;
  for (;;) {
    try {
      return await runNode(id, node, deps);
    } catch (error) {
      const failure = asRunError(error);
      const retries = deps.state.retries[id] ?? 0;
      if (FINAL_CODES.has(failure.code) || !(failure.status === 429 || failure.status >= 500) || retries >= allowed) throw error;
      deps.state.retries[id] = retries + 1;
      await sleep(backoffDelay(retries, { initialMs: deps.workflow.policy.retry_backoff_ms, maxMs: Math.max(deps.workflow.policy.retry_backoff_ms, 30_000) }));
    }
  }
}

function runNode(id: string, node: WorkflowNode, deps: NodeDeps): Promise<NodeOutcome> {
  switch (node.type) {
    case 'agent':
      return runAgent(id, node, deps);
    case 'jit':
      return runJit(id, node, deps);
    case 'tool':
      return runTool(node, deps);
    case 'router':
      return Promise.resolve(runRouter(node, deps));
    case 'evaluator':
      return runEvaluator(id, node, deps);
    case 'approval':
      return Promise.resolve(runApproval(id, node, deps));
    case 'end':
      return Promise.resolve(runEnd(node, deps));
  }
}

async function runAgent(id: string, node: AgentNode, deps: NodeDeps): Promise<NodeOutcome> {
  const board = deps.state.blackboard;
  const inputs = node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : (board['input'] ?? null);
  // The evaluator's critique, when the run came back here from a failed judgement (seed 004 §9).
  const feedbackPath = deps.state.feedback[id];
  const feedback = feedbackPath !== undefined ? readPath(board, feedbackPath) : undefined;
  delete deps.state.feedback[id];
  const selection = await deps.skills.select(deps.workflowId, deps.workflow.skills, queryText(inputs), deps.workflow.skill_threshold, deps.scope);

  const spec = node.component !== undefined ? llmSpecOf(deps, node.component) : inlineSpec(node);
  const output = await askModel(deps, spec, node.component ?? id, inputs, {
    extra: [
      ...selection.loaded.map((skill) => `[skill ${skill.id}]\n${skill.content}`),
      ...(feedback !== undefined && feedback !== null ? [`Feedback on your previous answer (revise it accordingly):\n${typeof feedback === 'string' ? feedback : JSON.stringify(feedback)}`] : []),
    ],
    ...(node.stream !== undefined ? { stream: { id: node.stream, node: id, ...(node.content_type !== undefined ? { contentType: node.content_type } : {}) } } : {}),
  });
  if (node.output !== undefined) writePath(board, node.output, output);
  return {
    next: nextOf(node),
    thought: `agent ${node.component ?? node.prompt}: ${selection.loaded.length} skill(s) loaded${feedback !== undefined ? ', with the evaluator feedback' : ''}`,
    action: { type: 'agent', ...(node.component !== undefined ? { component: node.component } : { prompt: node.prompt }), ...(node.output !== undefined ? { output: node.output } : {}) },
    observation: { skills: selection.loaded.map((skill) => ({ id: skill.id, score: skill.score })), skillScores: selection.scores, embeddingModel: selection.model, feedback: feedback !== undefined },
    output,
    ...(node.stream !== undefined ? { emit: [{ type: 'STREAM_END', stream_id: node.stream } satisfies StreamPacket] } : {}),
  };
}

/** An LLM component's spec, its defaults filled in. */
function llmSpecOf(deps: NodeDeps, component: string): LlmComponentSpec {
  const read = readLlmTaskSpec(deps.components[component]?.llm);
  if ('problem' in read) throw new WorkflowRunError('UHLP_WORKFLOW_INVALID', `component ${component}: ${read.problem}`, 500);
  return read.spec;
}

function inlineSpec(node: AgentNode): LlmComponentSpec {
  const read = readLlmTaskSpec({
    prompt: node.prompt,
    ...(node.system !== undefined ? { system: node.system } : {}),
    ...(node.output_schema !== undefined ? { outputSchema: node.output_schema } : {}),
    ...(node.model !== undefined ? { model: node.model } : {}),
    ...(node.temperature !== undefined ? { temperature: node.temperature } : {}),
    ...(node.max_tokens !== undefined ? { maxTokens: node.max_tokens } : {}),
    ...(node.tools !== undefined ? { tools: node.tools } : {}),
    ...(node.max_tool_calls !== undefined ? { maxToolCalls: node.max_tool_calls } : {}),
  });
  if ('problem' in read) throw new WorkflowRunError('UHLP_WORKFLOW_INVALID', `agent ${node.prompt}: ${read.problem}`, 500);
  return read.spec;
}

/**
 * One LLM task: the spec's templates rendered with the step's inputs as `body`
 * (and `inputs`, `blackboard`), skills and feedback appended to the user
 * message, the answer judged against the spec's schema. A schema-less answer
 * is its text.
 */
async function askModel(
  deps: NodeDeps,
  spec: LlmComponentSpec,
  name: string,
  inputs: unknown,
  options: { extra: readonly string[]; stream?: GenerateRequest['stream'] },
): Promise<unknown> {
  const variables = { ...templateVariables(deps.request), body: inputs, inputs, blackboard: deps.state.blackboard };
  const render = (file: string): Promise<string> =>
    deps.templates.render(file, variables, deps.scope).catch((error: unknown) => {
      if (!(error instanceof PromptTemplateError)) throw error;
      throw new WorkflowRunError(error.code, `prompt template ${error.message}`, 500, error.details());
    });
  const [system, prompt, schema, offered] = await Promise.all([
    spec.system !== undefined ? render(spec.system) : undefined,
    render(spec.prompt),
    spec.outputSchema !== undefined ? deps.schemas.get(spec.outputSchema, deps.scope) : undefined,
    deps.modelTools.offer(spec.maxToolCalls > 0 ? spec.tools : [], deps.scope),
  ]);
  const messages: LlmMessage[] = [];
  if (system !== undefined) messages.push({ role: 'system', content: system });
  messages.push({ role: 'user', content: [prompt, ...options.extra].join('\n\n') });
  const output = await converse({
    generate: mcpGenerate(deps.tools),
    callTool: (tool, args) => deps.tools.call(tool, args),
    request: {
      ...(spec.model !== undefined ? { model: spec.model } : {}),
      ...(spec.maxTokens !== undefined ? { maxTokens: spec.maxTokens } : {}),
      ...(spec.temperature !== undefined ? { temperature: spec.temperature } : {}),
      ...(schema !== undefined ? { responseSchema: { name: functionName(name), schema: schema.schema } } : {}),
      ...(spec.cache !== undefined && spec.temperature === 0 ? { cacheTtlSeconds: spec.cache.ttlSeconds } : {}),
      ...(options.stream !== undefined ? { stream: options.stream } : {}),
    },
    messages,
    tools: offered,
    maxToolCalls: spec.maxToolCalls,
    maxAttempts: spec.maxAttempts,
    judge: (text) => judgeAnswer(text, { ...(schema !== undefined ? { validate: schema.validate } : {}), respond: 'generic' }),
  });
  return schema === undefined ? (output as { text: string }).text : output;
}

async function runJit(id: string, node: { component: string; inputs_map?: Record<string, string>; output?: string; stream?: string; content_type?: string; next?: string | string[] }, deps: NodeDeps): Promise<NodeOutcome> {
  const board = deps.state.blackboard;
  const input = node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : (board['input'] ?? null);
  const checkpoint = deps.takePending();
  const call = { component: node.component, input, node: id };
  const answer = checkpoint !== undefined ? await deps.sendCheckpointed(INVOKE_TOOL, { ...call, checkpoint }) : await deps.tools.call(INVOKE_TOOL, call);
  const data = answer['data'] ?? null;
  if (node.output !== undefined) writePath(board, node.output, data);
  const emit: StreamPacket[] = [];
  if (node.stream !== undefined) {
    const chunk = (typeof data === 'string' ? data : JSON.stringify(data)).slice(0, MAX_CHUNK_CHARS);
    emit.push(
      { type: 'STREAM_START', stream_id: node.stream, content_type: node.content_type ?? (typeof data === 'string' ? 'text/plain' : 'application/json') },
      { type: 'NODE_STREAM', stream_id: node.stream, node: id, chunk },
      { type: 'STREAM_END', stream_id: node.stream },
    );
  }
  return {
    next: nextOf(node as WorkflowNode),
    thought: `run the JIT component ${node.component}`,
    action: { type: 'jit', component: node.component, ...(node.output !== undefined ? { output: node.output } : {}) },
    observation: { resultType: answer['resultType'] ?? null },
    output: data,
    ...(emit.length > 0 ? { emit } : {}),
  };
}

async function runTool(node: { tool: string; args?: Record<string, unknown>; inputs_map?: Record<string, string>; output?: string; next?: string | string[] }, deps: NodeDeps): Promise<NodeOutcome> {
  const board = deps.state.blackboard;
  const args = { ...(node.args ?? {}), ...(node.inputs_map !== undefined ? mapInputs(board, node.inputs_map) : {}) };
  const answer = await deps.tools.call(node.tool, args);
  if (node.output !== undefined) writePath(board, node.output, answer);
  return { next: nextOf(node as WorkflowNode), thought: `call the tool ${node.tool}`, action: { type: 'tool', tool: node.tool, args }, observation: answer, output: answer };
}

/** Strict matching (seed 004 §7): a string equal to a route key, or a number or boolean whose text is; else default_route. */
function runRouter(node: { input_key: string; routes: Record<string, string>; default_route: string }, deps: NodeDeps): NodeOutcome {
  const value = readPath(deps.state.blackboard, node.input_key);
  const key = typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : undefined;
  const matched = key !== undefined && Object.prototype.hasOwnProperty.call(node.routes, key) ? node.routes[key] : undefined;
  const target = matched ?? node.default_route;
  return {
    next: [target],
    thought: matched !== undefined ? `${node.input_key} is ${JSON.stringify(value)}: route ${JSON.stringify(key)}` : `${node.input_key} is ${JSON.stringify(value) ?? 'missing'}: no route matches, default_route`,
    action: { type: 'router', input_key: node.input_key, route: matched !== undefined ? key : null, next: target },
    observation: value ?? null,
  };
}

/** The evaluator-optimizer loop (seed 004 §9). */
async function runEvaluator(id: string, node: EvaluatorNode, deps: NodeDeps): Promise<NodeOutcome> {
  const board = deps.state.blackboard;
  const target = readPath(board, node.target_variable) ?? null;
  const verdict = await askModel(deps, llmSpecOf(deps, node.evaluator_agent_ref), node.evaluator_agent_ref, { target, variable: node.target_variable }, { extra: [] });
  const { score: raw, critique } = readVerdict(verdict);
  const [low, high] = node.score_range ?? [0, 1];
  const score = Math.min(1, Math.max(0, (raw - low) / (high - low)));
  const passed = score >= node.pass_threshold;
  const action = { type: 'evaluator', judge: node.evaluator_agent_ref, score, pass_threshold: node.pass_threshold, passed };
  if (passed) {
    delete deps.state.loops[id];
    return { next: [node.pass_route], thought: `score ${score} >= ${node.pass_threshold}: pass`, action, observation: { score, raw, critique } };
  }
  const fails = (deps.state.loops[id] ?? 0) + 1;
  deps.state.loops[id] = fails;
  if (fails > node.max_retries) {
    throw new WorkflowRunError('UHLP_WORKFLOW_EVALUATION_FAILED', `${node.target_variable} failed the judge ${fails} times (max_retries ${node.max_retries})`, 502, { node: id, score, critique });
  }
  if (node.feedback_variable !== undefined) {
    writePath(board, node.feedback_variable, critique);
    deps.state.feedback[node.fail_route] = node.feedback_variable;
  }
  return { next: [node.fail_route], thought: `score ${score} < ${node.pass_threshold}: fail ${fails} of ${node.max_retries} allowed, back to ${node.fail_route}`, action, observation: { score, raw, critique } };
}

/** `{score, critique}` of a judge's answer: an object with a numeric score, or a text holding JSON or a number. */
function readVerdict(verdict: unknown): { score: number; critique: string } {
  let value = verdict;
  if (typeof value === 'string') {
    const parsed = answerJson(value);
    value = 'value' in parsed ? parsed.value : value;
  }
  if (typeof value === 'number') return { score: value, critique: '' };
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    const score = typeof record['score'] === 'number' ? record['score'] : Number(record['score']);
    if (Number.isFinite(score)) {
      const critique = record['critique'] ?? record['feedback'] ?? '';
      return { score, critique: typeof critique === 'string' ? critique : JSON.stringify(critique) };
    }
  }
  if (typeof value === 'string') {
    const match = /-?\d+(\.\d+)?/.exec(value);
    if (match !== null) return { score: Number(match[0]), critique: value };
  }
  throw new WorkflowRunError('UHLP_LLM_OUTPUT_INVALID', 'the judge answered no score', 502, { answer: typeof verdict === 'string' ? verdict.slice(0, 512) : verdict });
}

function runApproval(id: string, node: { prompt: string; next: string | string[]; reject_route?: string; grants: string[] }, deps: NodeDeps): NodeOutcome {
  const decision = deps.approvals[id];
  if (decision === undefined) return { next: [], thought: 'wait for an approver', action: { type: 'approval' }, observation: null, pause: { prompt: node.prompt } };
  const action = { type: 'approval', approved: decision.approved, ...(decision.by !== undefined ? { by: decision.by } : {}), grants: decision.approved ? node.grants : [] };
  if (decision.approved) return { next: nextOf(node as WorkflowNode), thought: 'approved', action, observation: decision };
  if (node.reject_route !== undefined) return { next: [node.reject_route], thought: 'rejected: reject_route', action, observation: decision };
  throw new WorkflowRunError('UHLP_WORKFLOW_REJECTED', `the approver rejected the run at ${id}${decision.comment !== undefined ? `: ${decision.comment}` : ''}`, 409, { node: id });
}

function runEnd(node: { output?: string | Record<string, string> }, deps: NodeDeps): NodeOutcome {
  const board = deps.state.blackboard;
  let result: unknown;
  if (node.output === undefined) result = board;
  else if (typeof node.output === 'string') result = readPath(board, node.output) ?? null;
  else result = Object.fromEntries(Object.entries(node.output).map(([name, path]) => [name, readPath(board, path) ?? null]));
  return { next: [], thought: 'the run ends', action: { type: 'end' }, observation: null, output: result, end: { result } };
}

/** The first failed required constraint as the run's error (422), or undefined. */
function preflight(constraints: readonly Constraint[], board: Blackboard, node?: string): RunError | undefined {
  if (constraints.length === 0) return undefined;
  const failed = checkConstraints(constraints, board).failed;
  if (failed === undefined) return undefined;
  const { constraint } = failed;
  return {
    code: 'UHLP_WORKFLOW_PREFLIGHT_FAILED',
    message: constraint.error_message,
    status: 422,
    details: { variable: constraint.variable, operator: constraint.operator, ...(constraint.field !== undefined ? { field: constraint.field } : {}), ...(node !== undefined ? { node } : {}) },
  };
}

function asRunError(error: unknown): RunError {
  if (error instanceof WorkflowRunError) return error.toRunError();
  if (error instanceof ToolCallError) return { code: error.code, message: error.message.slice(0, 4096), status: error.status ?? 502, ...(error.details !== undefined ? { details: error.details } : {}) };
  if (error instanceof Error && typeof (error as { code?: unknown }).code === 'string') {
    const coded = error as Error & { code: string; status?: number; details?: unknown };
    return { code: coded.code, message: coded.message.slice(0, 4096), status: typeof coded.status === 'number' ? coded.status : 500, ...(coded.details !== undefined ? { details: coded.details } : {}) };
  }
  return { code: 'UHLP_INTERNAL', message: 'the workflow step failed', status: 500 };
}
