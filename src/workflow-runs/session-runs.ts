/**
 * Double texting: what a request that continues a stored session does while a
 * run of that session is active (running or paused), as its workflow
 * component's `doubleTexting` says.
 *
 * Each session has one active-run slot, a runtime-store lease named for the
 * session and held by the run's id, so every core sharing the store sees it.
 * The slot is taken before a run is created and released when the run ends on
 * the core that drove it; a slot whose run has ended elsewhere (resumed after
 * an approval on another core, swept after its core stopped) is found stale by
 * the next request, which reads the holder's record, and freed then.
 *
 * - `reject` (the default): 409 UHLP_WORKFLOW_SESSION_BUSY naming the active run.
 * - `enqueue`: the request waits in the session's queue in the runtime store
 *   (arrival order, at most SESSION_QUEUE_MAX) and starts when it is at the
 *   head and the slot is free; it waits at most the new run's time.
 * - `interrupt`: the active run is cancelled through the cancel machinery (its
 *   step cut where it runs, `via: interrupt`) and the new run starts from the
 *   workflow's start node with the interrupted run's blackboard, `input`
 *   replaced by the new input and `interrupted` naming the run it goes on from.
 * - `rollback`: the active run is cancelled (`via: rollback`) and the new run
 *   starts from a fresh blackboard: nothing of the cancelled run is carried.
 *
 * Such a cancel is ledgered as an explicit one is (run-cancel-ledger.ts):
 * `by: session <id>`, `via` the mode, and its outcome.
 */
import type { Logger } from '../logger.js';
import { UhlpError } from '../shared/errors.js';
import { WorkflowSessionBusyError, WorkflowSessionQueueFullError } from '../shared/workflow-errors.js';
import type { LeaseStore } from '../state/lease-store.js';
import { ledgerCancel } from './run-cancel-ledger.js';
import type { RunCancels } from './run-cancels.js';
import type { RunsLedger } from './runs-routes.js';
import { runEnded, type RunService } from './run-service.js';

export type DoubleTexting = 'reject' | 'enqueue' | 'interrupt' | 'rollback';

/** What a workflow component does when it declares nothing. */
export const DEFAULT_DOUBLE_TEXTING: DoubleTexting = 'reject';
/** Requests one session queues at most behind its active run. */
export const SESSION_QUEUE_MAX = 16;
/** How long a session's slot is held without its run ending (a paused run waits for an approval this long at most before another run may start). */
const SLOT_TTL_MS = 24 * 3_600_000;
/** How often a waiting request looks at its place and the slot. */
const WAIT_POLL_MS = 100;
/** A waiting request refreshes its ticket every poll; one not refreshed this long (its core stopped) is dropped from the queue. */
const TICKET_TTL_MS = 5_000;
/** Attempts to take a slot from a run being cancelled (another request may take it in between). */
const MAX_TAKEOVERS = 5;

/** What the new run starts from, beside its own input. */
export interface Admission {
  /** The interrupted run's blackboard, which an `interrupt` carries into the new run. */
  readonly carried?: { readonly runId: string; readonly blackboard: Record<string, unknown> };
}

export interface SessionRunsOptions {
  readonly runs: RunService;
  readonly leases: LeaseStore;
  readonly cancels: RunCancels;
  readonly logger: Logger;
}

export class SessionRuns {
  private ledger: RunsLedger | undefined;

  constructor(private readonly options: SessionRunsOptions) {}

  /** Where the cancels of `interrupt` and `rollback` are ledgered, as the HTTP route's are (known once the core's turn keeper is built). */
  useLedger(ledger: RunsLedger): void {
    this.ledger = ledger;
  }

  /**
   * Takes the session's slot for `runId` as `mode` says, waiting at most
   * `waitMs` (enqueue); rejects with UHLP_WORKFLOW_SESSION_BUSY or
   * UHLP_WORKFLOW_SESSION_QUEUE_FULL.
   */
  async admit(sessionId: string, runId: string, mode: DoubleTexting, waitMs: number): Promise<Admission> {
    switch (mode) {
      case 'reject': {
        const holder = await this.take(sessionId, runId);
        if (holder !== undefined) throw busy(sessionId, holder, mode);
        return {};
      }
      case 'enqueue':
        await this.wait(sessionId, runId, waitMs);
        return {};
      case 'interrupt':
      case 'rollback':
        return this.takeOver(sessionId, runId, mode);
    }
  }

  /** Holds the slot of a session that the run's first turn opened (the run pauses with it). */
  async hold(sessionId: string, runId: string): Promise<void> {
    await this.options.leases.acquireLease(slotOf(sessionId), runId, SLOT_TTL_MS);
  }

  /** Frees the session's slot if the run holds it (the run ended). Never rejects: a slot left behind is freed by the next request. */
  async release(sessionId: string, runId: string): Promise<void> {
    await this.options.leases.releaseLease(slotOf(sessionId), runId).catch((error: unknown) => this.options.logger.warn({ err: error, sessionId, runId }, "a session's active-run slot was not freed"));
  }

