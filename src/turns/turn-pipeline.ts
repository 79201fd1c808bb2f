/**
 * The one turn pipeline every source runs its events through, in its stages'
 * order:
 *
 *   limit -> flow -> once-only -> session -> execution -> ledger -> answer
 *
 * Here: how deep the event's JSON input may nest (json-depth.ts), the app's
 * rate limit, and once-only runs (an Idempotency-Key, an invocation id); then
 * the route's and the component's flow control per key (flow-control.ts);
 * the component's turn, as its app composed it when it loaded
 * (component-turns.ts): the session and its turn, the execution in a sandbox
 * with its MCP token and write surface, the ledger's exec and evidence entries,
 * and the answer the contract's result maps to (turn-stages.ts), with what the
 * component adds around them (a workflow run, a cs bundle, the oracle's plan).
 * Sources only turn their input into a TurnEvent and the answer into what they
 * owe their caller (an HTTP response, a queue acknowledgement).
 */
import { UhlpError } from '../shared/errors.js';
import type { FinalResponse } from '../execution/result-interpreter.js';
import type { Metrics } from '../metrics.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import type { ComponentTurns } from './component-turns.js';
import { REPLAYED_HEADER, runIdempotent } from './idempotency.js';
import { checkTurnInputDepth } from './json-depth.js';
import { FlowControl, type FlowSlot, type RouteFlow } from './flow-control.js';
import type { TurnEvent } from './turn-event.js';
import type { TurnNotes } from './turn-runner.js';
import { msSince, type TurnJournal } from './turn-journal.js';
import { activeTraceIds, inSpan } from '../tracing/spans.js';

export interface TurnPipelineDeps {
  /** Each component's turn, chosen when its app loaded. */
  readonly components: ComponentTurns;
  readonly metrics: Metrics;
  /** The runtime store's concerns a turn uses: rate limits, once-only records, and flow gates (needed by apps that declare flow). */
  readonly store: Pick<RuntimeStore, 'rateLimits' | 'idempotency'> & Partial<Pick<RuntimeStore, 'flows'>>;
  /** How long completed once-only answers are replayed, ms. */
  readonly idempotencyTtlMs: number;
  /** Where each finished turn is recorded for the console (turn-journal.ts). @defaultValue none: turns are not journaled */
  readonly journal?: TurnJournal;
}

export class TurnPipeline {
  private readonly flows: FlowControl | undefined;

  constructor(private readonly deps: TurnPipelineDeps) {
    this.flows = deps.store.flows !== undefined ? new FlowControl({ store: deps.store.flows, metrics: deps.metrics }) : undefined;
  }

  /** Runs one turn; rejects with the UhlpError its caller answers (rate limit, session, sandbox failures). */
  run(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    const journal = this.deps.journal;
    if (journal === undefined) return this.stages(event, notes);
    // The turn's record goes with it through its stages (a spread: the event is the source's).
    const draft = journal.open(event);
    // A traced turn's record links to its trace (the ingress's span is active here).
    const traced = activeTraceIds();
    if (traced !== undefined) draft.setTraceId(traced.trace_id);
    return this.stages({ ...event, journal: draft }, notes).then(
      (answer) => {
        journal.answered(draft, answer);
        return answer;
      },
      (error: unknown) => {
        journal.failed(draft, error);
        throw error;
      },
    );
  }

  private stages(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    // Before anything of the turn, whatever its source and handler: a value too deep to serialize is never let in.
    try {
      checkTurnInputDepth(event.requestDataJson);
    } catch (error) {
      return Promise.reject(error);
    }
    // Most events have neither a limit nor a key: straight to the turn, with no promise of their own here.
    // A workflow run's own execution passes no gate: the drive that runs it holds the run's slots (`holdFlow`).
    const gated = event.workflowRun?.owner !== true && (event.flow !== undefined || event.component.flow !== undefined);
    if (event.once === undefined && !gated && event.app.document.spec.limits?.requestsPerSecond === undefined) {
      return this.turn(event, notes);
    }
    return this.runLimited(event, notes);
  }

