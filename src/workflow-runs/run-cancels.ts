/**
 * Cancelling a workflow run (`POST /_uhlp/runs/<id>/cancel`, the console's
 * action, `uhlp runs cancel`): the cancellation is recorded on the run (who,
 * when, through what), then
 *
 * - a paused run (waiting for an approval) ends `cancelled` at once, or, when
 *   its workflow declares `on_cancel`, goes on at that node as a new execution
 *   driven from here;
 * - a running run is cut where it runs: on this core at once (run-driver.ts
 *   `cut`), on another core through the run's cancel mark in the runtime
 *   store, which the driving core polls every CANCEL_POLL_MS. The sandbox's
 *   execution, its model calls, tool calls and federated servers' calls are
 *   aborted; the run goes on at its on_cancel node, or ends `cancelled`.
 *
 * A cancel answers once the run has ended, or after CANCEL_WAIT_MS with the run
 * as it is then (an on_cancel node still running). A run that has ended
 * already: 409 UHLP_WORKFLOW_RUN_ENDED.
 */
import { randomUUID } from 'node:crypto';
import type { RunCancellation } from '../contract/workflow/run-summary.js';
import type { Logger } from '../logger.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import { pinnedRun, runEvent } from './pinned-runs.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunDriver } from './run-driver.js';
import type { RunRecord } from './run-record.js';
import { runEnded, type RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

/** How long a cancel waits for the run to end before it answers the run as it is. */
export const CANCEL_WAIT_MS = 10_000;
/** How long a run's cancel mark is kept: longer than any execution of a run (an hour at most). */
const CANCEL_MARK_TTL_MS = 2 * 3_600_000;
const WAIT_POLL_MS = 50;

export interface RunCancelsOptions {
  readonly runs: RunService;
  readonly catalog: WorkflowCatalog;
  readonly driver: RunDriver;
  readonly pipeline: PipelineTurns;
  readonly logger: Logger;
}

/** Who cancels: a name (the operator's principal, or what a client says) and through what. */
export type Canceller = Omit<RunCancellation, 'at'>;

export class RunCancels {
  constructor(private readonly options: RunCancelsOptions) {}

  /** Cancels the run and answers it once it has ended (or as it is after CANCEL_WAIT_MS). */
  async cancel(runId: string, canceller: Canceller, waitMs: number = CANCEL_WAIT_MS): Promise<RunRecord> {
    const { runs, driver, logger } = this.options;
    const cancellation: RunCancellation = { by: canceller.by, at: new Date().toISOString(), via: canceller.via };
    const after = await runs.requestCancel(runId, cancellation);
    logger.info({ runId, by: cancellation.by, via: cancellation.via, status: after.status }, 'workflow run cancelled');
    if (after.status === 'running' && after.cancellation?.leg === true && after.cancellation.at === cancellation.at) {
      // This cancel took the run off its approval node: nobody drives it, so its on_cancel leg is driven from here.
      this.driveLeg(after);
    } else if (after.status === 'running') {
      // Marked first, so that a core that takes the run over meanwhile sees it too.
      await runs.store.markRunCancel(runId, CANCEL_MARK_TTL_MS);
      driver.cut(runId);
    }
    return this.waitForEnd(runId, waitMs);
  }

  private driveLeg(record: RunRecord): void {
    const { catalog, driver, pipeline, logger } = this.options;
    let pinned;
    try {
      pinned = pinnedRun(catalog, record);
    } catch (error) {
      // This core cannot read the run's revision: the run is left running at its on_cancel node for a core that can (the orphan sweeper, on Redis).
      logger.warn({ err: error, runId: record.id }, 'the on_cancel node of a cancelled workflow run is left for another core');
      return;
    }
    const { app, component, workflow } = pinned;
    const entry = pipeline.attached();
    const requestId = randomUUID();
    const notes: TurnNotes = {};
    const event = runEvent(record, app, component, requestId, { source: 'internal', resume: { runId: record.id, after: 'cancel' } });
    void pipeline
      .holdingSlots(record, () => driver.drive(record.id, event, notes, (next) => entry.run(next, notes), pipeline.interceptors(app, workflow, requestId, record.id, record.sessionId ?? undefined)))
      .catch((error: unknown) => logger.warn({ err: error, runId: record.id }, 'the on_cancel node of a cancelled workflow run failed'));
  }

  private async waitForEnd(runId: string, waitMs: number): Promise<RunRecord> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const record = await this.options.runs.get(runId);
      if (runEnded(record) || Date.now() >= deadline) return record;
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
    }
  }
}
