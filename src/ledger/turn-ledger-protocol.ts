/**
 * The messages between the core and its ledger thread (turn-ledger-thread.ts on
 * the core's side, ledger-worker.ts on the thread's), and the one function that
 * turns a turn into its two ledger entries, wherever it runs.
 */
import type { FileLedger } from './file-ledger.js';
import { hashPayload, sha256, type CapabilityViolationRecord, type EvidenceRef, type ExternalCall } from './ledger-entry.js';

/**
 * One turn as the ingress saw it; hashed and written off the request thread.
 * Both payloads travel as the JSON text the core already has, so handing a turn
 * over copies strings, not object graphs.
 */
export interface TurnRecord {
  tier: string;
  sessionId: string;
  turnNumber: number;
  /** The canonical JSON of the request data the component got; its sha256 is the entry's query_hash. */
  queryJson: string;
  /** The sandbox's /execute answer as it came; the hash of its `data` is the result_hash. Absent when the turn failed before an answer. */
  answerJson?: string;
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
    queryHash: sha256(record.queryJson),
    resultHash: record.answerJson === undefined ? null : hashPayload((JSON.parse(record.answerJson) as { data?: unknown }).data),
    status: record.status,
    declaredReads: record.declaredReads,
    declaredWrites: record.declaredWrites,
    externalCalls: record.externalCalls,
    capabilityViolations: record.capabilityViolations,
  });
}
