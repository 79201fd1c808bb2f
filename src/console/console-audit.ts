/**
 * Every action taken in the console (an approval, a redrive, an optimizer
 * command, a view's tool call) goes to the log and to the app's ledger, with
 * who took it: a turn of the app's ambient session whose query names the
 * action, its target and the principal (name, role, loopback or token), and
 * whose answer is the outcome. Kept whatever the app's ambient sampling says:
 * an operator's action is never sampled away.
 */
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import type { Logger } from '../logger.js';
import { canonicalJson } from '../shared/canonical-json.js';
import type { TurnKeeper } from '../turns/turn-keeper.js';
import type { ConsolePrincipal } from './console-access.js';

export type ConsoleAction = 'run.approve' | 'run.reject' | 'run.cancel' | 'run.replay' | 'run.fork' | 'queue.redrive' | 'oracle.promote' | 'oracle.reject' | 'oracle.rollback' | 'view.tool';

export interface AuditEntry {
  readonly action: ConsoleAction;
  readonly principal: ConsolePrincipal;
  readonly appId: string;
  /** The app's deployment tier: the plane of its ambient session's ledger. */
  readonly tier: string;
  /** What the action was on (a run id, a queue, a component, a tool) and its arguments. */
  readonly target: Record<string, unknown>;
  /** `ok`, or the error code it ended with. */
  readonly outcome: string;
  readonly details?: Record<string, unknown>;
}

export class ConsoleAudit {
  constructor(
    private readonly logger: Logger,
    /** Where the ledger turns go; undefined: the log only. */
    private readonly turns: TurnKeeper | undefined,
  ) {}

  /** Writes the entry; resolves once the ledger has it (or it was logged as lost), never rejects. */
  async record(entry: AuditEntry): Promise<void> {
    const { action, principal, appId, tier, target, outcome } = entry;
    const by = { name: principal.name, role: principal.role, via: principal.via };
    this.logger.info({ console: action, app: appId, by, target, outcome }, `console: ${action} by ${principal.name}`);
    const turns = this.turns;
    if (turns === undefined) return;
    const query = canonicalJson({ source: 'internal', console: { action, app: appId, by, target } });
    const answer = canonicalJson({ outcome, ...(entry.details ?? {}) });
    try {
      const begun = await turns.begin(appId, tier, undefined);
      // An operator's action is kept whatever the app's sampling of ambient turns says.
      await turns.record({ ...begun, sampled: true }, query, { status: outcome, answerJson: answer, evidence: newTurnEvidence() });
    } catch (error) {
      this.logger.warn({ err: error, app: appId, console: action }, 'a console action was not written to the ledger');
    }
  }
}
