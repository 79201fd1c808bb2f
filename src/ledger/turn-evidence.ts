/**
 * What one execution did beyond its sandbox, gathered while it runs so that its
 * ledger evidence entry can list it: external calls (tools, LLM, shell, web) and
 * capability violations. Tools find the collector of their execution by request id.
 */
import type { CapabilityViolationRecord, EvidenceRef, ExternalCall } from './ledger-entry.js';

export interface TurnEvidence {
  readonly declaredReads: EvidenceRef[];
  readonly declaredWrites: EvidenceRef[];
  readonly externalCalls: ExternalCall[];
  readonly capabilityViolations: CapabilityViolationRecord[];
}

export class TurnEvidenceRegistry {
  private readonly open = new Map<string, TurnEvidence>();

  /** Starts collecting for a request; the returned record is filled until `finish`. */
  begin(requestId: string): TurnEvidence {
    const evidence: TurnEvidence = { declaredReads: [], declaredWrites: [], externalCalls: [], capabilityViolations: [] };
    this.open.set(requestId, evidence);
    return evidence;
  }

  /** The collector of a running request, if it has one. */
  get(requestId: string): TurnEvidence | undefined {
    return this.open.get(requestId);
  }

  finish(requestId: string): TurnEvidence | undefined {
    const evidence = this.open.get(requestId);
    this.open.delete(requestId);
    return evidence;
  }
}
