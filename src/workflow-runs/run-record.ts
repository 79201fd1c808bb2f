/**
 * A workflow run as the core keeps it in the runtime store, and the parts of
 * it the llm-orchestrator sees and sends back. The core owns the record: it
 * creates it, pins it to the revision the run started at, applies the
 * orchestrator's checkpoints (after every node) only from the execution that
 * owns the run, records approvals and the tools they grant, and serves it at
 * `/_uhlp/runs/<id>`.
 *
 * Ids are `RUN-<timestamp>-<random>` with the session ids' 100 random bits: a
 * run id is a credential (it reads the run and its trace, and resumes it).
 */
import { newSessionId } from '../state/session-id.js';
import type { WorkflowMetadata } from '../contract/workflow/workflow-schema.js';
import type { RunCancellation, RunChild, RunParent } from '../contract/workflow/run-summary.js';
import type { StepCheckpoint } from './step-checkpoints.js';
import type { FlowSlot } from '../turns/flow-control.js';
import { bounded, type Approval, type EngineState, type RunError, type RunStatus, type SimulationStep } from '../contract/workflow/run-view.js';


export const RUN_ID_PATTERN = /^RUN-\d{8}T\d{9}Z-[0-9A-HJKMNP-TV-Z]{20}$/;

export function newRunId(): string {
  return `RUN-${newSessionId().slice('SES-'.length)}`;
}

export function isRunId(value: string): boolean {
  return RUN_ID_PATTERN.test(value);
}

export interface RunRecord {
  readonly id: string;
  readonly appId: string;
  readonly componentId: string;
  readonly workflowId: string;
  /** The revision the run is pinned to: every file it reads, and its capabilities, are of this revision. */
  readonly revision: string;
  status: RunStatus;
  readonly createdAt: string;
  updatedAt: string;
  /** What the workflow asked for, and what this core's runtime state gives it. */
  readonly persistence: { readonly requested: 'memory' | 'redis'; readonly actual: 'memory' | 'redis' };
  /** The stored session the run's turns belong to; null for the app's ambient session. */
  readonly sessionId: string | null;
  readonly metadata?: WorkflowMetadata;
  /** The request interceptors' output: what the run was started with. */
  readonly input: unknown;
  state: EngineState;
  approvals: Record<string, Approval>;
  /** The workflow's on_cancel node at the run's revision: where a cancelled run goes on. @defaultValue none */
  readonly onCancel?: string;
  /** Critical tools the run may call: its policy's, and those its approvals granted. */
  allowedTools: string[];
  paused?: { readonly node: string; readonly prompt: string; readonly since: string };
  /** Running time: the budget, what was spent before the current leg, and when the current leg started. */
  timing: { readonly timeoutMs: number; spentMs: number; runningSince?: number };
  /**
   * A cancellation asked for: who and when, the workflow's on_cancel node (null
   * when it declares none), and whether the leg that runs it has started. A
   * running run keeps running until its driver has cut the step in flight.
   */
  cancellation?: RunCancellation & { readonly onCancel: string | null; leg: boolean };
  /** The execution (request id) that may checkpoint the run now. */
  owner?: string;
  /** Executions the run has taken (a resume after a sandbox death or an approval is one more). */
  attempts: number;
  result?: unknown;
  error?: RunError;
  steps: SimulationStep[];
  /** Steps dropped from the front of `steps` to keep the record bounded. */
  droppedSteps: number;
  /** The engine state before a step, by the step's index, for a replay or a fork from it (step-checkpoints.ts). */
  checkpoints?: Record<string, StepCheckpoint>;
  /**
   * The concurrency slots of the turn that started the run (flow-control.ts),
   * taken again before the run goes on after a pause, a restart or as a replay. @defaultValue none
   */
  readonly flowSlots?: readonly FlowSlot[];
  /** The run this one was replayed or forked from. */
  readonly parent?: RunParent;
  /** Runs replayed or forked from this one, the last MAX_CHILDREN (run-replays.ts). */
  children?: RunChild[];
}

/** Trace steps kept per run; older ones are dropped (counted in droppedSteps). */
export const MAX_TRACE_STEPS = 500;
/** Appends steps, keeping the last MAX_TRACE_STEPS and bounding each one's values. */
export function appendSteps(record: RunRecord, steps: readonly SimulationStep[]): void {
  for (const step of steps) {
    record.steps.push({ ...step, snapshot: bounded(step.snapshot), observation: bounded(step.observation), ...(step.output !== undefined ? { output: bounded(step.output) } : {}) });
  }
  const excess = record.steps.length - MAX_TRACE_STEPS;
  if (excess > 0) {
    record.steps.splice(0, excess);
    record.droppedSteps += excess;
  }
}

/** The trace of a run (seed 004 §8), with its provenance. */
export interface SimulationTrace {
  readonly runId: string;
  readonly appId: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly status: RunStatus;
  readonly metadata: WorkflowMetadata | null;
  readonly droppedSteps: number;
  readonly steps: readonly SimulationStep[];
  /** The run this one was replayed or forked from; its first steps are that run's (`takenFrom`). */
  readonly parent?: RunParent;
}

export function traceOf(record: RunRecord): SimulationTrace {
  return {
    runId: record.id,
    appId: record.appId,
    workflowId: record.workflowId,
    revision: record.revision,
    status: record.status,
    metadata: record.metadata ?? null,
    droppedSteps: record.droppedSteps,
    steps: record.steps,
    ...(record.parent !== undefined ? { parent: record.parent } : {}),
  };
}
