/**
 * An approver's decision on a run paused at an approval node
 * (`POST /_uhlp/runs/<id>/resume`): recorded with the tools the node grants,
 * then the run goes on as a new execution and the answer is the run's (its
 * result, or 202 again at the next approval). A run whose first turn held
 * concurrency slots takes them again first, waiting like any event: a decision
 * refused with UHLP_FLOW_WAIT_TIMEOUT is not recorded and the run stays paused.
 */
import { randomUUID } from 'node:crypto';
import type { Approval } from '../contract/workflow/run-view.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import { UhlpError } from '../shared/errors.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import { pinnedRun, runEvent } from './pinned-runs.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunDriver } from './run-driver.js';
import { RUN_ID_HEADER } from './run-links.js';
import type { RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';
import { inResumeSpan } from '../tracing/workflow-spans.js';

/** An approver's decision (POST /_uhlp/runs/<id>/resume). */
export type Decision = Omit<Approval, 'at'>;

export interface RunApprovalsOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly driver: RunDriver;
  readonly pipeline: PipelineTurns;
}

export class RunApprovals {
  constructor(private readonly options: RunApprovalsOptions) {}

  /** Records an approver's decision and runs the paused run on. */
  async resume(runId: string, decision: Decision, notes: TurnNotes): Promise<FinalResponse> {
    const { runs, catalog, driver, pipeline } = this.options;
    const entry = pipeline.attached();
    const record = await runs.get(runId);
    if (record.status !== 'paused' || record.paused === undefined) {
      throw new UhlpError('UHLP_WORKFLOW_RUN_NOT_PAUSED', `run ${runId} is ${record.status}; only a paused run is resumed`, { status: record.status });
    }
    const { app, component, workflow } = pinnedRun(catalog, record);
    const node = workflow.nodes[record.paused.node];
    const paused = record.paused;
    return pipeline.holdingSlots(record, async () => {
      await runs.resume(runId, decision, node?.type === 'approval' ? node.grants : []);
      const requestId = randomUUID();
      notes[RUN_ID_HEADER] = runId;
      const event = runEvent(record, app, component, requestId, { source: 'internal', resume: { runId, approved: decision.approved } });
      return inResumeSpan(runId, paused, decision.approved, () =>
        driver.drive(runId, event, notes, (next) => entry.run(next, notes), pipeline.interceptors(app, workflow, requestId, runId, record.sessionId ?? undefined)),
      );
    });
  }
}
