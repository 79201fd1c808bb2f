/**
 * The messages between the core and its ledger thread (turn-ledger-thread.ts on
 * the core's side, ledger-worker.ts on the thread's), and the one function that
 * turns a turn into its two ledger entries, wherever it runs.
 */
import type { FileLedger } from './file-ledger.js';
import { hashPayload, type CapabilityViolationRecord, type EvidenceRef, type ExternalCall } from './ledger-entry.js';

/** One turn as the ingress saw it; hashed and written off the request thread. */
export interface TurnRecord {
  tier: string;
  sessionId: string;
  turnNumber: number;
  /** The request data the component got; its canonical hash is the entry's query_hash. */
  query: unknown;
  /** What the component answered; undefined when the turn failed before an answer. */
  result: unknown;
  status: string;
  declaredReads?: EvidenceRef[];
  declaredWrites?: EvidenceRef[];
  externalCalls?: ExternalCall[];
  capabilityViolations?: CapabilityViolationRecord[];
}

export type ToLedgerThread =
  | { kind: 'start'; id: number; tier: string; sessionId: string }
  | { kind: 'turns'; turns: TurnRecord[] }
  | { kind: 'forget'; tier: string; sessionId: string }
  | { kind: 'close'; id: number };

export type FromLedgerThread =
  | { kind: 'done'; id: number; error?: string }
  | { kind: 'turn-failed'; sessionId: string; turnNumber: number; error: string };

/** Writes a turn's exec and evidence entries. */
export function writeTurn(ledger: FileLedger, record: TurnRecord): Promise<unknown> {
  return ledger.recordTurn({
    sessionId: record.sessionId,
    turnNumber: record.turnNumber,
    queryHash: hashPayload(record.query),
    resultHash: record.result === undefined ? null : hashPayload(record.result),
    status: record.status,
    declaredReads: record.declaredReads,
    declaredWrites: record.declaredWrites,
    externalCalls: record.externalCalls,
    capabilityViolations: record.capabilityViolations,
  });
}
