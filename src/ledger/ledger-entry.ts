/**
 * The entries of a session's ledgers (FR-RT-006/007): an L-EXEC entry and an
 * L-EVIDENCE entry per turn, each hash-chained within its file. `entry_hash` is
 * the sha256 of the canonical JSON of the entry without `entry_hash`; since that
 * includes `previous_hash`, changing, dropping or moving any entry breaks the
 * chain from that point on. With a ledger key (ledger-key.ts) the hash is an
 * HMAC instead, `hmac-sha256:<hex>`, and the entry says so in `hash_alg` and
 * names the key in `key_id`; both are inside what the HMAC covers.
 */
import { hash } from 'node:crypto';
import { canonicalJson } from '../shared/canonical-json.js';
import type { KEYED_HASH_ALG, LedgerKey } from './ledger-key.js';

export const LEDGER_SCHEMA_VERSION = 1;

export type LedgerKind = 'exec' | 'evidence';

/** A file the turn declared it reads or writes. */
export interface EvidenceRef {
  path: string;
  /** `sha256:<hex>` of the content, when known. */
  hash?: string;
  role?: string;
}

/** A file the turn left in its writable directories (FR-RT-015), found by the core's walk after it answered. */
export interface RealizedWriteRef {
  /** `tmp/<path>` or `output/<path>` (the session directory left out), or where it was found outside them. */
  path: string;
  /** `sha256:<hex>` of a regular file. */
  hash?: string;
  size: number;
  /** `file`, or `symlink`, `fifo`, `socket`, `other`, `over-limit`. */
  kind: string;
}

/** A call that left the sandbox: MCP tool, LLM, web fetch, shell. */
export interface ExternalCall {
  /** `mcp`, `llm`, ... */
  kind: string;
  /** The tool, or for `llm` the provider (`openai-compatible`, `scripted`). */
  target: string;
  /** `ok` or the error code. */
  status?: string;
  duration_ms?: number;
  /** LLM calls: the model the call named (one of the app's capability models). */
  model?: string;
  /** LLM calls: `sha256:<hex>` of the canonical JSON of the messages sent. */
  prompt_hash?: string;
  /** LLM calls: `sha256:<hex>` of the canonical JSON of the answer, `{text, toolCalls}`; absent when there was none. */
  answer_hash?: string;
  /** LLM calls: tokens spent (0 and 0 for a cache hit). */
  tokens?: { prompt: number; completion: number };
  /** LLM calls: answered from the core's answer cache, not by the model. */
  cached?: boolean;
  /** Federated MCP calls: the server (`app.<name>`, `community.<name>`). */
  server?: string;
  /** Federated MCP calls: `sha256:<hex>` of the canonical JSON of the arguments (never the arguments themselves). */
  arguments_hash?: string;
  /** The secrets the call carried (a web fetch's injected credentials): name, key and version, never a value. */
  secrets?: Array<{ name: string; key: string; version: string }>;
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
  /** `hmac-sha256` when sealed with a ledger key; absent for plain sha256. */
  hash_alg?: typeof KEYED_HASH_ALG;
  /** The id of the ledger key (ledgerKeyId), with `hash_alg`. */
  key_id?: string;
}

export interface ExecEntry extends ChainFields {
  entry_type: 'L-EXEC';
  query_hash: string;
  /**
   * The execution's id (the `/execute` requestId, the answer's X-Request-ID), so
   * that an answer a client holds can be found in the ledger. Absent in entries
   * written before it was recorded, and for turns that had none.
   */
  request_id?: string;
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
  /** What the turn wrote, when it wrote anything (absent otherwise, which keeps most entries short). */
  realized_writes?: RealizedWriteRef[];
  external_calls: ExternalCall[];
  capability_violations: CapabilityViolationRecord[];
}

export type LedgerEntry = ExecEntry | EvidenceEntry;

/** The `entry_type` of a segment's first line. */
export const SEGMENT_ENTRY_TYPE = 'L-SEGMENT';

/**
 * The first line of every segment after the first (ledger-segments.ts): it says
 * which segment it opens, and its `previous_hash` is the last hash of the
 * segment before, so the chain runs on across files and each segment can be
 * verified on its own, then joined to its predecessor. Sealed like any entry.
 */
export interface SegmentEntry extends Omit<ChainFields, 'turn_number'> {
  entry_type: typeof SEGMENT_ENTRY_TYPE;
  /** The segment this line opens: 2 for `exec.000002.jsonl`. */
  segment: number;
}

/** `sha256:<hex>` of the entry without its `entry_hash`, or with `key` its `hmac-sha256:<hex>`. */
export function computeEntryHash(entry: Record<string, unknown>, key?: LedgerKey): string {
  const { entry_hash: _ignored, ...rest } = entry;
  const canonical = canonicalJson(rest);
  return key === undefined ? sha256(canonical) : key.seal(canonical);
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
