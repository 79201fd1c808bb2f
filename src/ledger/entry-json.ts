/**
 * The canonical JSON of ledger entries, written field by field with the keys in
 * code-unit order rather than by the general canonicalJson walk: two entries are
 * sealed per turn, on the ledger thread, and the walk's key sorting and string
 * checks were most of that thread's time. A test holds both to the same output.
 */
import { canonicalJson, quote } from '../shared/canonical-json.js';
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
    `${entry.request_id === undefined ? '' : `"request_id":${quote(entry.request_id)},`}"result_hash":${nullable(entry.result_hash)},"schema_version":${canonicalJson(entry.schema_version)},"session_id":${quote(entry.session_id)},` +
    `"status":${quote(entry.status)},"timestamp":${quote(entry.timestamp)},"turn_number":${canonicalJson(entry.turn_number)}}`
  );
}

/**
 * The canonical JSON of an exec or evidence entry as the fast writers make it,
 * or undefined for any other entry. Verification compares it with the text of
 * the line: when they are equal the line is that canonical form, found without
 * the general walk; any other line takes the walk.
 */
export function knownEntryJson(entry: Record<string, unknown>): string | undefined {
  if (entry.entry_type === 'L-EXEC') return execEntryJson(entry as unknown as ExecEntry);
  if (entry.entry_type !== 'L-EVIDENCE') return undefined;
  const evidence = entry as unknown as EvidenceEntry;
  // The fast writer takes these lists as given; anything else is left to the walk.
  const lists = [evidence.capability_violations, evidence.declared_reads, evidence.declared_writes, evidence.external_calls];
  if (!lists.every(Array.isArray) || (evidence.realized_writes !== undefined && !Array.isArray(evidence.realized_writes))) return undefined;
  return evidenceEntryJson(evidence);
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
