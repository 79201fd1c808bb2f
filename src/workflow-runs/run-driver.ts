/**
 * Drives a run to where it pauses or ends (seed 003 §2.3 step 7): each
 * execution of the run is one turn, its token bound to the run as owner; it
 * loads the run, runs nodes and checkpoints after each one. When the sandbox
 * dies (or answers something that is not an answer), the run is claimed for a
 * new execution on another sandbox, which goes on from the last checkpoint: a
 * completed node never runs twice. At most MAX_RESUMES times. The answer is
 * the run's: its result (through the response interceptors), 202 with
 * `Location: /_uhlp/runs/<id>` when an approval node paused it, its error
 * (504 UHLP_WORKFLOW_TIMEOUT past its time). One core drives a run at a time
 * (a runtime-store lease it renews).
 *
 * A cancelled run (run-cancels.ts) is cut here: each execution carries an
 * AbortSignal, aborted at once when the cancel reaches this core, or when the
 * driver sees the run's cancel mark in the runtime store (polled every
 * CANCEL_POLL_MS: a cancel through another core). The signal cuts the sandbox's
 * /execute (the sandbox is destroyed) and the calls of the execution's token
 * (model calls, tools, federated servers). Then the run goes on at its
 * on_cancel node as a new execution, or ends `cancelled`.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { toRunError } from '../contract/workflow/run-view.js';
import { errorBody, InternalError, UhlpError } from '../shared/errors.js';
import { WorkflowTimeoutError } from '../shared/workflow-errors.js';
import { JSON_TYPE, type FinalResponse } from '../execution/result-interpreter.js';
import type { Logger } from '../logger.js';
import type { LeaseStore } from '../state/lease-store.js';
import type { TurnEvent } from '../turns/turn-event.js';
import { SESSION_ID_HEADER } from '../turns/turn-keeper.js';
import type { TurnNotes } from '../turns/turn-runner.js';
import type { InterceptorChain } from './interceptors.js';
import { runErrorOf, timeoutError } from './run-errors.js';
import { RUN_ID_HEADER, RUNS_PATH } from './run-links.js';
import type { RunRecord } from './run-record.js';
import { cancelledError, type RunService } from './run-service.js';
import { inSpan } from '../tracing/spans.js';

/** New executions of a run after sandbox deaths, at most. */
export const MAX_RESUMES = 3;
/** Longest execution of a run: the sandbox client's ceiling. */
const MAX_EXECUTION_MS = 3_600_000;
/** The core waits this much past a run's time before it ends the execution itself: the orchestrator reports its own timeout first. */
const TIMEOUT_GRACE_MS = 1_000;
/** Errors of an execution after which the run goes on from its checkpoint on another sandbox. */
const RESUMABLE = new Set(['UHLP_SANDBOX_DIED', 'UHLP_SANDBOX_BAD_RESPONSE', 'UHLP_SANDBOX_ERROR', 'UHLP_SANDBOX_TIMEOUT']);
/**
 * A run's execution refused by the runtime store (a failover, a master being replaced): not the run's doing. The run
 * goes on from its last checkpoint once the store answers, as often as its time allows, after these pauses.
 */
const STATE_CODE = 'UHLP_STATE_UNAVAILABLE';
const STATE_PAUSES_MS = [250, 500, 1000, 2000, 4000];
/** How long a core holds a run it drives before renewing; another core takes over a run whose hold lapsed. */
const RUN_LEASE_MS = 10_000;
/** How often a driving core reads the cancel mark of its runs: the bound on a cancel made through another core (plus the cut itself). */
export const CANCEL_POLL_MS = 250;

/** One execution of the run, as a turn: through the component's turn stages, or through the whole pipeline. */
export type RunAttempt = (event: TurnEvent) => Promise<FinalResponse>;

export interface RunDriverOptions {
  readonly runs: RunService;
  /** The runtime store's leases: a run is driven by the core holding its lease. */
  readonly leases: LeaseStore;
  readonly logger: Logger;
  /** This core, for the leases of the runs it drives. */
  readonly instanceId: string;
  /**
   * The load answer of a run just claimed for its first execution, as JSON for
   * its context to carry (workflow-tool-backing.ts); undefined sends none.
   * @defaultValue none: every execution loads its run through MCP
   */
  readonly preload?: (claimed: RunRecord) => string | undefined;
}

export class RunDriver {
  /** Who holds this core's run leases: one owner per process, so a restarted core waits for the old holds to lapse. */
  private readonly leaseOwner: string;
  /** The core is stopping: runs it drives are left running for the next core (Redis) rather than failed. */
  private stopping = false;
  private readonly driving = new Set<string>();
  /** The execution in flight of each run this core drives, aborted to cut it when the run is cancelled. */
  private readonly cutters = new Map<string, AbortController>();

  constructor(private readonly options: RunDriverOptions) {
    this.leaseOwner = `${options.instanceId}/${process.pid}/${randomBytes(4).toString('hex')}`;
  }

  /** Whether this core drives the run now. */
  drives(runId: string): boolean {
    return this.driving.has(runId);
  }