  private async runLimited(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    await this.limit(event, notes);
    const flows = event.workflowRun?.owner === true ? [] : flowsOf(event);
    if (flows.length === 0) return this.runOnce(event, notes);
    if (this.flows === undefined) throw new UhlpError('UHLP_INTERNAL', 'this core was built without flow gates in its runtime store');
    const { app, journal } = event;
    try {
      return await this.flows.run(app.id, flows, event.requestDataJson, (slots) => this.runOnce(slots.length > 0 ? { ...event, flowSlots: slots } : event, notes), (waitedMs) => {
        if (journal !== undefined) journal.entry.timing.flowMs = waitedMs;
      });
    } catch (error) {
      if (error instanceof UhlpError && error.code === 'UHLP_FLOW_WAIT_TIMEOUT') {
        const retryAfterMs = (error.details as { retryAfterMs?: number } | undefined)?.retryAfterMs ?? 1000;
        notes['retry-after'] = String(Math.max(1, Math.ceil(retryAfterMs / 1000)));
      }
      throw error;
    }
  }

  /**
   * Runs `work` holding again the concurrency slots a workflow run's first turn
   * took (its record keeps them): a resumed run waits at its gates like any
   * event, across cores, and holds them until it pauses or ends.
   */
  holdFlow<T>(appId: string, slots: readonly FlowSlot[], work: () => Promise<T>): Promise<T> {
    if (slots.length === 0) return work();
    if (this.flows === undefined) return Promise.reject(new UhlpError('UHLP_INTERNAL', 'this core was built without flow gates in its runtime store'));
    return this.flows.hold(appId, slots, work);
  }

  /** The app's requestsPerSecond: refuses the turn with UHLP_RATE_LIMITED past it. */
  private async limit(event: TurnEvent, notes: TurnNotes): Promise<void> {
    const { app, journal } = event;
    const limit = app.document.spec.limits?.requestsPerSecond;
    if (limit !== undefined) {
      const asked = journal !== undefined ? performance.now() : 0;
      const decision = await inSpan('uhlp.limit', () => this.deps.store.rateLimits.hitRateLimit(app.id, limit), { 'uhlp.limit.requests_per_second': limit });
      if (journal !== undefined) journal.entry.timing.limitMs = msSince(asked);
      if (!decision.allowed) {
        this.deps.metrics.rateLimited.labels(app.id).inc();
        notes['retry-after'] = String(Math.max(1, Math.ceil(decision.retryAfterMs / 1000)));
        throw new UhlpError('UHLP_RATE_LIMITED', `app "${app.id}" accepts ${limit} requests per second`, { limit, retryAfterMs: decision.retryAfterMs });
      }
    }
  }

  private async runOnce(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    const { app, pool, once, journal } = event;
    if (once === undefined) return this.turn(event, notes);

    // Once-only.
    const claiming = journal !== undefined ? performance.now() : 0;
    // The span holds the whole once-only run (the turn inside it); the journal's claim time ends where the turn begins.
    const outcome = await inSpan('uhlp.once_only', () => runIdempotent(
      {
        store: this.deps.store.idempotency,
        appId: app.id,
        key: once.key,
        fingerprint: once.fingerprint,
        ttlMs: this.deps.idempotencyTtlMs,
        inFlightTtlMs: once.inFlightTtlMs ?? pool.acquireTimeoutMs + pool.limits.timeoutMs + 30_000,
        successOnly: once.successOnly === true,
        waitMs: pool.acquireTimeoutMs + pool.limits.timeoutMs,
        ...(once.complete !== undefined ? { complete: once.complete } : {}),
        ...(once.begun !== undefined ? { begun: once.begun } : {}),
      },
      () => {
        if (journal !== undefined) journal.entry.timing.claimMs = msSince(claiming);
        return this.turn(event, notes);
      },
    ));
    if (outcome.replayed && journal !== undefined) {
      journal.entry.timing.claimMs = msSince(claiming);
      journal.entry.replayed = true;
    }
    if (outcome.replayed) {
      this.deps.metrics.idempotentReplays.labels(app.id).inc();
      notes[REPLAYED_HEADER] = 'true';
    }
    // A stored answer is shared by every replay: each gets headers of its own.
    return outcome.replayed ? { ...outcome.response, headers: { ...outcome.response.headers } } : outcome.response;
  }

  /** Session -> execution -> ledger -> answer, as the component's app composed them (turn-stages.ts). */
  private turn(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    return this.deps.components.of(event.app, event.component).run(event, notes);
  }
}

/** The route's flow declaration, then the component's. */
function flowsOf(event: TurnEvent): RouteFlow[] {
  const flows: RouteFlow[] = [];
  if (event.flow !== undefined) flows.push(event.flow);
  if (event.component.flow !== undefined) flows.push({ scope: `component:${event.component.id}`, spec: event.component.flow });
  return flows;
}
