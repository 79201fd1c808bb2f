/**
 * The entries of a session's ledgers (FR-RT-006/007): an L-EXEC entry and an
 * L-EVIDENCE entry per turn, each hash-chained within its file. `entry_hash` is
 * the sha256 of the canonical JSON of the entry without `entry_hash`; since that
 * includes `previous_hash`, changing, dropping or moving any entry breaks the
 * chain from that point on.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from './canonical-json.js';

export const LEDGER_SCHEMA_VERSION = 1;

export type LedgerKind = 'exec' | 'evidence';

/** A file the turn declared it reads or writes. */
export interface EvidenceRef {
  path: string;
  /** `sha256:<hex>` of the content, when known. */
  hash?: string;
  role?: string;
}

/** A call that left the sandbox: MCP tool, LLM, web fetch, shell. */
export interface ExternalCall {
  kind: string;
  target: string;
  status?: string;
  duration_ms?: number;
}

/** A blocked operation (FR-RT-010/011). */
export interface CapabilityViolationRecord {
  /** What was attempted, e.g. `write output/x.txt`. */
  operation: string;
  /** The capability that refused it, e.g. `capabilities.write`. */
  capability: string;
  detail?: string;
  timestamp: string;
}

interface ChainFields {
  schema_version: number;
  session_id: string;
  turn_number: number;
  timestamp: string;
  previous_hash: string | null;
  entry_hash: string;
}

export interface ExecEntry extends ChainFields {
  entry_type: 'L-EXEC';
  query_hash: string;
  /** Null when the turn failed before producing a result. */
  result_hash: string | null;
  status: string;
}

export interface EvidenceEntry extends ChainFields {
  entry_type: 'L-EVIDENCE';
  work_order_id?: string;
  status: string;
  declared_reads: EvidenceRef[];
  declared_writes: EvidenceRef[];
  external_calls: ExternalCall[];
  capability_violations: CapabilityViolationRecord[];
}

export type LedgerEntry = ExecEntry | EvidenceEntry;

/** `sha256:<hex>` of the entry without its `entry_hash`. */
export function computeEntryHash(entry: Record<string, unknown>): string {
  const { entry_hash: _ignored, ...rest } = entry;
  return sha256(canonicalJson(rest));
}

/** `sha256:<hex>` of a payload: bytes as they are, a string as UTF-8, anything else as canonical JSON. */
export function hashPayload(payload: unknown): string {
  if (payload instanceof Uint8Array) return sha256(payload);
  if (typeof payload === 'string') return sha256(payload);
  return sha256(canonicalJson(payload ?? null));
}

/** `sha256:<hex>`; the one-shot hash, which skips the Hash object a stream of updates needs. */
export function sha256(data: string | Uint8Array): string {
  return `sha256:${hash('sha256', data, 'hex')}`;
}
