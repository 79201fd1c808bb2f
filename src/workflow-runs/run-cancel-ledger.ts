/**
 * A run's cancellation in its app's ledger: a turn of the app's ambient
 * session whose query names the run, who cancelled it and through what, and
 * whose answer is the outcome (the run's status then, or the error code the
 * cancel was refused with). Kept whatever the app's sampling of ambient turns
 * says, as an operator's console action is (console-audit.ts).
 */
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { Logger } from '../logger.js';
import type { RunCancellation } from '../contract/workflow/run-summary.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';

export interface CancelEntry {
  readonly runId: string;
  readonly appId: string;
  /** The app's deployment tier: the plane of its ambient session's ledger. */
  readonly tier: string;
  readonly cancellation: Omit<RunCancellation, 'at'>;
  /** The run's status after the cancel, or the error code it was refused with. */
  readonly outcome: string;
}

/** Writes the entry to the log and the ledger; never rejects (a ledger that refuses is logged). */
export async function ledgerCancel(turns: TurnKeeper | undefined, logger: Logger, entry: CancelEntry): Promise<void> {
  const { runId, appId, tier, cancellation, outcome } = entry;
  logger.info({ runId, app: appId, by: cancellation.by, via: cancellation.via, outcome }, 'workflow run cancel');
  if (turns === undefined) return;
  const query = canonicalJson({ source: 'internal', cancel: { runId, app: appId, by: cancellation.by, via: cancellation.via } });
  try {
    const begun = await turns.begin(appId, tier, undefined);
    await turns.record({ ...begun, sampled: true }, query, { status: outcome, answerJson: canonicalJson({ outcome }), evidence: newTurnEvidence() });
  } catch (error) {
    logger.warn({ err: error, app: appId, runId }, 'a run cancellation was not written to the ledger');
  }
}
