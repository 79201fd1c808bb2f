/**
 * Replaying and forking a run from a step (docs/workflows.md "Replay and
 * fork"). Both leave the run they start from as it is and make a new run:
 *
 * - its state is the parent's checkpoint before step N (step-checkpoints.ts):
 *   position, blackboard, retries, loops, feedback and nodes run as they were
 *   when step N was about to run;
 * - its trace starts with the parent's steps before N, copied and marked
 *   `takenFrom` (they are not run again: no model, tool or JIT call is made for
 *   them), and goes on with step N, run again;
 * - a fork edits the blackboard first: `set`, a JSON merge patch (RFC 7396),
 *   or `blackboard`, a whole one; the result must satisfy the workflow's
 *   `state.schema`, or no run is made (UHLP_WORKFLOW_FORK_STATE_INVALID);
 * - it runs on the parent's pinned revision, or on the app's current one when
 *   asked (`currentRevision`);
 * - it records its parent (`parent: {runId, step, kind, by, at}`) and the
 *   parent lists it among its children: the run's family.
 *
 * The new run keeps the parent's input, session, persistence and time budget
 * (its own clock starts at zero), the approvals of approval nodes among the
 * steps it takes, and the tools those approvals granted on top of the
 * workflow's policy; it is driven from here, as a run the core resumes is, and
 * the caller is answered at once with the new run.
 */
import { randomUUID } from 'node:crypto';
import { compileOutputSchema } from '../contract/output-schema.js';
import type { Approval, SimulationStep } from '../contract/workflow/run-view.js';
import type { RunParent } from '../contract/workflow/run-summary.js';
import type { Logger } from '../logger.js';
import { UhlpError } from '../shared/errors.js';
import {
  WorkflowCheckpointUnavailableError,
  WorkflowForkStateInvalidError,
  WorkflowInvalidError,
  WorkflowStepOutOfRangeError,
} from '../shared/workflow-errors.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import { applyMergePatch } from './json-merge-patch.js';
import { pinnedRun, runEvent } from './pinned-runs.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunDriver } from './run-driver.js';
import { newRunId, type RunRecord } from './run-record.js';
import type { RunService } from './run-service.js';
import { checkpointedSteps } from './step-checkpoints.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

/** A fork's edit of the blackboard: a JSON merge patch of it, or a whole one. */
export type BlackboardEdit = { readonly set: unknown } | { readonly blackboard: Record<string, unknown> };

export interface ReplayRequest {
  readonly kind: 'replay' | 'fork';
  /** The index of the first step run again. */
  readonly fromStep: number;
  /** Who asks (the console's principal, recorded on both runs and in the audit). */
  readonly by: string;
  /** Run on the app's current revision rather than the parent's pinned one. @defaultValue false */
  readonly currentRevision?: boolean;
  /** A fork's edit; a replay has none. */
  readonly edit?: BlackboardEdit;
}

export interface RunReplaysOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly driver: RunDriver;
  readonly pipeline: PipelineTurns;
  readonly logger: Logger;
}

/** State-schema errors a refused fork lists at most. */
const MAX_SCHEMA_ERRORS = 20;

export class RunReplays {
  constructor(private readonly options: RunReplaysOptions) {}

