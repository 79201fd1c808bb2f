/**
 * The messages between the core and its ledger thread (turn-ledger-thread.ts on
 * the core's side, ledger-worker.ts on the thread's), and the one function that
 * turns a turn into the input of its two ledger entries, wherever it runs.
 */
import type { SessionStart, TurnInput } from './file-ledger.js';
import type { PruneReport } from './ledger-prune.js';
import type { RetentionPolicy } from './ledger-retention.js';
import { hashPayload, sha256, type CapabilityViolationRecord, type EvidenceRef, type ExternalCall, type RealizedWriteRef } from './ledger-entry.js';

/**
 * One turn as the ingress saw it; hashed and written off the request thread.
 * Both payloads travel as the JSON text the core already has, so handing a turn
 * over copies strings, not object graphs.
 */
export interface TurnRecord {
  tier: string;
  sessionId: string;
  turnNumber: number;
  /** The execution's id (X-Request-ID), recorded in the exec entry. */
  requestId?: string;
  /** The canonical JSON of the request data the component got; its sha256 is the entry's query_hash. */
  queryJson: string;
  /** The sandbox's /execute answer as it came; the hash of its `data` is the result_hash. Absent when the turn failed before an answer. */
  answerJson?: string;
  status: string;
  declaredReads?: EvidenceRef[];
  declaredWrites?: EvidenceRef[];
  realizedWrites?: RealizedWriteRef[];
  externalCalls?: ExternalCall[];
  capabilityViolations?: CapabilityViolationRecord[];
}

export type ToLedgerThread =
  | { kind: 'start'; id: number; tier: string; sessionId: string; meta?: SessionStart }
  /**
   * Turns as lines of encodeTurn(): one string crosses to the thread, not an
   * array of objects. With `seq` (sync and fsync durability) the thread answers
   * `written` once the batch is written (and flushed).
   */
  | { kind: 'turns'; lines: string; seq?: number }
  | { kind: 'forget'; tier: string; sessionId: string }
  | { kind: 'prune'; id: number; policy: RetentionPolicy; sessionTtlMs: number }
  | { kind: 'close'; id: number };

export type FromLedgerThread =
  | { kind: 'done'; id: number; error?: string; report?: PruneReport }
  | { kind: 'turn-failed'; sessionId: string; turnNumber: number; error: string }
  | { kind: 'written'; seq: number; failed: Array<{ sessionId: string; turnNumber: number; error: string }> };

/**
 * A turn as one line: tab-separated tier, session, turn number, status, request
 * id, query JSON, answer JSON (empty when none) and evidence JSON (empty when
 * there is none). JSON text has no raw tab or line break inside a string, and
 * the ones a runner may put between tokens are whitespace, so they become
 * spaces. Request ids are printable (an HTTP one has neither); another source's
 * tab or line break would become a space too.
 */
export function encodeTurn(record: TurnRecord): string {
  const { declaredReads, declaredWrites, realizedWrites, externalCalls, capabilityViolations } = record;
  const evidence =
    declaredReads || declaredWrites || realizedWrites || externalCalls || capabilityViolations
      ? JSON.stringify({ declaredReads, declaredWrites, realizedWrites, externalCalls, capabilityViolations })
      : '';
  const answer = record.answerJson === undefined ? '' : oneLine(record.answerJson);
  const requestId = record.requestId === undefined ? '' : oneLine(record.requestId);
  return `${record.tier}\t${record.sessionId}\t${record.turnNumber}\t${record.status}\t${requestId}\t${record.queryJson}\t${answer}\t${evidence}\n`;
}

const JSON_LAYOUT = /[\t\n\r]/g;

/** JSON text on one line without tabs; looked for first, as most answers have neither. */
function oneLine(json: string): string {
  return json.includes('\n') || json.includes('\t') || json.includes('\r') ? json.replace(JSON_LAYOUT, ' ') : json;
}

/** The turns of lines written by encodeTurn(). */
export function decodeTurns(lines: string): TurnRecord[] {
  const turns: TurnRecord[] = [];
  let start = 0;
  while (start < lines.length) {
    const end = lines.indexOf('\n', start);
    const [tier, sessionId, turnNumber, status, requestId, queryJson, answerJson, evidence] = lines.slice(start, end).split('\t') as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    start = end + 1;
    const record: TurnRecord = { tier, sessionId, turnNumber: Number(turnNumber), status, queryJson };
    if (requestId !== '') record.requestId = requestId;
    if (answerJson !== '') record.answerJson = answerJson;
    if (evidence !== '') Object.assign(record, JSON.parse(evidence) as Partial<TurnRecord>);
    turns.push(record);
  }
  return turns;
}

/** The ledger input of a turn: its payloads hashed. */
export function turnInput(record: TurnRecord): TurnInput {
  return {
    sessionId: record.sessionId,
    turnNumber: record.turnNumber,
    ...(record.requestId !== undefined ? { requestId: record.requestId } : {}),
    queryHash: sha256(record.queryJson),
    resultHash: record.answerJson === undefined ? null : hashPayload((JSON.parse(record.answerJson) as { data?: unknown }).data),
    status: record.status,
    declaredReads: record.declaredReads,
    declaredWrites: record.declaredWrites,
    realizedWrites: record.realizedWrites,
    externalCalls: record.externalCalls,
    capabilityViolations: record.capabilityViolations,
  };
}
