/**
 * Every decision of the oracle — a candidate judged, a promotion or a
 * suggestion committed, a stage entered, a rollback, an operator's command —
 * goes to the log and to the app's ledger: a turn of the app's ambient session
 * whose query names the component and the decision and whose answer holds its
 * evidence (candidate hash, agreement, samples, commits), with the code
 * generation's LLM calls as external calls. The ledger is hash-chained like
 * every other turn, so the trail of why code serves a component is as
 * verifiable as the requests it served.
 */
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { ExternalCall } from '../ledger/ledger-entry.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type { Logger } from '../logger.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';

export type DecisionKind = 'candidate' | 'promote' | 'suggest' | 'stage' | 'rollback' | 'reject' | 'refuse' | 'give-up';

export interface Decision {
  readonly kind: DecisionKind;
  readonly appId: string;
  /** The app's deployment tier: the ledger of its ambient session. */
  readonly tier: string;
  readonly componentId: string;
  /** One line for people. */
  readonly summary: string;
  /** The evidence, as JSON. */
  readonly details: Record<string, unknown>;
  /** LLM calls the decision took (code generation). */
  readonly externalCalls?: readonly ExternalCall[];
}

export class OracleDecisions {
  constructor(
    private readonly logger: Logger,
    /** Where the ledger turns go; undefined: log only. */
    private readonly turns: TurnKeeper | undefined,
  ) {}

  record(decision: Decision): void {
    const { appId, componentId, kind, summary, details } = decision;
    this.logger.info({ oracle: kind, app: appId, component: componentId, ...details }, `oracle: ${summary}`);
    const turns = this.turns;
    if (turns === undefined) return;
    const query = canonicalJson({ source: 'internal', oracle: { app: appId, component: componentId, decision: kind } });
    const answer = canonicalJson({ summary, ...details });
    const evidence = newTurnEvidence();
    if (decision.externalCalls) evidence.externalCalls.push(...decision.externalCalls);
    // With sync or fsync ledger durability record() returns a promise: nothing waits for it here, but its failure is logged.
    const write = (turn: Parameters<TurnKeeper['record']>[0]): void =>
      void turns.record(turn, query, { status: 'ok', answerJson: answer, evidence })?.catch((error: unknown) => this.logger.warn({ err: error, app: appId }, 'oracle decision not written to the ledger'));
    try {
      const begun = turns.begin(appId, decision.tier, undefined);
      if (begun instanceof Promise) begun.then(write, (error: unknown) => this.logger.warn({ err: error, app: appId }, 'oracle decision not written to the ledger'));
      else write(begun);
    } catch (error) {
      this.logger.warn({ err: error, app: appId }, 'oracle decision not written to the ledger');
    }
  }
}
