/**
 * Sessions and the ledger at ingress: every execution is a turn of a session.
 * A client opens a stored session with `X-UHLP-Session: new` and continues it
 * with `X-UHLP-Session-ID: SES-...`. A request with neither is a turn of its app's
 * ambient session: one per app and deployment tier, started anew every hour and
 * never stored, so unsessioned traffic costs the runtime store nothing and the
 * ledger two appends to files it keeps open (not a directory per request). Both
 * ledger entries of a turn are hashed and written by the ledger thread after the
 * answer, failures included.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { SessionChoice } from './turn-event.js';
import { UhlpError } from '../errors.js';
import type { TurnEvidence } from '../ledger/turn-evidence.js';
import type { TurnLedgerThread } from '../ledger/turn-ledger-thread.js';
import type { TurnRecord } from '../ledger/turn-ledger-protocol.js';
import type { Metrics } from '../metrics.js';
import { newSessionId } from '../state/session-id.js';
import type { RuntimeStore } from '../state/runtime-store.js';

export const SESSION_REQUEST_HEADER = 'x-uhlp-session';
export const SESSION_ID_HEADER = 'x-uhlp-session-id';
export const TURN_HEADER = 'x-uhlp-turn';

/** The session an HTTP request names: `X-UHLP-Session-ID: SES-…` continues one, `X-UHLP-Session: new` opens one, neither is ambient. */
export function sessionChoiceOf(headers: IncomingHttpHeaders): SessionChoice {
  const requested = headers[SESSION_ID_HEADER];
  if (typeof requested === 'string') return { continue: requested };
  return headers[SESSION_REQUEST_HEADER] === 'new' ? OPEN : undefined;
}

const OPEN = Object.freeze({ open: true as const });

export interface Turn {
  readonly sessionId: string;
  readonly turnNumber: number;
  readonly tier: string;
  /** A turn of the app's ambient session (the request named no session). */
  readonly ambient: boolean;
}

/** How long an ambient session lasts before the next one starts. */
const AMBIENT_SESSION_MS = 3600_000;

interface AmbientSession {
  id: string;
  startedAt: number;
  turns: number;
  /** Resolves once its ledger files exist. */
  ready: Promise<void>;
  /** `ready` has resolved: a turn need not wait for it. */
  started: boolean;
}

export interface TurnOutcome {
  /** `ok` for an answer from the component (app errors included), else the failure code. */
  readonly status: string;
  /** The sandbox's /execute answer as JSON text; absent when the turn failed before one. */
  readonly answerJson: string | undefined;
  readonly evidence: TurnEvidence | undefined;
}

export class TurnKeeper {
  private readonly ambient = new Map<string, AmbientSession>();

  constructor(
    private readonly options: {
      store: RuntimeStore;
      sessionTtlMs: number;
      /** Where turns are written; undefined turns ledgers off. */
      ledger?: TurnLedgerThread;
      /** Counts the turns handed to the ledger (uhlp_ledger_turns_total). @defaultValue none counted */
      metrics?: Pick<Metrics, 'ledgerTurns'>;
    },
  ) {}

  /**
   * The turn a request is. A turn of an ambient session whose ledger files exist
   * is known at once, and is returned as it is rather than in a promise: that is
   * most requests.
   */
  begin(appId: string, tier: string, choice: SessionChoice): Turn | Promise<Turn> {
    if (choice === undefined) {
      const session = this.ambientSession(appId, tier);
      const turn: Turn = { sessionId: session.id, turnNumber: ++session.turns, tier, ambient: true };
      return session.started ? turn : session.ready.then(() => turn);
    }
    return this.beginStored(appId, tier, choice);
  }

  private async beginStored(appId: string, tier: string, choice: NonNullable<SessionChoice>): Promise<Turn> {
    const { store, sessionTtlMs } = this.options;
    const requested = 'continue' in choice ? choice.continue : undefined;
    let turn: Turn;
    if (requested !== undefined) {
      const session = await store.touchSession(requested, sessionTtlMs);
      if (!session || session.appId !== appId) {
        throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session "${requested}" does not exist for app "${appId}" or has expired`, {
          header: SESSION_ID_HEADER,
        });
      }
      turn = { sessionId: session.id, turnNumber: await store.nextTurn(session.id), tier, ambient: false };
    } else {
      const session = await store.createSession({ appId, ttlMs: sessionTtlMs });
      turn = { sessionId: session.id, turnNumber: await store.nextTurn(session.id), tier, ambient: false };
      await this.options.ledger?.startSession(tier, session.id);
    }
    return turn;
  }

  /**
   * Queues the turn's exec and evidence entries; never throws (a failed write is
   * logged). `queryJson` is the canonical JSON of the request data.
   */
  record(turn: Turn, queryJson: string, outcome: TurnOutcome): void {
    const ledger = this.options.ledger;
    if (ledger === undefined) return;
    this.options.metrics?.ledgerTurns.labels(turn.tier).inc();
    const record: TurnRecord = { tier: turn.tier, sessionId: turn.sessionId, turnNumber: turn.turnNumber, queryJson, status: outcome.status };
    if (outcome.answerJson !== undefined) record.answerJson = outcome.answerJson;
    // Empty lists are left out: the thread writes them as empty, and each one would be copied to it.
    const evidence = outcome.evidence;
    if (evidence?.declaredReads.length) record.declaredReads = evidence.declaredReads;
    if (evidence?.declaredWrites.length) record.declaredWrites = evidence.declaredWrites;
    if (evidence?.realizedWrites.length) record.realizedWrites = evidence.realizedWrites;
    if (evidence?.externalCalls.length) record.externalCalls = evidence.externalCalls;
    if (evidence?.capabilityViolations.length) record.capabilityViolations = evidence.capabilityViolations;
    ledger.record(record);
  }

  private ambientSession(appId: string, tier: string): AmbientSession {
    const key = `${tier}\0${appId}`;
    let session = this.ambient.get(key);
    const now = Date.now();
    if (!session || now - session.startedAt >= AMBIENT_SESSION_MS) {
      const id = newSessionId();
      const previous = session;
      const ledger = this.options.ledger;
      const started: AmbientSession = { id, startedAt: now, turns: 0, ready: Promise.resolve(), started: ledger === undefined };
      if (ledger !== undefined) started.ready = ledger.startSession(tier, id).then(() => void (started.started = true));
      session = started;
      this.ambient.set(key, session);
      // The finished session's chain tails need not stay cached.
      if (previous) this.options.ledger?.forgetSession(tier, previous.id);
    }
    return session;
  }

  /** Writes what is queued and closes the ledger files kept open. */
  async close(): Promise<void> {
    await this.options.ledger?.close();
  }
}
