/**
 * The run's trace: one SimulationStep (seed 004 §8) per node that completed or
 * failed, numbered on from the run's last step, with the blackboard after it.
 * Each value is bounded here as the core bounds what it keeps, so a checkpoint
 * carries no more of a step than the run's record will.
 */
import { bounded, type RunError, type SimulationStep } from '../../../contract/workflow/run-view.js';
import type { WorkflowNode } from '../../../contract/workflow/workflow-schema.js';
import type { EngineClock } from './engine-clock.js';
import { snapshotOf, type RunState } from './run-state.js';

/** Longest thought a step keeps. */
const MAX_THOUGHT_CHARS = 8192;

/** What a node did, as its step tells it. */
export interface StepRecord {
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly output?: unknown;
  readonly error?: RunError;
  readonly durationMs: number;
}

export class TraceSteps {
  private nextIndex: number;

  constructor(
    private readonly workflowId: string,
    /** The index the run's next step gets (`core.workflow.load`'s nextStep). */
    firstIndex: number,
    private readonly state: RunState,
    private readonly clock: EngineClock,
  ) {
    this.nextIndex = firstIndex;
  }

  step(id: string, node: WorkflowNode, what: StepRecord): SimulationStep {
    return {
      index: this.nextIndex++,
      at: this.clock.date().toISOString(),
      workflowId: this.workflowId,
      stepId: id,
      node: id,
      type: node.type,
      status: what.error !== undefined ? 'failed' : 'completed',
      thought: what.thought.slice(0, MAX_THOUGHT_CHARS),
      action: what.action,
      observation: bounded(what.observation),
      snapshot: snapshotOf(this.state.blackboard),
      ...(what.output !== undefined ? { output: bounded(what.output) } : {}),
      ...(what.error !== undefined ? { error: what.error } : {}),
      durationMs: Math.round(what.durationMs * 1000) / 1000,
    };
  }
}
