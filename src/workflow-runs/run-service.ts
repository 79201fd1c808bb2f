/**
 * The core's workflow runs: records in the runtime store (run-record.ts),
 * changed only by compare-and-set, so that two cores, or a core and a late
 * checkpoint of an execution that lost the run, never overwrite each other.
 *
 * - `create` makes a run pinned to its revision, running, with its input.
 * - `claim` gives the run to one execution (its request id): only that
 *   execution's checkpoints are applied, so a sandbox that was given up on
 *   cannot write after the run moved on.
 * - `checkpoint` applies what the orchestrator reports after every node:
 *   the engine state, the trace steps, and a status (paused, completed,
 *   failed, timed_out) with the result or error. The record stays under the
 *   size cap, or the run fails with UHLP_WORKFLOW_STATE_TOO_LARGE.
 * - `resume` records an approver's decision on a paused run and the tools it
 *   grants, and sets it running again.
 * - `finish` ends a run from the core's side (a timeout, a sandbox that kept
 *   dying, an interrupted run).
 * - `requestCancel` records who cancels a run; a paused run ends `cancelled` at
 *   once (or goes on at its on_cancel node), a running one once its driver has
 *   cut the step in flight (`startCancelLeg`, `cancelled`). From then on only
 *   the on_cancel leg's checkpoints are applied.
 * - `checkpoint` also keeps the state before each checkpoint's first step, for
 *   a replay or a fork from it (step-checkpoints.ts); `create` with an `origin`
 *   makes such a run, and `addChild` lists it on its parent (run-replays.ts).
 *
 * A run this core creates or changes is changed again at once (its claim, its
 * next checkpoint), so the record it last wrote is kept (parsed, with its version) and the next change
 * starts from it instead of a read and a parse: the store's compare-and-set
 * still refuses it if anyone wrote in between, and the change is then made
 * again from a fresh read. Nothing is decided on a kept record alone: a change
 * it refuses is tried again on a fresh read before it is refused.
 */
import { InternalError } from '../shared/errors.js';
import {
  WorkflowCancelledError,
  WorkflowRunConflictError,
  WorkflowRunEndedError,
  WorkflowRunNotFoundError,
  WorkflowRunNotPausedError,
  WorkflowStateTooLargeError,
} from '../shared/workflow-errors.js';
import { FINAL_RUN_STATUSES, type RunCancellation, type RunChild, type RunParent } from '../contract/workflow/run-summary.js';
import type { RunStore, StoredRun } from '../state/run-store.js';
import { appendSteps, type RunRecord } from './run-record.js';
import { summaryOf, type RunIndex } from './run-index.js';
import { keepCheckpoint, pruneCheckpoints, shedCheckpoints, type StepCheckpoint } from './step-checkpoints.js';
import { toRunError, type Approval, type EngineState, type RunError, type RunStatus, type RunView, type SimulationStep } from '../contract/workflow/run-view.js';
import type { WorkflowMetadata } from '../contract/workflow/workflow-schema.js';
import type { FlowSlot } from '../turns/flow-control.js';

export interface RunServiceOptions {
  readonly store: RunStore;
  /** How long a run record is kept after its last change, ms. */
  readonly ttlMs: number;
  /** Largest JSON of a run record, bytes. */
  readonly maxBytes: number;
  /** Clock, epoch ms. @defaultValue Date.now */
  readonly now?: () => number;
  /** Where each run's summary goes after every change, for the console's list. @defaultValue none */
  readonly index?: RunIndex;
}

export interface NewRun {
  readonly id: string;
  readonly appId: string;
  readonly componentId: string;
  readonly workflowId: string;
  readonly revision: string;
  readonly persistence: RunRecord['persistence'];
  readonly sessionId: string | null;
  readonly metadata?: WorkflowMetadata;
  readonly input: unknown;
  readonly blackboard: Record<string, unknown>;
  readonly start: string;
  readonly timeoutMs: number;
  readonly allowedTools: readonly string[];
  /** The workflow's on_cancel node, kept on the run so that any core that cancels it knows it. @defaultValue none */
  readonly onCancel?: string;
  /** The concurrency slots of the turn that starts the run, taken again when it resumes. @defaultValue none */
  readonly flowSlots?: readonly FlowSlot[];
  /** A replay or fork (run-replays.ts): where the run starts instead of `start` and `blackboard`, with the parent's steps before it. @defaultValue none */
  readonly origin?: RunOrigin;
}

