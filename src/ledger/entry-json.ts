/**
 * The canonical JSON of ledger entries, written field by field with the keys in
 * code-unit order rather than by the general canonicalJson walk: two entries are
 * sealed per turn, on the ledger thread, and the walk's key sorting and string
 * checks were most of that thread's time. A test holds both to the same output.
 */
import { canonicalJson, quote } from './canonical-json.js';
import type { EvidenceEntry, ExecEntry } from './ledger-entry.js';

const nullable = (text: string | null): string => (text === null ? 'null' : quote(text));
const list = (items: readonly unknown[]): string => (items.length === 0 ? '[]' : canonicalJson(items));
/** `hash_alg` and `key_id` of a keyed entry, in their sorted place (after entry_type / external_calls, before previous_hash). */
const sealing = (entry: { hash_alg?: string; key_id?: string }): string =>
  entry.hash_alg === undefined ? '' : `"hash_alg":${quote(entry.hash_alg)},"key_id":${quote(entry.key_id ?? '')},`;

/** canonicalJson(entry) for an exec entry without its entry_hash. */
export function execEntryJson(entry: Omit<ExecEntry, 'entry_hash'>): string {
  return (
    `{"entry_type":"L-EXEC",${sealing(entry)}"previous_hash":${nullable(entry.previous_hash)},"query_hash":${quote(entry.query_hash)},` +
    `"result_hash":${nullable(entry.result_hash)},"schema_version":${canonicalJson(entry.schema_version)},"session_id":${quote(entry.session_id)},` +
    `"status":${quote(entry.status)},"timestamp":${quote(entry.timestamp)},"turn_number":${canonicalJson(entry.turn_number)}}`
  );
}

/** canonicalJson(entry) for an evidence entry without its entry_hash. */
export function evidenceEntryJson(entry: Omit<EvidenceEntry, 'entry_hash'>): string {
  return (
    `{"capability_violations":${list(entry.capability_violations)},"declared_reads":${list(entry.declared_reads)},` +
    `"declared_writes":${list(entry.declared_writes)},"entry_type":"L-EVIDENCE","external_calls":${list(entry.external_calls)},` +
    `${sealing(entry)}"previous_hash":${nullable(entry.previous_hash)},` +
    `${entry.realized_writes === undefined ? '' : `"realized_writes":${list(entry.realized_writes)},`}"schema_version":${canonicalJson(entry.schema_version)},"session_id":${quote(entry.session_id)},` +
    `"status":${quote(entry.status)},"timestamp":${quote(entry.timestamp)},"turn_number":${canonicalJson(entry.turn_number)}` +
    `${entry.work_order_id === undefined ? '' : `,"work_order_id":${quote(entry.work_order_id)}`}}`
  );
}
