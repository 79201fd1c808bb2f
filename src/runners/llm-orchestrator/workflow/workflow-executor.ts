/**
 * The llm-orchestrator's workflow engine (seed 003 §2.3 step 7, seed 004): one
 * execution drives one workflow run that the core owns.
 *
 * 1. `core.workflow.load` gives the run: its position (the frontier of nodes
 *    due), blackboard, retries, approvals and time left; on a run's first
 *    execution the core sends that answer along in the context, and it is
 *    asked for only when none that holds came (contract/workflow/loaded-run.ts).
 *    The workflow file is read at the run's revision and validated again
 *    (workflow-source.ts).
 * 2. A fresh run checks the workflow's requirements (pre-flight, 422 on a
 *    failed required one, requirements.ts); every node checks its own before
 *    it runs.
 * 3. The run loop (run-loop.ts) runs the nodes, one module per kind (nodes/),
 *    one at a time or a wave of branches at once (frontier.ts), and
 *    checkpoints the run through the core after each (run-checkpoints.ts), so
 *    a new execution after a sandbox death goes on from there: a completed
 *    node never runs twice.
 * 4. A failed step (429 or 5xx) is retried with backoff up to max_retries
 *    (node-retries.ts); the run stops at its time (504, timed_out,
 *    run-deadline.ts), at an approval node with no decision yet (paused), at
 *    an end node (completed) or on an error (failed).
 *
 * Agents and judges are LLM calls through `core.llm.generate` (conversation.ts),
 * JIT nodes are run by the core (`core.component.invoke`), tool nodes are MCP
 * calls; everything goes through the execution's token, so the core's
 * capability checks and its critical-tool gate hold for every step.
 */
import { loadedRunOf } from '../../../contract/workflow/loaded-run.js';
import { toRunError, type RunView } from '../../../contract/workflow/run-view.js';
import type { WorkflowDefinition } from '../../../contract/workflow/workflow-schema.js';
import { ExecuteBadRequestError } from '../../../shared/runner-errors.js';
import { WorkflowInvalidError, WorkflowTimeoutError } from '../../../shared/workflow-errors.js';
import type { Executor } from '../../kit/executor.js';
import { errorResult, type ScriptResult } from '../../kit/script-result.js';
import { DefinitionFileError, DefinitionFiles } from '../definition-files.js';
import { mcpGenerate } from '../generate-client.js';
import { ModelTools } from '../model-tools.js';
import { OutputSchemas } from '../output-schemas.js';
import { PromptTemplates } from '../prompt-templates.js';
import { SkillIndex } from '../skill-index.js';
import { SYSTEM_CLOCK, type EngineClock } from './engine-clock.js';
import { LOAD_TOOL } from './engine-tools.js';
import type { ComponentView, LlmParts, NodeContext } from './nodes/node-context.js';
import { requirementsFailure } from './requirements.js';
import { RunCheckpoints } from './run-checkpoints.js';
import { RunDeadline } from './run-deadline.js';
import { asRunError } from './run-errors.js';
import { runLoop } from './run-loop.js';
import type { RunState } from './run-state.js';
import { TraceSteps } from './trace-steps.js';
import { WorkflowSource } from './workflow-source.js';

export interface WorkflowExecutorOptions {
  /** Waits between retries of a step (tests make it instant). @defaultValue setTimeout */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The run's deadline, step durations and trace times. @defaultValue performance.now and the system clock */
  readonly clock?: EngineClock;
}

export function createWorkflowExecutor(options: WorkflowExecutorOptions = {}): Executor {
  const files = new DefinitionFiles();
  const llm: LlmParts = { templates: new PromptTemplates(files), schemas: new OutputSchemas(files), modelTools: new ModelTools(), skills: new SkillIndex(files) };
  const source = new WorkflowSource(files);
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  const clock = options.clock ?? SYSTEM_CLOCK;

  return async (request, tools): Promise<ScriptResult> => {
    const info = request.context.workflowInfo;
    const revision = request.context.taskDetails?.revision;
    if (info?.runId === undefined || revision === undefined) {
      return errorResult(new ExecuteBadRequestError('context.workflowInfo.runId and taskDetails.revision are required to run a workflow'));
    }
    // The core sends the load answer along on a run's first execution; without one that holds, it is asked for.
    const carried = loadedRunOf(info.loaded, { runId: info.runId, workflowId: info.workflowId, revision });
    const loaded = carried ?? (await tools.call(LOAD_TOOL, {}));
    const run = loaded['run'] as RunView;
    const components = (loaded['components'] ?? {}) as Record<string, ComponentView>;
    const appId = request.context.appId;
    // A carried answer was parsed from this request alone: its state is the engine's to change, with no copy.
    const state = (carried !== undefined ? run.state : structuredClone(run.state)) as RunState;
    const deadline = new RunDeadline(run.remainingMs, clock, () => new WorkflowTimeoutError(`the run ran past its time (request ${request.requestId})`, { runId: run.id }));
    const checkpoints = new RunCheckpoints(tools, state);

    let workflow: WorkflowDefinition;
    try {
      const read = await source.read(appId, run.revision, String(loaded['workflowFile']), components, tools);
      if (!read.ok) throw new WorkflowInvalidError(`workflows/${run.workflowId}.yaml is invalid: ${read.problems[0]!.path}: ${read.problems[0]!.reason}`, { problems: read.problems });
      workflow = read.workflow;
    } catch (error) {
      if (error instanceof DefinitionFileError) return checkpoints.fail(toRunError(new WorkflowInvalidError(`workflows/${run.workflowId}.yaml cannot be read: ${error.message}`)));
      return checkpoints.fail(asRunError(error));
    }
    const stateSchema = source.stateSchema(appId, run.revision, run.workflowId, workflow);

    if (run.fresh) {
      const failed = requirementsFailure(workflow.requirements, state.blackboard);
      if (failed !== undefined) return checkpoints.fail(toRunError(failed));
    }

    const context: NodeContext = {
      request,
      workflowId: run.workflowId,
      workflow,
      components,
      state,
      approvals: run.approvals,
      tools,
      scope: { appId, revision: run.revision, tools },
      generate: mcpGenerate(tools),
      llm,
      checkpoints,
    };
    const trace = new TraceSteps(run.workflowId, run.nextStep, state, clock);
    return runLoop({ context, stateSchema, checkpoints, trace, deadline, clock, sleep });
  };
}