  /** Takes the slot; answers the active run holding it, or undefined once taken (a holder that has ended is freed on the way). */
  private async take(sessionId: string, runId: string): Promise<{ id: string; status: string } | undefined> {
    const { leases, runs } = this.options;
    const slot = slotOf(sessionId);
    for (;;) {
      if (await leases.acquireLease(slot, runId, SLOT_TTL_MS)) return undefined;
      const lease = await leases.getLease(slot);
      if (lease === undefined) continue;
      const record = await runs.find(lease.owner);
      if (record !== undefined && !runEnded(record)) return { id: record.id, status: record.status };
      // The holder ended where nobody freed its slot: freed now, and taken on the next turn of the loop.
      await leases.releaseLease(slot, lease.owner);
    }
  }

  private async wait(sessionId: string, runId: string, waitMs: number): Promise<void> {
    const { runs } = this.options;
    const store = runs.store;
    const ticket = runId;
    const started = Date.now();
    if ((await store.joinSessionQueue(sessionId, ticket, SESSION_QUEUE_MAX, TICKET_TTL_MS)) < 0) {
      throw new WorkflowSessionQueueFullError(`${SESSION_QUEUE_MAX} requests wait already for the active run of session ${sessionId}`, { sessionId, max: SESSION_QUEUE_MAX });
    }
    let holder: { id: string; status: string } | undefined;
    try {
      for (;;) {
        const head = await store.sessionQueueHead(sessionId, ticket, TICKET_TTL_MS);
        // Dropped (this core stalled past the ticket's time): back in the queue, at its end.
        if (head === undefined && (await store.joinSessionQueue(sessionId, ticket, SESSION_QUEUE_MAX, TICKET_TTL_MS)) < 0) {
          throw new WorkflowSessionQueueFullError(`${SESSION_QUEUE_MAX} requests wait already for the active run of session ${sessionId}`, { sessionId, max: SESSION_QUEUE_MAX });
        }
        if (head === true) {
          holder = await this.take(sessionId, runId);
          if (holder === undefined) return;
        }
        if (Date.now() - started >= waitMs) throw busy(sessionId, holder ?? (await this.holder(sessionId)), 'enqueue', Date.now() - started);
        await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      }
    } finally {
      await store.leaveSessionQueue(sessionId, ticket).catch(() => undefined);
    }
  }

  /** Cancels the active run (its step cut where it runs) and takes its slot; an interrupt carries its blackboard. */
  private async takeOver(sessionId: string, runId: string, mode: 'interrupt' | 'rollback'): Promise<Admission> {
    const { leases, runs, logger } = this.options;
    let carried: Admission['carried'];
    for (let attempt = 0; attempt < MAX_TAKEOVERS; attempt++) {
      const holder = await this.take(sessionId, runId);
      if (holder === undefined) return carried !== undefined ? { carried } : {};
      const cancellation = { by: `session ${sessionId}`, via: mode };
      const before = this.ledger !== undefined ? await runs.find(holder.id) : undefined;
      const entry = before === undefined ? undefined : { runId: holder.id, appId: before.appId, tier: this.ledger!.tierOf(before.appId), cancellation };
      try {
        const after = await this.options.cancels.cancel(holder.id, cancellation);
        if (entry !== undefined) await ledgerCancel(this.ledger!.turns, this.ledger!.logger, { ...entry, outcome: after.status });
      } catch (error) {
        if (entry !== undefined) await ledgerCancel(this.ledger!.turns, this.ledger!.logger, { ...entry, outcome: error instanceof UhlpError ? error.code : 'UHLP_INTERNAL' });
        // It ended meanwhile: nothing to cancel, and its slot is free to take.
        if (!(error instanceof UhlpError && error.code === 'UHLP_WORKFLOW_RUN_ENDED')) throw error;
      }
      logger.info({ sessionId, runId: holder.id, by: runId, mode }, 'a new request of the session took over from its active workflow run');
      const record = await runs.find(holder.id);
      if (mode === 'interrupt' && record !== undefined) carried = { runId: holder.id, blackboard: record.state.blackboard };
      // Taken from the cancelled run even while its on_cancel node still runs: the new request is the session's now.
      await leases.releaseLease(slotOf(sessionId), holder.id);
    }
    throw busy(sessionId, await this.holder(sessionId), mode);
  }

  private async holder(sessionId: string): Promise<{ id: string; status: string } | undefined> {
    const lease = await this.options.leases.getLease(slotOf(sessionId));
    if (lease === undefined) return undefined;
    const record = await this.options.runs.find(lease.owner);
    return { id: lease.owner, status: record?.status ?? 'unknown' };
  }
}

/** The lease that is a session's active-run slot. */
export function slotOf(sessionId: string): string {
  return `session-run:${sessionId}`;
}

function busy(sessionId: string, holder: { id: string; status: string } | undefined, mode: DoubleTexting, waitedMs?: number): WorkflowSessionBusyError {
  const runId = holder?.id ?? null;
  return new WorkflowSessionBusyError(
    waitedMs === undefined ? `run ${runId} of session ${sessionId} is active (${holder?.status ?? 'unknown'})` : `run ${runId} of session ${sessionId} was still active after ${waitedMs} ms`,
    { sessionId, runId, status: holder?.status ?? null, doubleTexting: mode, ...(waitedMs !== undefined ? { waitedMs } : {}) },
  );
}
