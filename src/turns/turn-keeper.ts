/**
 * Sessions and the ledger at ingress: every execution is a turn of a session.
 * A client opens a stored session with `X-UHLP-Session: new` and continues it
 * with `X-UHLP-Session-ID: SES-...`. A request with neither is a turn of its app's
 * ambient session: one per app and deployment tier, started anew every hour and
 * never stored, so unsessioned traffic costs the runtime store nothing and the
 * ledger two appends to files it keeps open (not a directory per request). Both
 * ledger entries of a turn are hashed and written by the ledger thread,
 * failures included: after the answer in `async` durability, before it in
 * `sync` and `fsync` (record() then returns the promise to wait for). An app
 * may ledger only a sample of its ambient turns, or none (`spec.ledger.ambient`,
 * ambient-sampling.ts); refusals are ledgered whatever it says.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { SessionChoice } from './turn-event.js';
import type { AppLedgerSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import { keepsAmbientTurn, mustKeepTurn } from '../ledger/ambient-sampling.js';
import type { TurnEvidence } from '../ledger/turn-evidence.js';
import type { TurnLedgerThread } from '../ledger/turn-ledger-thread.js';
import type { TurnRecord } from '../ledger/turn-ledger-protocol.js';
import type { Metrics } from '../metrics.js';
import { newSessionId } from '../state/session-id.js';
import type { SessionStore } from '../state/session-store.js';

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
  /** The execution's id, recorded in the exec entry. */
  readonly requestId?: string;
  /** Ledgered whatever its outcome; false for an ambient turn its app's sampling leaves out (kept only for a refusal). */
  readonly sampled: boolean;
}

/** What the ledger needs to know of a turn when it begins. */
export interface TurnLedgering {
  /** The execution's id (the `/execute` requestId, X-Request-ID). */
  readonly requestId?: string;
  /** The app's `spec.ledger`. @defaultValue every turn ledgered */
  readonly policy?: AppLedgerSpec;
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
      store: SessionStore;
      sessionTtlMs: number;
      /** Where turns are written; undefined turns ledgers off. */
      ledger?: TurnLedgerThread;
      /** Counts the turns handed to the ledger (uhlp_ledger_turns_total). @defaultValue none counted */
      metrics?: Pick<Metrics, 'ledgerTurns'>;
    },
  ) {}

  /** Turns are ledgered (the core keeps a turn ledger). */
  get ledgers(): boolean {
    return this.options.ledger !== undefined;
  }

  /**
   * The turn a request is. A turn of an ambient session whose ledger files exist
   * is known at once, and is returned as it is rather than in a promise: that is
   * most requests.
   */
  begin(appId: string, tier: string, choice: SessionChoice, ledgering: TurnLedgering = {}): Turn | Promise<Turn> {
    if (choice === undefined) {
      const session = this.ambientSession(appId, tier);
      const turnNumber = ++session.turns;
      const policy = ledgering.policy;
      const turn: Turn = {
        sessionId: session.id,
        turnNumber,
        tier,
        ambient: true,
        ...(ledgering.requestId !== undefined ? { requestId: ledgering.requestId } : {}),
        sampled: keepsAmbientTurn(policy?.ambient, policy?.sampleRate, turnNumber),
      };
      return session.started ? turn : session.ready.then(() => turn);
    }
    return this.beginStored(appId, tier, choice, ledgering.requestId);
  }

  private async beginStored(appId: string, tier: string, choice: NonNullable<SessionChoice>, requestId: string | undefined): Promise<Turn> {
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
      turn = { sessionId: session.id, turnNumber: await store.nextTurn(session.id), tier, ambient: false, sampled: true, ...(requestId !== undefined ? { requestId } : {}) };
    } else {
      const session = await store.createSession({ appId, ttlMs: sessionTtlMs });
      turn = { sessionId: session.id, turnNumber: await store.nextTurn(session.id), tier, ambient: false, sampled: true, ...(requestId !== undefined ? { requestId } : {}) };
      await this.options.ledger?.startSession(tier, session.id, { appId, ambient: false });
    }
    return turn;
  }

  /**
   * Queues the turn's exec and evidence entries; never throws. `queryJson` is the
   * canonical JSON of the request data. With `async` durability (or no ledger, or
   * a turn its app's sampling leaves out) returns undefined: a failed write is
   * logged. With `sync` or `fsync` returns a promise that resolves once the
   * entries are written (and flushed), or rejects with UHLP_LEDGER_UNAVAILABLE:
   * the turn's answer waits for it.
   */
  record(turn: Turn, queryJson: string, outcome: TurnOutcome): Promise<void> | undefined {
    const ledger = this.options.ledger;
    if (ledger === undefined) return undefined;
    if (!turn.sampled && !mustKeepTurn(outcome.status, outcome.evidence)) return undefined;
    this.options.metrics?.ledgerTurns.labels(turn.tier).inc();
    const record: TurnRecord = { tier: turn.tier, sessionId: turn.sessionId, turnNumber: turn.turnNumber, queryJson, status: outcome.status };
    if (turn.requestId !== undefined) record.requestId = turn.requestId;
    if (outcome.answerJson !== undefined) record.answerJson = outcome.answerJson;
    // Empty lists are left out: the thread writes them as empty, and each one would be copied to it.
    const evidence = outcome.evidence;
    if (evidence?.declaredReads.length) record.declaredReads = evidence.declaredReads;
    if (evidence?.declaredWrites.length) record.declaredWrites = evidence.declaredWrites;
    if (evidence?.realizedWrites.length) record.realizedWrites = evidence.realizedWrites;
    if (evidence?.externalCalls.length) record.externalCalls = evidence.externalCalls;
    if (evidence?.capabilityViolations.length) record.capabilityViolations = evidence.capabilityViolations;
    return ledger.record(record);
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
      if (ledger !== undefined) started.ready = ledger.startSession(tier, id, { appId, ambient: true }).then(() => void (started.started = true));
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