  /** Cuts the execution in flight of a run this core drives (its cancellation is recorded); false when this core drives no execution of it. */
  cut(runId: string): boolean {
    const cutter = this.cutters.get(runId);
    if (cutter === undefined) return false;
    cutter.abort();
    return true;
  }

  /** The core stops: a run whose sandbox goes away under it is left for the next core (Redis persistence) rather than failed. */
  stop(): void {
    this.stopping = true;
  }

  /** Executes the run until it pauses or ends, on a new sandbox after each death; answers what the run answers. */
  async drive(runId: string, first: TurnEvent, notes: TurnNotes, attempt: RunAttempt, chain: InterceptorChain): Promise<FinalResponse> {
    const { runs, leases } = this.options;
    this.driving.add(runId);
    let renew: NodeJS.Timeout | undefined;
    try {
      if (!(await leases.acquireLease(runLease(runId), this.leaseOwner, RUN_LEASE_MS))) {
        throw new UhlpError('UHLP_WORKFLOW_RUN_CONFLICT', `run ${runId} is driven by another core`);
      }
      renew = setInterval(() => void leases.renewLease(runLease(runId), this.leaseOwner, RUN_LEASE_MS).catch(() => undefined), RUN_LEASE_MS / 3);
      renew.unref();
      let event = first;
      let stateRefusals = 0;
      for (let resumes = 0; ; resumes++) {
        const claimed = await runs.claim(runId, event.requestId);
        // Cancelled before this execution started: nothing of the run's own steps runs again.
        if (claimed.cancellation !== undefined && !claimed.cancellation.leg) {
          const next = await this.afterCut(runId, chain, event.requestId);
          if (next === 'leg') {
            event = await this.nextExecution(runId, event, notes);
            continue;
          }
          return next;
        }
        const remaining = runs.remainingMs(claimed);
        if (remaining <= 0) return timedOut(await runs.finish(runId, 'timed_out', timeoutError(claimed)), event.requestId);
        const timeoutMs = Math.min(MAX_EXECUTION_MS, remaining + TIMEOUT_GRACE_MS);
        // Only a run's first execution carries its load answer: a resumed run is loaded from the stored record.
        const loaded = claimed.attempts === 1 ? this.options.preload?.(claimed) : undefined;
        let final: FinalResponse;
        // The on_cancel leg is not cut again: a second cancel waits for it (bounded by the run's time).
        const cutter = claimed.cancellation?.leg === true ? undefined : new AbortController();
        const watch = cutter !== undefined ? this.watchCancel(runId, cutter) : undefined;
        try {
          const execution = { ...event, workflowRun: { runId, owner: true, timeoutMs, ...(loaded !== undefined ? { loaded } : {}), ...(cutter !== undefined ? { signal: cutter.signal } : {}) } };
          final = await inSpan('uhlp.workflow.execution', () => attempt(execution), { 'uhlp.workflow.run_id': runId, 'uhlp.workflow.resumes': resumes });
        } catch (error) {
          const record = await runs.get(runId);
          if (record.status !== 'running') return answer(record, undefined, chain, event.requestId);
          if (record.cancellation !== undefined) {
            const next = await this.afterCut(runId, chain, event.requestId);
            if (next === 'leg') {
              event = await this.nextExecution(runId, event, notes);
              continue;
            }
            return next;
          }
          if (runs.remainingMs(record) <= 0) return timedOut(await runs.finish(runId, 'timed_out', timeoutError(record)), event.requestId);
          // A stopping core's sandboxes go away under its runs: a run that survives a restart waits for the next core.
          if (this.stopping && record.persistence.actual === 'redis') throw error;
          if (error instanceof UhlpError && error.code === STATE_CODE) {
            event = await this.afterStateRefusal(runId, event, notes, ++stateRefusals);
            resumes--;
            continue;
          }
          if (!(error instanceof UhlpError) || !RESUMABLE.has(error.code) || resumes >= MAX_RESUMES) {
            await runs.finish(runId, 'failed', runErrorOf(error));
            throw error;
          }
          this.options.logger.warn({ runId, code: error.code, resumes: resumes + 1 }, 'the sandbox of a workflow run failed; the run goes on from its last checkpoint on another sandbox');
          // The same session, on a fresh sandbox, as a new execution.
          const sessionId = notes[SESSION_ID_HEADER] ?? record.sessionId ?? undefined;
          event = { ...event, requestId: randomUUID(), ...(sessionId !== undefined ? { session: { continue: sessionId } } : {}) };
          continue;
        } finally {
          watch?.();
        }
        const record = await runs.get(runId);
        if (record.status === 'running' && record.cancellation !== undefined) {
          const next = await this.afterCut(runId, chain, event.requestId);
          if (next === 'leg') {
            event = await this.nextExecution(runId, event, notes);
            continue;
          }
          return next;
        }
        // The orchestrator gave up on a step the store refused, leaving the run as its last checkpoint has it.
        if (record.status === 'running' && final.failure?.code === STATE_CODE && runs.remainingMs(record) > 0) {
          event = await this.afterStateRefusal(runId, event, notes, ++stateRefusals);
          resumes--;
          continue;
        }
        if (record.status === 'running') {
          const error = new UhlpError('UHLP_SANDBOX_BAD_RESPONSE', 'the llm-orchestrator answered before the run paused or ended');
          await runs.finish(runId, 'failed', runErrorOf(error));
          throw error;
        }
        return answer(record, final, chain, event.requestId);
      }
    } finally {
      clearInterval(renew);
      this.driving.delete(runId);
      this.cutters.delete(runId);
      await leases.releaseLease(runLease(runId), this.leaseOwner).catch(() => undefined);
    }
  }

