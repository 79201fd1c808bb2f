/**
 * The run loop: waves of nodes from the frontier (frontier.ts) until the run
 * ends, pauses or fails. Each node runs within the run's time (run-deadline.ts)
 * under the retry policy (node-retries.ts); after a wave its steps go to the
 * trace and its successors to the frontier, the blackboard is checked against
 * the workflow's state schema, and the wave's checkpoint is kept for the next
 * call to the core (run-checkpoints.ts) or sent as the run's last one.
 */
import { toRunError, type RunError, type SimulationStep } from '../../../contract/workflow/run-view.js';
import type { StreamPacket } from '../../../contract/workflow/stream-packets.js';
import { WorkflowInvalidError, WorkflowStateInvalidError } from '../../../shared/workflow-errors.js';
import { UhlpError } from '../../../shared/errors.js';
import { errorResult, type ScriptResult } from '../../kit/script-result.js';
import type { EngineClock } from './engine-clock.js';
import { advance, nextWave } from './frontier.js';
import { runWithRetries } from './node-retries.js';
import type { NodeContext, NodeOutcome } from './nodes/node-context.js';
import type { RunCheckpoints } from './run-checkpoints.js';
import type { RunDeadline } from './run-deadline.js';
import { asRunError } from './run-errors.js';
import type { TraceSteps } from './trace-steps.js';
import type { StateSchema } from './workflow-source.js';

/** State-schema errors a run's error lists at most. */
const MAX_SCHEMA_ERRORS = 10;

export interface RunLoopParts {
  /** The nodes' context; its state is the run's, changed in place. */
  readonly context: NodeContext;
  readonly stateSchema: StateSchema | undefined;
  readonly checkpoints: RunCheckpoints;
  readonly trace: TraceSteps;
  readonly deadline: RunDeadline;
  readonly clock: EngineClock;
  /** Waits between retries of a step. */
  readonly sleep: (ms: number) => Promise<void>;
}

type NodeResult = { readonly id: string; readonly durationMs: number } & ({ readonly outcome: NodeOutcome; readonly error?: undefined } | { readonly error: RunError });

/** Runs the run from its position to its end, pause or failure, and answers what the execution answers. */
export async function runLoop(parts: RunLoopParts): Promise<ScriptResult> {
  const { context, checkpoints, trace, clock } = parts;
  const { workflow, state } = context;
  while (state.position.frontier.length > 0) {
    const wave = nextWave(workflow, state.position.frontier);
    await checkpoints.beforeWave(wave.map((id) => workflow.nodes[id]!));
    const results = await Promise.all(
      wave.map(async (id): Promise<NodeResult> => {
        const started = clock.now();
        try {
          const outcome = await parts.deadline.within(() => runWithRetries(id, context, parts.sleep));
          return { id, outcome, durationMs: clock.now() - started };
        } catch (error) {
          return { id, error: asRunError(error), durationMs: clock.now() - started };
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
        steps.push(trace.step(result.id, node, { thought: `${node.type} node failed`, action: { type: node.type }, observation: null, error: result.error, durationMs: result.durationMs }));
        continue;
      }
      const outcome = result.outcome;
      if (outcome.emit !== undefined) emit.push(...outcome.emit);
      if (outcome.pause !== undefined) {
        // Still due: it runs again, and finds its decision, when the run is resumed.
        pause ??= { node: result.id, prompt: outcome.pause.prompt };
        frontier.push(result.id);
        continue;
      }
      state.nodesRun++;
      steps.push(trace.step(result.id, node, { ...outcome, durationMs: result.durationMs }));
      if (outcome.end !== undefined) end ??= outcome.end;
      for (const target of outcome.next) advance(workflow, state, frontier, result.id, target);
    }
    state.position = { frontier: [...new Set(frontier)], arrived: state.position.arrived };

    const validate = parts.stateSchema?.validate;
    if (failure === undefined && validate !== undefined && !validate(state.blackboard)) {
      const errors = (validate.errors ?? []).slice(0, MAX_SCHEMA_ERRORS).map((e) => `${e.instancePath || '/'} ${e.message ?? ''}`);
      failure = toRunError(new WorkflowStateInvalidError('the blackboard breaks the workflow state.schema', { errors }));
    }
    // A step the runtime store refused (it is failing over) is not the run's failure: the execution ends with the
    // refusal and no checkpoint, and the core goes on from the last one once the store answers (run-driver.ts).
    if (failure?.code === 'UHLP_STATE_UNAVAILABLE') return errorResult(new UhlpError(failure.code, failure.message));
    if (failure !== undefined) return checkpoints.fail(failure, steps, emit);
    if (end !== undefined) {
      await checkpoints.checkpoint(steps, emit, { status: 'completed', result: end.result });
      return { resultType: 'generic', data: end.result ?? null };
    }
    if (pause !== undefined) {
      await checkpoints.checkpoint(steps, emit, { status: 'paused', paused: pause });
      return { resultType: 'generic', data: { status: 'paused', node: pause.node } };
    }
    checkpoints.defer(steps, emit);
  }
  return checkpoints.fail(toRunError(new WorkflowInvalidError('the run has no node left to run and reached no end node')));
}