/** What a replayed or forked run starts from: its parent's checkpoint before a step, and the parent's steps before that one. */
export interface RunOrigin {
  readonly parent: RunParent;
  readonly state: EngineState;
  readonly steps: readonly SimulationStep[];
  readonly droppedSteps: number;
  readonly approvals: Record<string, Approval>;
  readonly checkpoints: Record<string, StepCheckpoint>;
}

/** Children a run lists at most; the oldest go first past it. */
export const MAX_CHILDREN = 100;

/** What a checkpoint of the orchestrator carries (core.workflow.checkpoint). */
export interface Checkpoint {
  /** The engine state after the node; left out, the run keeps the state of its last checkpoint (the state is what was too large). */
  readonly state?: EngineState;
  readonly steps: readonly SimulationStep[];
  readonly status?: Exclude<RunStatus, 'running'> | 'running';
  readonly result?: unknown;
  readonly error?: RunError;
  readonly paused?: { readonly node: string; readonly prompt: string };
}

/** A record read with the version it has. */
interface Versioned {
  readonly record: RunRecord;
  readonly version: number;
}

/** Compare-and-set attempts before a change gives up (another writer kept winning). */
const MAX_CAS_ATTEMPTS = 8;
/** Records kept from this core's last writes (see above); the oldest goes first past it. */
const MAX_KEPT_RECORDS = 256;
/** Statuses after which a run never changes again. */
const FINAL: ReadonlySet<RunStatus> = new Set(FINAL_RUN_STATUSES);

/** Whether a run has ended (it never changes again). */
export function runEnded(record: Pick<RunRecord, 'status'>): boolean {
  return FINAL.has(record.status);
}

/** The error a cancelled run keeps, and answers the request that started it. */
export function cancelledError(record: Pick<RunRecord, 'id' | 'cancellation'>): RunError {
  const by = record.cancellation?.by ?? 'unknown';
  return toRunError(new WorkflowCancelledError(`run ${record.id} was cancelled by ${by}`, { runId: record.id, by, at: record.cancellation?.at ?? null, via: record.cancellation?.via ?? null }));
}

export class RunService {
  private readonly now: () => number;
  /** The record this core last wrote of each run it is changing, with the version it has in the store; final runs are not kept. */
  private readonly kept = new Map<string, Versioned>();

  constructor(private readonly options: RunServiceOptions) {
    this.now = options.now ?? Date.now;
  }

  get store(): RunStore {
    return this.options.store;
  }

  /** Creates the run; the record answered is kept for its next change, as `change` keeps its (callers read it at once and hold on to none). */
  async create(run: NewRun): Promise<RunRecord> {
    const at = new Date(this.now()).toISOString();
    const record: RunRecord = {
      id: run.id,
      appId: run.appId,
      componentId: run.componentId,
      workflowId: run.workflowId,
      revision: run.revision,
      status: 'running',
      createdAt: at,
      updatedAt: at,
      persistence: run.persistence,
      sessionId: run.sessionId,
      ...(run.metadata !== undefined ? { metadata: run.metadata } : {}),
      input: run.input,
      state: { position: { frontier: [run.start], arrived: {} }, blackboard: run.blackboard, retries: {}, loops: {}, feedback: {}, nodesRun: 0 },
      approvals: {},
      allowedTools: [...run.allowedTools],
      ...(run.onCancel !== undefined ? { onCancel: run.onCancel } : {}),
      ...(run.flowSlots !== undefined && run.flowSlots.length > 0 ? { flowSlots: run.flowSlots } : {}),
      timing: { timeoutMs: run.timeoutMs, spentMs: 0 },
      attempts: 0,
      steps: [],
      droppedSteps: 0,
    };
    if (run.origin !== undefined) {
      const { parent, state, steps, droppedSteps, approvals, checkpoints } = run.origin;
      Object.assign(record, { parent, state, steps: [...steps], droppedSteps, approvals: { ...approvals }, checkpoints: { ...checkpoints } });
    }
    const json = this.serialize(record);
    if (json === undefined) throw new WorkflowStateTooLargeError(`the run's input is over the run size cap of ${this.options.maxBytes} bytes`, { maxBytes: this.options.maxBytes });
    if (!(await this.options.store.createRun(run.id, json, this.options.ttlMs, true))) {
      throw new WorkflowRunConflictError(`run ${run.id} exists already`);
    }
    this.options.index?.put(summaryOf(record));
    // The run's claim comes next: it starts from what was just written (a store creates a record at version 1).
    this.keep(run.id, record, 1);
    return record;
  }