  /** Polls the run's cancel mark while an execution runs and cuts it once marked; answers what stops the polling. */
  private watchCancel(runId: string, cutter: AbortController): () => void {
    this.cutters.set(runId, cutter);
    const store = this.options.runs.store;
    let polling = false;
    const timer = setInterval(() => {
      if (polling || cutter.signal.aborted) return;
      polling = true;
      store
        .runCancelMarked(runId)
        .then(
          (marked) => {
            if (marked) cutter.abort();
          },
          // A store that does not answer now is asked again at the next tick.
          () => undefined,
        )
        .finally(() => (polling = false));
    }, CANCEL_POLL_MS);
    timer.unref();
    return () => {
      clearInterval(timer);
      if (this.cutters.get(runId) === cutter) this.cutters.delete(runId);
    };
  }

  /** After a cancelled run's step was cut: 'leg' when the run goes on at its on_cancel node, else the cancelled run's answer. */
  private async afterCut(runId: string, chain: InterceptorChain, requestId: string): Promise<FinalResponse | 'leg'> {
    const { runs } = this.options;
    if (await runs.startCancelLeg(runId)) return 'leg';
    return answer(await runs.cancelled(runId), undefined, chain, requestId);
  }

  /** The next execution of a run the store refused, after a pause that grows with each refusal (the store failing over). */
  private async afterStateRefusal(runId: string, event: TurnEvent, notes: TurnNotes, refusals: number): Promise<TurnEvent> {
    this.options.logger.warn({ runId, code: STATE_CODE, refusals }, "the runtime store refused a workflow run's execution; the run goes on from its last checkpoint");
    await new Promise((resolve) => setTimeout(resolve, STATE_PAUSES_MS[Math.min(refusals, STATE_PAUSES_MS.length) - 1]));
    return this.nextExecution(runId, event, notes);
  }

  /** The next execution of a run, in the same session on a fresh sandbox. */
  private async nextExecution(runId: string, event: TurnEvent, notes: TurnNotes): Promise<TurnEvent> {
    const record = await this.options.runs.get(runId);
    const sessionId = notes[SESSION_ID_HEADER] ?? record.sessionId ?? undefined;
    return { ...event, requestId: randomUUID(), ...(sessionId !== undefined ? { session: { continue: sessionId } } : {}) };
  }
}

/** The lease of the core that drives a run. */
export function runLease(runId: string): string {
  return `run:${runId}`;
}

/** The answer of a run that paused or ended. */
async function answer(record: RunRecord, final: FinalResponse | undefined, chain: InterceptorChain, requestId: string): Promise<FinalResponse> {
  const headers: Record<string, string> = { 'content-type': JSON_TYPE, [RUN_ID_HEADER]: record.id };
  switch (record.status) {
    case 'completed': {
      const result = chain.intercepts ? await chain.result(record.result ?? null) : (record.result ?? null);
      return { status: 200, headers, body: JSON.stringify(result) };
    }
    case 'paused': {
      const self = `${RUNS_PATH}/${record.id}`;
      headers['location'] = self;
      return {
        status: 202,
        headers,
        body: JSON.stringify({
          runId: record.id,
          status: 'paused',
          node: record.paused?.node ?? null,
          prompt: record.paused?.prompt ?? null,
          links: { self, resume: `${self}/resume`, trace: `${self}/trace` },
        }),
      };
    }
    case 'cancelled': {
      const error = record.error ?? cancelledError(record);
      return { status: error.status, headers, body: JSON.stringify({ code: error.code, message: error.message, requestId, ...(error.details !== undefined ? { details: error.details } : {}) }) };
    }
    default: {
      if (record.status === 'timed_out') return timedOut(record, requestId);
      if (final !== undefined && final.status >= 400) return { ...final, headers: { ...final.headers, [RUN_ID_HEADER]: record.id } };
      const error = record.error ?? toRunError(new InternalError('the run failed'));
      return { status: error.status, headers, body: JSON.stringify({ code: error.code, message: error.message, requestId, ...(error.details !== undefined ? { details: error.details } : {}) }) };
    }
  }
}

function timedOut(record: RunRecord, requestId: string): FinalResponse {
  const error = record.error ?? timeoutError(record);
  const timeout = new WorkflowTimeoutError(error.message, { runId: record.id, timeoutMs: record.timing.timeoutMs });
  return {
    status: timeout.statusCode,
    headers: { 'content-type': JSON_TYPE, [RUN_ID_HEADER]: record.id },
    body: JSON.stringify(errorBody(timeout, requestId)),
  };
}
