/**
 * One turn of a component, stage by stage: its session (and turn number), its
 * execution (the component's execution stage, chosen when its app loaded), the
 * ledger's exec and evidence entries, and the answer the contract's result maps
 * to. A failure is a turn too: it is ledgered with its code, then thrown; a
 * component's failed answer is logged (warn) with where its script threw.
 */
import { UhlpError } from '../shared/errors.js';
import type { ExecutionStage } from '../execution/execution-stage.js';
import { interpretResult, type FinalResponse, type TurnFailure } from '../execution/result-interpreter.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { TurnEvent } from './turn-event.js';
import { SESSION_ID_HEADER, TURN_HEADER, type TurnKeeper } from './turn-keeper.js';
import type { TurnNotes, TurnRunner } from './turn-runner.js';
import { addTurnCalls, msSince, roundMs } from './turn-journal.js';
import { tracingActive } from '../tracing/tracing-active.js';
import { inSpan, recordScriptException, spanIfPending, turnSpanOf } from '../tracing/spans.js';
import { observeWithTrace } from '../tracing/exemplars.js';

export interface TurnStagesDeps {
  readonly turns: TurnKeeper;
  readonly metrics: Metrics;
  /** Where a turn whose script failed is logged (warn). @defaultValue none: not logged */
  readonly logger?: Pick<Logger, 'warn'>;
  /** Clients get a script exception's stack in `details.stack` (UHLP_DEV_ERROR_STACKS, dev only). @defaultValue false */
  readonly exposeErrorStacks?: boolean;
}

export class TurnStages implements TurnRunner {
  constructor(
    private readonly deps: TurnStagesDeps,
    private readonly execution: ExecutionStage,
  ) {}

  async run(event: TurnEvent, notes: TurnNotes): Promise<FinalResponse> {
    const { deps } = this;
    const { app, component, requestId, requestDataJson, journal } = event;
    const started = performance.now();
    // Session: a turn of the ambient session is known at once (most turns), a stored one is looked up.
    const begun = deps.turns.begin(app.id, app.document.spec.deploymentMode, event.session, { requestId, policy: app.document.spec.ledger });
    // A stored session is looked up: a span of its own (an ambient one is known at once).
    const turn = begun instanceof Promise ? await (tracingActive() ? inSpan('uhlp.session', () => begun) : begun) : begun;
    // An ambient session cannot be continued by the client, so it is not named to it.
    if (!turn.ambient) {
      notes[SESSION_ID_HEADER] = turn.sessionId;
      notes[TURN_HEADER] = String(turn.turnNumber);
    }
    const evidence = newTurnEvidence();
    for (const output of event.declaredOutputs) evidence.declaredWrites.push({ path: output.path, role: output.role });
    let answerJson: string | undefined;
    let status: string;
    let answer: FinalResponse | undefined;
    let failure: unknown;
    const executing = journal !== undefined ? performance.now() : 0;
    if (journal !== undefined) journal.entry.timing.sessionMs += roundMs(executing - started);
    try {
      // Execution: one /execute in a sandbox, or as the component's decorators plan it (the oracle's two).
      const { response, text } = await inSpan('uhlp.execution', () => this.execution.execute({ event, turn, evidence }));
      answerJson = text;
      status = response.resultType === 'error' ? 'error' : 'ok';
      // Answer, mapped before the turn is recorded: an answer that cannot be sent is the turn's outcome, recorded once.
      answer = interpretResult(response, requestId, { exposeStack: deps.exposeErrorStacks === true });
      if (answer.failure !== undefined) {
        logFailure(deps.logger, event, answer.status, answer.failure);
        // The script's exception, with its own stack (path and line), on the turn's span.
        const span = tracingActive() ? turnSpanOf() : undefined;
        if (span !== undefined && (answer.status >= 500 || answer.failure.stack !== undefined)) recordScriptException(span, answer.failure);
      }
      if (event.keepResult === true) answer.result = { resultType: response.resultType, data: response.data };
      // The execution's time, without the wait for the ledger below (observed once, as the turn ended).
      observeWithTrace(deps.metrics.turnSeconds.labels(app.id, component.id, status), (performance.now() - started) / 1000);
    } catch (error) {
      failure = error;
      status = error instanceof UhlpError ? error.code : 'UHLP_INTERNAL';
      observeWithTrace(deps.metrics.turnSeconds.labels(app.id, component.id, 'failed'), (performance.now() - started) / 1000);
    }
    let ledgering = 0;
    if (journal !== undefined) {
      ledgering = performance.now();
      journal.entry.timing.executionMs += roundMs(ledgering - executing);
      addTurnCalls(journal, evidence.externalCalls);
      if (deps.turns.ledgers) journal.entry.ledger = { tier: turn.tier, sessionId: turn.sessionId, turnNumber: turn.turnNumber };
    }
    // Ledger: the one place a turn waits for it. With `sync` or `fsync` durability the answer
    // (or the error) leaves only once the turn's entries are written; with `async`, record() returns nothing.
    const record = (): Promise<void> | undefined => deps.turns.record(turn, requestDataJson, { status, answerJson, evidence });
    const recorded = tracingActive() ? spanIfPending('uhlp.ledger', record) : record();
    if (recorded !== undefined) await recorded;
    if (journal !== undefined) journal.entry.timing.ledgerMs += msSince(ledgering);
    if (answer === undefined) throw failure;
    return answer;
  }
}

/**
 * A turn whose component failed (a server error, or a script exception with its
 * place) is a warn line with what an operator needs to find it: the request id,
 * app, component, code, message and where the script threw. An app's own 4xx
 * answers are its business and are not logged.
 */
function logFailure(logger: Pick<Logger, 'warn'> | undefined, event: TurnEvent, status: number, failure: TurnFailure): void {
  if (logger === undefined || (status < 500 && failure.stack === undefined)) return;
  logger.warn(
    {
      requestId: event.requestId,
      app: event.app.id,
      component: event.component.id,
      code: failure.code,
      status,
      ...(failure.stack !== undefined ? { stack: failure.stack } : {}),
    },
    `${failure.code}: ${failure.message}`,
  );
}