  /** Makes the replayed or forked run, starts driving it, and answers it as created. */
  async start(parentId: string, request: ReplayRequest): Promise<RunRecord> {
    const { runs, catalog } = this.options;
    const parent = await runs.get(parentId);
    const step = request.fromStep;
    const total = parent.droppedSteps + parent.steps.length;
    if (!Number.isSafeInteger(step) || step < parent.droppedSteps || step >= total) {
      throw new WorkflowStepOutOfRangeError(
        total === parent.droppedSteps
          ? `run ${parent.id} has no steps in its trace to start from`
          : `run ${parent.id} holds steps ${parent.droppedSteps} to ${total - 1} in its trace; step ${String(step).slice(0, 20)} is not one`,
        { runId: parent.id, step, first: parent.droppedSteps, last: total - 1 },
      );
    }
    const checkpoint = parent.checkpoints?.[String(step)];
    if (checkpoint === undefined || !('state' in checkpoint)) {
      const reason = checkpoint !== undefined ? 'cut' : 'not-kept';
      throw new WorkflowCheckpointUnavailableError(
        checkpoint !== undefined
          ? `the state before step ${step} of run ${parent.id} was ${checkpoint.bytes} bytes, over the 16 KiB kept per step`
          : `the state before step ${step} of run ${parent.id} was not kept on its own (the step rode in one checkpoint with the one before it, or was dropped)`,
        { runId: parent.id, step, reason, checkpointed: checkpointedSteps(parent).slice(-50) },
      );
    }

    const revision = request.currentRevision === true ? (catalog.currentRevision(parent.appId) ?? parent.revision) : parent.revision;
    const { app, component, workflow } = pinnedRun(catalog, { ...parent, revision });
    const state = checkpoint.state;
    for (const node of state.position.frontier) {
      if (workflow.nodes[node] === undefined) {
        throw new WorkflowInvalidError(`the workflow ${parent.workflowId} at ${revision.slice(0, 12)} has no node ${node}, where step ${step} starts`, { node, revision });
      }
    }
    const blackboard = request.kind === 'fork' && request.edit !== undefined ? this.edited(state.blackboard, request.edit, workflow.state.schema) : state.blackboard;

    // The approvals and grants of the approval nodes among the steps taken; later ones are decided again.
    const taken = parent.steps.slice(0, step - parent.droppedSteps);
    const approvals: Record<string, Approval> = {};
    const allowedTools = [...workflow.policy.allow_critical_tools];
    for (const node of new Set(taken.filter((item) => item.type === 'approval').map((item) => item.node))) {
      const approval = parent.approvals[node];
      if (approval === undefined) continue;
      approvals[node] = approval;
      const declared = workflow.nodes[node];
      if (approval.approved && declared?.type === 'approval') for (const tool of declared.grants) if (!allowedTools.includes(tool)) allowedTools.push(tool);
    }
    const at = new Date().toISOString();
    const origin: RunParent = { runId: parent.id, step, kind: request.kind, by: request.by, at };
    const id = newRunId();
    const child = await runs.create({
      id,
      appId: parent.appId,
      componentId: parent.componentId,
      workflowId: parent.workflowId,
      revision,
      persistence: parent.persistence,
      sessionId: parent.sessionId,
      ...(workflow.metadata !== undefined ? { metadata: workflow.metadata } : {}),
      input: parent.input,
      blackboard,
      start: workflow.start,
      timeoutMs: parent.timing.timeoutMs,
      allowedTools,
      ...(workflow.on_cancel !== undefined ? { onCancel: workflow.on_cancel } : {}),
      // The parent's keys: a replay waits at the gates its parent passed.
      ...(parent.flowSlots !== undefined ? { flowSlots: parent.flowSlots } : {}),
      origin: {
        parent: origin,
        state: { ...state, blackboard },
        steps: taken.map((item): SimulationStep => ({ ...item, takenFrom: item.takenFrom ?? { runId: parent.id, index: item.index } })),
        droppedSteps: parent.droppedSteps,
        approvals,
        checkpoints: Object.fromEntries(Object.entries(parent.checkpoints ?? {}).filter(([index]) => Number(index) < step)),
      },
    });
    await runs.addChild(parent.id, { runId: id, step, kind: request.kind, by: request.by, at });
    this.options.logger.info({ runId: id, parent: parent.id, step, kind: request.kind, by: request.by, revision }, `workflow run ${request.kind === 'fork' ? 'forked' : 'replayed'}`);
    this.drive(child, app, component);
    return child;
  }

  /** The fork's blackboard; UHLP_WORKFLOW_FORK_STATE_INVALID when it is no object or breaks the state schema. */
  private edited(blackboard: Record<string, unknown>, edit: BlackboardEdit, schema: unknown): Record<string, unknown> {
    const next = 'set' in edit ? applyMergePatch(blackboard, edit.set) : edit.blackboard;
    if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new WorkflowForkStateInvalidError('the forked blackboard must be a JSON object', { errors: ['/ must be object'] });
    }
    if (schema !== undefined) {
      const { validate, problem } = compileOutputSchema(schema);
      if (validate === undefined) throw new WorkflowInvalidError(`the workflow's state.schema does not compile: ${problem ?? 'unknown'}`);
      if (!validate(next)) {
        const errors = (validate.errors ?? []).slice(0, MAX_SCHEMA_ERRORS).map((error) => `${error.instancePath || '/'} ${error.message ?? 'is invalid'}`);
        throw new WorkflowForkStateInvalidError(`the forked blackboard breaks the workflow's state.schema: ${errors.join('; ')}`, { errors });
      }
    }
    return next as Record<string, unknown>;
  }

  /** Drives the new run as a turn no client request started; its end is the run's, read from its record. */
  private drive(record: RunRecord, app: ReturnType<typeof pinnedRun>['app'], component: ReturnType<typeof pinnedRun>['component']): void {
    const { driver, pipeline, logger } = this.options;
    const entry = pipeline.attached();
    const requestId = randomUUID();
    const notes: TurnNotes = {};
    const event = runEvent(record, app, component, requestId, { source: 'internal', replay: { runId: record.id, parent: record.parent?.runId ?? null, kind: record.parent?.kind ?? null } });
    const workflow = this.options.catalog.workflow(app, record.workflowId);
    void pipeline
      .holdingSlots(record, () => driver.drive(record.id, event, notes, (next) => entry.run(next, notes), pipeline.interceptors(app, workflow, requestId, record.id, record.sessionId ?? undefined)))
      .catch((error: unknown) => logger.warn({ err: error instanceof UhlpError ? { code: error.code, message: error.message } : error, runId: record.id }, 'a replayed or forked workflow run failed'));
  }
}