  /** The run; UHLP_WORKFLOW_RUN_NOT_FOUND when there is none. */
  async get(id: string): Promise<RunRecord> {
    return (await this.read(id)).record;
  }

  /** The run, or undefined. */
  async find(id: string): Promise<RunRecord | undefined> {
    const stored = await this.options.store.getRun(id);
    return stored === undefined ? undefined : parse(stored).record;
  }

  /** Gives a running run to the execution `owner`, starting a leg of running time. */
  claim(id: string, owner: string): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (record.status !== 'running') throw new WorkflowRunConflictError(`run ${id} is ${record.status}, not running`, { status: record.status });
      record.owner = owner;
      record.attempts += 1;
      record.timing.runningSince ??= this.now();
    });
  }

  /** What the owner of a run loads (core.workflow.load). */
  async view(id: string, owner: string): Promise<RunView> {
    const record = await this.get(id);
    if (record.owner !== owner || record.status !== 'running') {
      throw new WorkflowRunConflictError(`run ${id} is ${record.status === 'running' ? 'owned by another execution' : record.status}`, { status: record.status });
    }
    return this.viewOf(record);
  }

  /** The view of a running run that its owner loads; `record` is one just read or claimed, and the view shares its state. */
  viewOf(record: RunRecord): RunView {
    return {
      id: record.id,
      workflowId: record.workflowId,
      revision: record.revision,
      status: record.status,
      state: record.state,
      approvals: record.approvals,
      remainingMs: this.remainingMs(record),
      nextStep: record.droppedSteps + record.steps.length,
      fresh: record.state.nodesRun === 0 && record.steps.length === 0,
    };
  }

  /** Applies a checkpoint of the run's owner. */
  checkpoint(id: string, owner: string, checkpoint: Checkpoint): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (record.owner !== owner) throw new WorkflowRunConflictError(`run ${id} is owned by another execution now`);
      if (record.status !== 'running') throw new WorkflowRunConflictError(`run ${id} is ${record.status}`, { status: record.status });
      // A run being cancelled takes nothing more from the step being cut; only its on_cancel leg goes on.
      if (record.cancellation !== undefined && !record.cancellation.leg) throw new WorkflowRunConflictError(`run ${id} is being cancelled`, { status: 'cancelled' });
      keepCheckpoint(record, checkpoint.steps);
      if (checkpoint.state !== undefined) record.state = checkpoint.state;
      appendSteps(record, checkpoint.steps);
      pruneCheckpoints(record);
      const status = checkpoint.status ?? 'running';
      if (status === 'running') return;
      if (record.cancellation === undefined) return this.settle(record, status, checkpoint);
      // The on_cancel leg ended (or paused, which a cancelled run does not wait at): the run is cancelled, keeping what the leg answered.
      if (status === 'completed') record.result = checkpoint.result ?? null;
      this.settle(record, 'cancelled', { error: cancelledError(record) });
    });
  }

  /** Records an approver's decision on a paused run; `grants` are the tools the approval node grants. */
  resume(id: string, decision: Omit<Approval, 'at'>, grants: readonly string[]): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (record.status !== 'paused' || record.paused === undefined) {
        throw new WorkflowRunNotPausedError(`run ${id} is ${record.status}; only a paused run is resumed`, { status: record.status });
      }
      const node = record.paused.node;
      record.approvals[node] = { ...decision, at: new Date(this.now()).toISOString() };
      if (decision.approved) for (const tool of grants) if (!record.allowedTools.includes(tool)) record.allowedTools.push(tool);
      delete record.paused;
      record.status = 'running';
      delete record.owner;
    });
  }

  /** Ends a run from the core's side; a run that ended already stays as it is. */
  finish(id: string, status: 'failed' | 'timed_out', error: RunError): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (FINAL.has(record.status)) return false;
      this.settle(record, status, { error });
      return true;
    });
  }

  /**
   * Records a cancellation (who, when, through what). A paused run is cancelled
   * at once, or set running at its on_cancel node (the record's `onCancel`) for its driver
   * to run; a running run stays running, marked, until its driver has cut the
   * step in flight. A run that has ended: UHLP_WORKFLOW_RUN_ENDED. A run being
   * cancelled already keeps its first cancellation.
   */
  requestCancel(id: string, cancellation: RunCancellation): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (FINAL.has(record.status)) {
        throw new WorkflowRunEndedError(`run ${id} has ended (${record.status}); there is nothing to cancel`, {
          runId: id,
          status: record.status,
          ...(record.cancellation !== undefined ? { cancelledBy: record.cancellation.by, cancelledAt: record.cancellation.at } : {}),
        });
      }
      if (record.cancellation !== undefined) return false;
      const onCancel = record.onCancel ?? null;
      record.cancellation = { by: cancellation.by, at: cancellation.at, via: cancellation.via, onCancel, leg: false };
      if (record.status !== 'paused') return true;
      delete record.paused;
      if (onCancel === null) {
        this.settle(record, 'cancelled', { error: cancelledError(record) });
        return true;
      }
      this.toCancelLeg(record);
      return true;
    });
  }

  /** Sets a run whose step was cut going on at its on_cancel node (for a new execution to run); false when there is none to run. */
  async startCancelLeg(id: string): Promise<boolean> {
    let started = false;
    await this.change(id, (record) => {
      started = false;
      const cancellation = record.cancellation;
      if (FINAL.has(record.status) || cancellation === undefined || cancellation.leg || cancellation.onCancel === null) return false;
      this.toCancelLeg(record);
      started = true;
      return true;
    });
    return started;
  }

  /** Ends a run being cancelled `cancelled` (its step cut, its on_cancel leg run or failed); a run that ended stays as it is. */
  cancelled(id: string): Promise<RunRecord> {
    return this.change(id, (record) => {
      if (FINAL.has(record.status) || record.cancellation === undefined) return false;
      this.settle(record, 'cancelled', { error: cancelledError(record) });
      return true;
    });
  }

  /** Lists a run replayed or forked from this one (the run's family); whatever the run's status. */
  addChild(id: string, child: RunChild): Promise<RunRecord> {
    return this.change(id, (record) => {
      const children = (record.children ??= []);
      children.push(child);
      if (children.length > MAX_CHILDREN) children.splice(0, children.length - MAX_CHILDREN);
    });
  }

  private toCancelLeg(record: RunRecord): void {
    record.cancellation!.leg = true;
    record.status = 'running';
    record.state = { ...record.state, position: { frontier: [record.cancellation!.onCancel!], arrived: {} } };
    delete record.owner;
  }

  /** Running time left of the current leg, ms (0 when spent). */
  remainingMs(record: RunRecord): number {
    const running = record.timing.runningSince !== undefined ? this.now() - record.timing.runningSince : 0;
    return Math.max(0, record.timing.timeoutMs - record.timing.spentMs - running);
  }

  private settle(record: RunRecord, status: Exclude<RunStatus, 'running'>, outcome: Pick<Checkpoint, 'result' | 'error' | 'paused'>): void {
    record.status = status;
    if (record.timing.runningSince !== undefined) {
      record.timing.spentMs += this.now() - record.timing.runningSince;
      delete record.timing.runningSince;
    }
    delete record.owner;
    if (status === 'paused') {
      const paused = outcome.paused ?? { node: record.state.position.frontier[0] ?? '', prompt: '' };
      record.paused = { node: paused.node, prompt: paused.prompt, since: new Date(this.now()).toISOString() };
    } else if (status === 'completed') record.result = outcome.result ?? null;
    else record.error = outcome.error ?? toRunError(new InternalError('the run failed'));
  }

  /**
   * Reads, changes and writes back a run until the write wins. `mutate` may
   * throw (nothing is written) or answer false (nothing to change). The record
   * answered is the one kept for the run's next change: callers read it at
   * once and hold on to none.
   */
  private async change(id: string, mutate: (record: RunRecord) => void | boolean): Promise<RunRecord> {
    // Taken out while it is changed: a change that fails leaves nothing kept.
    const kept = this.kept.get(id);
    this.kept.delete(id);
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const fromKept = attempt === 0 && kept !== undefined;
      const { record, version } = fromKept ? kept : await this.read(id);
      let outcome: void | boolean;
      try {
        outcome = mutate(record);
      } catch (error) {
        if (fromKept) continue;
        throw error;
      }
      if (outcome === false) {
        if (fromKept) continue;
        return record;
      }
      record.updatedAt = new Date(this.now()).toISOString();
      let json = this.serialize(record);
      if (json === undefined) {
        // Over the cap: the run fails, keeping what it was started with and why it ended.
        const failed = (await this.read(id)).record;
        this.settle(failed, 'failed', {
          error: toRunError(new WorkflowStateTooLargeError(`the run record would be over ${this.options.maxBytes} bytes`, { maxBytes: this.options.maxBytes })),
        });
        json = JSON.stringify(failed);
        if (await this.options.store.updateRun(id, version, json, this.options.ttlMs, false)) {
          this.options.index?.put(summaryOf(failed));
          throw new WorkflowStateTooLargeError(`the run record would be over ${this.options.maxBytes} bytes; the run failed`, { maxBytes: this.options.maxBytes });
        }
        continue;
      }
      if (await this.options.store.updateRun(id, version, json, this.options.ttlMs, record.status === 'running')) {
        this.options.index?.put(summaryOf(record));
        this.keep(id, record, version + 1);
        return record;
      }
    }
    throw new WorkflowRunConflictError(`run ${id} kept changing; the change was not applied`);
  }

  /** Keeps what was just written for the run's next change; a run that ended changes no more. */
  private keep(id: string, record: RunRecord, version: number): void {
    if (FINAL.has(record.status)) return;
    if (this.kept.size >= MAX_KEPT_RECORDS) this.kept.delete(this.kept.keys().next().value!);
    this.kept.set(id, { record, version });
  }

  private async read(id: string): Promise<Versioned> {
    const stored = await this.options.store.getRun(id);
    if (stored === undefined) throw new WorkflowRunNotFoundError(`no run ${id.slice(0, 80)} (or it has expired)`, { runId: id.slice(0, 80) });
    return parse(stored);
  }

  /**
   * The record's JSON, or undefined when it is over the cap. Its trace steps
   * never change once appended, and a run's record is written after every
   * node: each step is serialized once (stepJson) and its JSON reused by every
   * later write, so a write costs the new steps, not the whole trace again.
   */
  private serialize(record: RunRecord): string | undefined {
    const json = this.serializeWhole(record);
    // Over the cap, the checkpoints kept for replays go before the run fails for its size.
    if (json === undefined && shedCheckpoints(record)) return this.serializeWhole(record);
    return json;
  }

  private serializeWhole(record: RunRecord): string | undefined {
    const { steps, droppedSteps, ...rest } = record;
    const head = JSON.stringify(rest);
    const json = `${head.slice(0, -1)},"steps":[${steps.map(stepJson).join(',')}],"droppedSteps":${JSON.stringify(droppedSteps)}}`;
    return Buffer.byteLength(json) > this.options.maxBytes ? undefined : json;
  }
}

/** Each step's JSON, kept while the step is (steps are not changed after appendSteps made them). */
const stepJsons = new WeakMap<SimulationStep, string>();

function stepJson(step: SimulationStep): string {
  let json = stepJsons.get(step);
  if (json === undefined) {
    json = JSON.stringify(step);
    stepJsons.set(step, json);
  }
  return json;
}

function parse(stored: StoredRun): Versioned {
  return { record: JSON.parse(stored.json) as RunRecord, version: stored.version };
}
