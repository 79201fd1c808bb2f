/**
 * Checkpoints (FR-RT-009): records in `checkpoints.jsonl` next to the ledgers,
 * each naming a ledger, a line, that entry's hash and the replay state at that
 * entry. A checkpoint is only written after the chain up to it verified, so
 * verification and replay can start there: they check that the checkpointed
 * entry still has its hash and go on from the next line.
 *
 * Verification trusts what a checkpoint says about the lines before it, so with
 * a ledger key a checkpoint is sealed like an entry (`hash_alg`, `key_id`,
 * `checkpoint_hash` over the rest), and a keyed verification ignores, and
 * reports, one that is not: otherwise a forged checkpoint at the end of a
 * re-hashed chain would vouch for it.
 */
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { canonicalJson } from '../shared/canonical-json.js';
import type { LedgerKind } from './ledger-entry.js';
import { KEYED_HASH_ALG, type LedgerKey, type LedgerKeyring } from './ledger-key.js';

export interface LedgerCheckpoint {
  ledger: LedgerKind;
  /** The segment of the ledger the line is in (ledger-paths.ts). @defaultValue 1 when absent (checkpoints from before segments) */
  segment?: number;
  line: number;
  entry_hash: string;
  /** Timestamp of the checkpointed entry (ISO 8601): replay to a time uses the latest one at or before it. */
  entry_timestamp: string;
  created_at: string;
  /** The replay state after the checkpointed entry; null for a segment's closing checkpoint. */
  state: unknown;
  /**
   * Written by the writer when it closed the segment: `line` is the segment's
   * last line and `entry_hash` its last hash, as the writer chained them. It
   * carries no replay state.
   */
  closes_segment?: boolean;
  /** With a ledger key: `hmac-sha256`, the key's id, and the HMAC of the checkpoint without `checkpoint_hash`. */
  hash_alg?: typeof KEYED_HASH_ALG;
  key_id?: string;
  checkpoint_hash?: string;
}

/** The checkpoint sealed with `key` (unchanged without one). */
export function sealCheckpoint(checkpoint: LedgerCheckpoint, key: LedgerKey | undefined): LedgerCheckpoint {
  if (key === undefined) return checkpoint;
  const { checkpoint_hash: _old, ...fields } = { ...checkpoint, hash_alg: KEYED_HASH_ALG, key_id: key.id };
  // Sealed as it will be read back: the state through a JSON round trip (dates, undefined, toJSON).
  const rest = JSON.parse(JSON.stringify(fields)) as Omit<LedgerCheckpoint, 'checkpoint_hash'>;
  return { ...rest, checkpoint_hash: key.seal(canonicalJson(rest)) };
}

/**
 * Why a checkpoint cannot be trusted by a verification with these keys, or
 * undefined when it can. Without keys, plain checkpoints are trusted as before
 * and sealed ones cannot be checked; with keys, only a checkpoint sealed with
 * one of them is.
 */
export function checkpointDistrust(checkpoint: LedgerCheckpoint, keys: LedgerKeyring | undefined): string | undefined {
  const keyed = keys !== undefined && keys.size > 0;
  if (checkpoint.hash_alg === undefined) return keyed ? 'is not sealed with the ledger key (written without it, or forged)' : undefined;
  if (checkpoint.hash_alg !== KEYED_HASH_ALG) return `has an unknown hash_alg ${JSON.stringify(checkpoint.hash_alg).slice(0, 40)}`;
  if (!keyed) return `is sealed with ledger key ${String(checkpoint.key_id)}, which was not given`;
  const key = keys.get(String(checkpoint.key_id));
  if (key === undefined) return `is sealed with key id ${String(checkpoint.key_id).slice(0, 40)}, not with the key given`;
  const { checkpoint_hash: seal, ...rest } = checkpoint;
  return key.seal(canonicalJson(rest)) === seal ? undefined : 'does not match its seal (checkpoint was changed)';
}

/** All checkpoints of a session, in file order; a missing file means none. Unreadable lines are skipped. */
export async function readCheckpoints(file: string): Promise<LedgerCheckpoint[]> {
  try {
    return parseCheckpoints(await readFile(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** readCheckpoints, blocking: for the ledger thread and the verifier's workers. */
export function readCheckpointsSync(file: string): LedgerCheckpoint[] {
  try {
    return parseCheckpoints(readFileSync(file, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

function parseCheckpoints(text: string): LedgerCheckpoint[] {
  const checkpoints: LedgerCheckpoint[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      const value = JSON.parse(raw) as Partial<LedgerCheckpoint>;
      const segmentOk = value.segment === undefined || (Number.isSafeInteger(value.segment) && value.segment >= 1);
      if ((value.ledger === 'exec' || value.ledger === 'evidence') && Number.isInteger(value.line) && typeof value.entry_hash === 'string' && segmentOk) {
        checkpoints.push(value as LedgerCheckpoint);
      }
    } catch {
      // A torn last line of a crashed write is not a checkpoint; earlier ones still are.
    }
  }
  return checkpoints;
}

/** The segment a checkpoint is in (1 for checkpoints written before segments). */
export function checkpointSegment(checkpoint: LedgerCheckpoint): number {
  return typeof checkpoint.segment === 'number' ? checkpoint.segment : 1;
}

/**
 * The latest checkpoint of `ledger` (the furthest into the ledger), optionally
 * the latest whose entry is at or before `before`; `withState` skips the
 * closing checkpoints of segments, which carry no replay state.
 */
export function latestCheckpoint(checkpoints: LedgerCheckpoint[], ledger: LedgerKind, before?: Date, options: { withState?: boolean } = {}): LedgerCheckpoint | undefined {
  let best: LedgerCheckpoint | undefined;
  for (const checkpoint of checkpoints) {
    if (checkpoint.ledger !== ledger) continue;
    if (options.withState && checkpoint.closes_segment) continue;
    if (before && !(Date.parse(checkpoint.entry_timestamp) <= before.getTime())) continue;
    if (!best || compareCheckpoints(checkpoint, best) > 0) best = checkpoint;
  }
  return best;
}

/** Orders checkpoints by where they are in the ledger: segment, then line. */
export function compareCheckpoints(a: LedgerCheckpoint, b: LedgerCheckpoint): number {
  return checkpointSegment(a) - checkpointSegment(b) || a.line - b.line;
}
