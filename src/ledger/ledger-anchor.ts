/**
 * The anchor retention leaves when it removes the oldest segments of a session
 * (ledger-prune.ts): `anchor.json` in the session's ledger directory says which
 * segments are gone (1 to `through_segment`, both ledgers), how many entries
 * they held, and the last hash of each ledger's removed part. The first segment
 * that remains opens with a header whose `previous_hash` is that hash, so what
 * remains still verifies, and verification reports the gap instead of a broken
 * chain. Each prune replaces the anchor with one covering everything removed so
 * far.
 *
 * The anchor is sealed like the chain (`anchor_hash`: sha256 of its canonical
 * JSON, or HMAC-SHA256 under the ledger key with `hash_alg` and `key_id`), so a
 * forged anchor cannot hide a removed segment from a verification with the key.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { canonicalJson } from '../shared/canonical-json.js';
import { replaceFile } from './durable-files.js';
import { sha256, type LedgerKind } from './ledger-entry.js';
import { KEYED_HASH_ALG, type LedgerKey, type LedgerKeyring } from './ledger-key.js';
import { ANCHOR_FILE } from './ledger-paths.js';

export const ANCHOR_TYPE = 'L-ANCHOR';

export interface AnchoredLedger {
  /** Lines removed (segment headers included). */
  lines: number;
  /** Entries removed (lines less the segment headers). */
  entries: number;
  /** The last hash of the removed part: the first remaining segment's header links to it. */
  last_hash: string | null;
  /** The timestamp of the last removed entry. */
  last_timestamp?: string;
}

export interface LedgerAnchor {
  anchor_type: typeof ANCHOR_TYPE;
  schema_version: 1;
  session_id: string;
  /** Segments 1 to this one of both ledgers were removed. */
  through_segment: number;
  ledgers: Record<LedgerKind, AnchoredLedger>;
  /** When the last prune ran. */
  pruned_at: string;
  /** Why: the retention limit that removed them (`max age 7d (plane production)`). */
  reason: string;
  hash_alg?: typeof KEYED_HASH_ALG;
  key_id?: string;
  anchor_hash: string;
}

/** The anchor with its seal (`anchor_hash` over the rest; HMAC under `key` when given). */
export function sealAnchor(anchor: Omit<LedgerAnchor, 'anchor_hash' | 'hash_alg' | 'key_id'>, key: LedgerKey | undefined): LedgerAnchor {
  const fields = key === undefined ? { ...anchor } : { ...anchor, hash_alg: KEYED_HASH_ALG, key_id: key.id };
  // Sealed as it will be read back: through a JSON round trip.
  const rest = JSON.parse(JSON.stringify(fields)) as Omit<LedgerAnchor, 'anchor_hash'>;
  const canonical = canonicalJson(rest);
  return { ...rest, anchor_hash: key === undefined ? sha256(canonical) : key.seal(canonical) };
}

/**
 * Why an anchor cannot be trusted by a verification with these keys, or
 * undefined when it can: like a checkpoint, a plain anchor is trusted only
 * when no key is given, and a keyed one only with its key.
 */
export function anchorDistrust(anchor: LedgerAnchor, keys: LedgerKeyring | undefined): string | undefined {
  const keyed = keys !== undefined && keys.size > 0;
  const { anchor_hash: seal, ...rest } = anchor;
  if (anchor.hash_alg === undefined) {
    if (keyed) return 'is not sealed with the ledger key (written without it, or forged)';
    return sha256(canonicalJson(rest)) === seal ? undefined : 'does not match its anchor_hash (anchor was changed)';
  }
  if (anchor.hash_alg !== KEYED_HASH_ALG) return `has an unknown hash_alg ${JSON.stringify(anchor.hash_alg).slice(0, 40)}`;
  if (!keyed) return `is sealed with ledger key ${String(anchor.key_id)}, which was not given`;
  const key = keys.get(String(anchor.key_id));
  if (key === undefined) return `is sealed with key id ${String(anchor.key_id).slice(0, 40)}, not with the key given`;
  return key.seal(canonicalJson(rest)) === seal ? undefined : 'does not match its seal (anchor was changed)';
}

/** The session's anchor; undefined when there is none; an error text when the file is not an anchor. */
export function readAnchor(dir: string): LedgerAnchor | { error: string } | undefined {
  let text: string;
  try {
    text = readFileSync(path.join(dir, ANCHOR_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<LedgerAnchor>;
    const ledgers = value.ledgers;
    if (
      value.anchor_type !== ANCHOR_TYPE ||
      !Number.isSafeInteger(value.through_segment) ||
      (value.through_segment ?? 0) < 1 ||
      typeof value.anchor_hash !== 'string' ||
      typeof ledgers !== 'object' ||
      ledgers === null ||
      typeof ledgers.exec !== 'object' ||
      typeof ledgers.evidence !== 'object'
    ) {
      return { error: 'is not a ledger anchor' };
    }
    return value as LedgerAnchor;
  } catch (error) {
    return { error: `is not JSON: ${(error as Error).message}` };
  }
}

/** Replaces the session's anchor at once. */
export function writeAnchor(dir: string, anchor: LedgerAnchor): void {
  replaceFile(path.join(dir, ANCHOR_FILE), `${JSON.stringify(anchor)}\n`);
}
