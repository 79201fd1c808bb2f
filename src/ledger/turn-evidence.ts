/**
 * What one execution did beyond its sandbox, gathered while it runs so that its
 * ledger evidence entry can list it: external calls (tools, LLM, shell, web) and
 * capability violations. The ingress owns one per turn and fills it from the
 * MCP layer's record when the execution ends.
 */
import type { CapabilityViolationRecord, EvidenceRef, ExternalCall } from './ledger-entry.js';

export interface TurnEvidence {
  readonly declaredReads: EvidenceRef[];
  readonly declaredWrites: EvidenceRef[];
  readonly externalCalls: ExternalCall[];
  readonly capabilityViolations: CapabilityViolationRecord[];
}

export function newTurnEvidence(): TurnEvidence {
  return { declaredReads: [], declaredWrites: [], externalCalls: [], capabilityViolations: [] };
}
