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
import type { WorkflowMetadata } from './workflow-schema.js';

export type RunStatus = 'running' | 'paused' | 'completed' | 'failed' | 'timed_out';
export const RUN_STATUSES: readonly RunStatus[] = ['running', 'paused', 'completed', 'failed', 'timed_out'];

export const RUN_ID_PATTERN = /^RUN-\d{8}T\d{9}Z-[0-9A-HJKMNP-TV-Z]{20}$/;

export function newRunId(): string {
  return `RUN-${newSessionId().slice('SES-'.length)}`;
}

export function isRunId(value: string): boolean {
  return RUN_ID_PATTERN.test(value);
}

/** Where a run is: the nodes due to run (branches in parallel mode), and what each join has seen arrive. */
export interface RunPosition {
  readonly frontier: readonly string[];
  /** join node -> the nodes that have led to it so far. */
  readonly arrived: Readonly<Record<string, readonly string[]>>;
}

/** Everything the engine needs to go on from a checkpoint. */
export interface EngineState {
  readonly position: RunPosition;
  readonly blackboard: Record<string, unknown>;
  /** node -> failed attempts retried so far (policy max_retries). */
  readonly retries: Readonly<Record<string, number>>;
  /** evaluator node -> fails so far (its max_retries). */
  readonly loops: Readonly<Record<string, number>>;
  /** node -> the blackboard path of feedback to append to its prompt when it next runs. */
  readonly feedback: Readonly<Record<string, string>>;
  /** Nodes completed over the whole run. */
  readonly nodesRun: number;
}

/**
 * One state transition (seed 004 §8): what the engine thought, did and saw,
 * and the blackboard after it. It is also a `workflowStep` result of the
 * /execute contract (`workflowId`, `stepId`, `status`, `output`, `error`).
 */
export interface SimulationStep {
  readonly index: number;
  readonly at: string;
  readonly workflowId: string;
  readonly stepId: string;
  readonly node: string;
  readonly type: string;
  readonly status: 'completed' | 'failed';
  readonly thought: string;
  readonly action: Record<string, unknown>;
  readonly observation: unknown;
  readonly snapshot: unknown;
  readonly output?: unknown;
  readonly error?: RunError;
  readonly durationMs: number;
}

export interface RunError {
  readonly code: string;
  readonly message: string;
  readonly status: number;
  readonly details?: unknown;
}

export interface Approval {
  readonly approved: boolean;
  readonly comment?: string;
  readonly by?: string;
  readonly at: string;
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
  /** Critical tools the run may call: its policy's, and those its approvals granted. */
  allowedTools: string[];
  paused?: { readonly node: string; readonly prompt: string; readonly since: string };
  /** Running time: the budget, what was spent before the current leg, and when the current leg started. */
  timing: { readonly timeoutMs: number; spentMs: number; runningSince?: number };
  /** The execution (request id) that may checkpoint the run now. */
  owner?: string;
  /** Executions the run has taken (a resume after a sandbox death or an approval is one more). */
  attempts: number;
  result?: unknown;
  error?: RunError;
  steps: SimulationStep[];
  /** Steps dropped from the front of `steps` to keep the record bounded. */
  droppedSteps: number;
}

/** What `core.workflow.load` answers the orchestrator. */
export interface RunView {
  readonly id: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly status: RunStatus;
  readonly state: EngineState;
  readonly approvals: Readonly<Record<string, Approval>>;
  /** Time left to run, ms; the orchestrator stops at it (and the core a little after). */
  readonly remainingMs: number;
  /** The index the next trace step gets. */
  readonly nextStep: number;
  /** True before the first node ran: the workflow's own requirements are checked. */
  readonly fresh: boolean;
}

/** Trace steps kept per run; older ones are dropped (counted in droppedSteps). */
export const MAX_TRACE_STEPS = 500;
/** Largest JSON of one step's snapshot or observation; a larger one is replaced by a note of its size. */
export const MAX_STEP_VALUE_BYTES = 16 * 1024;

/** `value`, or `{truncated: true, bytes}` when its JSON is over `limit`. */
export function bounded(value: unknown, limit: number = MAX_STEP_VALUE_BYTES): unknown {
  if (value === undefined) return null;
  const json = JSON.stringify(value);
  if (json === undefined) return null;
  const bytes = Buffer.byteLength(json);
  return bytes > limit ? { truncated: true, bytes, preview: json.slice(0, 512) } : value;
}

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
  };
}
