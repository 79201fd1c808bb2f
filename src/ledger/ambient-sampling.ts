/**
 * What is ledgered of an app's ambient session (the requests that name no
 * session, which take most of the traffic): `spec.ledger.ambient` is `full`
 * (every turn, the default), `sampled` (one turn in 1/sampleRate) or `off`.
 * Stored sessions are always ledgered in full. Whatever the mode, a turn with
 * evidence of a refusal (a capability violation, a write-surface mismatch, a
 * denied call) is always kept: that is what the ledger is for.
 *
 * Sampling is by turn number, not by chance: turn n is kept when
 * floor(n * rate) moves past floor((n - 1) * rate), so exactly one turn in
 * 1/rate is kept, evenly spread, and the turn numbers of the kept entries show
 * how many were left out between them.
 */
import type { TurnEvidence } from './turn-evidence.js';

export type AmbientLedgerMode = 'full' | 'sampled' | 'off';

/** One turn in a hundred. */
export const DEFAULT_SAMPLE_RATE = 0.01;

/** Final statuses that are refusals: their turn is kept in every mode. */
const REFUSALS = new Set(['UHLP_CAPABILITY_DENIED', 'UHLP_WRITE_SURFACE_MISMATCH', 'UHLP_WEB_HOST_NOT_ALLOWED', 'UHLP_WEB_ADDRESS_NOT_ALLOWED', 'UHLP_WEB_METHOD_NOT_ALLOWED', 'UHLP_MCP_UNAUTHORIZED']);

/** Whether ambient turn `turnNumber` (from 1) is ledgered by its sample, before its outcome is known. */
export function keepsAmbientTurn(mode: AmbientLedgerMode | undefined, sampleRate: number | undefined, turnNumber: number): boolean {
  if (mode === undefined || mode === 'full') return true;
  if (mode === 'off') return false;
  const rate = sampleRate ?? DEFAULT_SAMPLE_RATE;
  if (rate >= 1) return true;
  return Math.floor(turnNumber * rate) > Math.floor((turnNumber - 1) * rate);
}

/** A turn whose evidence must be kept whatever the mode: a refusal, or any capability violation. */
export function mustKeepTurn(status: string, evidence: TurnEvidence | undefined): boolean {
  return (evidence !== undefined && evidence.capabilityViolations.length > 0) || REFUSALS.has(status);
}
