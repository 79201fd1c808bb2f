/**
 * What one execution did beyond answering, gathered while it runs so that its
 * ledger evidence entry can list it: the writes it declared and made, external
 * calls (tools, LLM, shell, web) and capability violations. The ingress owns one
 * per turn and fills it from the MCP layer's record and the write surface's walk
 * when the execution ends.
 */
import type { CapabilityViolationRecord, EvidenceRef, ExternalCall, RealizedWriteRef } from './ledger-entry.js';

export interface TurnEvidence {
  readonly declaredReads: EvidenceRef[];
  readonly declaredWrites: EvidenceRef[];
  readonly realizedWrites: RealizedWriteRef[];
  readonly externalCalls: ExternalCall[];
  readonly capabilityViolations: CapabilityViolationRecord[];
}

export function newTurnEvidence(): TurnEvidence {
  return { declaredReads: [], declaredWrites: [], realizedWrites: [], externalCalls: [], capabilityViolations: [] };
}
