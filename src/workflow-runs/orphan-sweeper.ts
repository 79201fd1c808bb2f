/**
 * Runs nobody drives: on a core whose runtime state is Redis, a running run
 * whose core stopped (its lease lapsed, or it never claimed the run it created:
 * UNCLAIMED_RUN_GRACE_MS) is picked up and driven to its end by
 * another core, from its last checkpoint, once it has taken its concurrency
 * slots again (it waits at its gates like any event; one that waited too long is
 * swept again later). A run of memory persistence cannot
 * go on elsewhere: it ends as interrupted. In memory, runs end with their core
 * and nothing is swept.
 */
import { randomUUID } from 'node:crypto';
import { toRunError } from '../contract/workflow/run-view.js';
import type { Logger } from '../logger.js';
import type { LeaseStore } from '../state/lease-store.js';
import { WorkflowInterruptedError } from '../shared/workflow-errors.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import { pinnedRun, runEvent, type PinnedRun } from './pinned-runs.js';
import type { PipelineTurns } from './pipeline-turns.js';
import type { RunRecord } from './run-record.js';
import { runLease, type RunDriver } from './run-driver.js';
import { runErrorOf } from './run-errors.js';
import type { RunService } from './run-service.js';
import type { WorkflowCatalog } from './workflow-catalog.js';

/** How often a core with Redis state looks for runs nobody drives. */
const ORPHAN_SWEEP_MS = 5_000;

/**
 * How long a run no execution has claimed yet belongs to the core that created
 * it. Its creator takes the run's lease only after the create, and a write
 * stalled in a failover (behind `WAIT`s) has held that gap open for 10 s: a
 * sweep in it drove the run elsewhere and the creator's client got a 409.
 * A creator that died before claiming leaves the run to the sweep after this.
 */
export const UNCLAIMED_RUN_GRACE_MS = 30_000;

/** Whether a run with no lease is another core's to take: claimed before, or unclaimed past the grace. */
export function isOrphaned(record: Pick<RunRecord, 'attempts' | 'updatedAt'>, now: number = Date.now()): boolean {
  // An unreadable time counts as old: a run is never left undriven for good.
  return record.attempts > 0 || !(now - Date.parse(record.updatedAt) < UNCLAIMED_RUN_GRACE_MS);
}

export interface OrphanSweeperOptions {
  readonly runs: RunService;
  /** The runtime store's leases: a run whose lease is held has a core driving it. */
  readonly leases: LeaseStore;
  readonly catalog: WorkflowCatalog;
  readonly driver: RunDriver;
  readonly pipeline: PipelineTurns;
  readonly logger: Logger;
  /** The core's runtime state: runs survive a restart only on Redis. */
  readonly stateKind: 'memory' | 'redis';
}

export class OrphanSweeper {
  private sweeper: NodeJS.Timeout | undefined;
  /** Runs this core waits to take the slots of: not picked up again meanwhile. */
  private readonly waiting = new Set<string>();

  constructor(private readonly options: OrphanSweeperOptions) {}

  /** Looks for orphaned runs now and every few seconds (Redis state only: in memory, runs end with their core). */
  start(): void {
    if (this.options.stateKind !== 'redis' || this.sweeper !== undefined) return;
    const sweep = (): void => {
      void this.sweep().catch((error: unknown) => this.options.logger.warn({ err: error }, 'workflow runs not swept'));
    };
    sweep();
    this.sweeper = setInterval(sweep, ORPHAN_SWEEP_MS);
    this.sweeper.unref();
  }

  stop(): void {
    clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /** Drives every running run no core holds; runs of memory persistence end as interrupted. */
  async sweep(): Promise<void> {
    const { runs, leases, driver, pipeline, logger } = this.options;
    for (const id of await runs.store.listActiveRuns()) {
      if (driver.drives(id) || this.waiting.has(id)) continue;
      const record = await runs.find(id);
      if (record === undefined || record.status !== 'running') continue;
      if (!isOrphaned(record) || (await leases.getLease(runLease(id))) !== undefined) continue;
      if (record.persistence.actual !== 'redis') {
        await runs.finish(id, 'failed', toRunError(new WorkflowInterruptedError('the run was running when its core stopped; its persistence is memory')));
        continue;
      }
      const entry = pipeline.attached();
      let pinned: PinnedRun;
      try {
        pinned = pinnedRun(this.options.catalog, record);
      } catch (error) {
        await runs.finish(id, 'failed', runErrorOf(error));
        continue;
      }
      const requestId = randomUUID();
      const event = runEvent(record, pinned.app, pinned.component, requestId, { source: 'internal', resume: { runId: id, after: 'restart' } });
      logger.info({ runId: id, app: record.appId }, 'resuming a workflow run whose core stopped');
      const notes: TurnNotes = {};
      this.waiting.add(id);
      void pipeline
        .holdingSlots(record, () => {
          this.waiting.delete(id);
          return driver.drive(id, event, notes, (next) => entry.run(next, notes), pipeline.interceptors(pinned.app, pinned.workflow, requestId, id, record.sessionId ?? undefined));
        })
        .catch((error: unknown) => logger.warn({ err: error, runId: id }, 'resumed workflow run failed'))
        .finally(() => this.waiting.delete(id));
    }
  }
}
