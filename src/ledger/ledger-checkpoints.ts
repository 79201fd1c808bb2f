/**
 * Checkpoints (FR-RT-009): records in `checkpoints.jsonl` next to the ledgers,
 * each naming a ledger, a line, that entry's hash and the replay state at that
 * entry. A checkpoint is only written after the chain up to it verified, so
 * verification and replay can start there: they check that the checkpointed
 * entry still has its hash and go on from the next line.
 */
import { readFile } from 'node:fs/promises';
import type { LedgerKind } from './ledger-entry.js';

export interface LedgerCheckpoint {
  ledger: LedgerKind;
  line: number;
  entry_hash: string;
  /** Timestamp of the checkpointed entry (ISO 8601): replay to a time uses the latest one at or before it. */
  entry_timestamp: string;
  created_at: string;
  /** The replay state after the checkpointed entry. */
  state: unknown;
}

/** All checkpoints of a session, in file order; a missing file means none. Unreadable lines are skipped. */
export async function readCheckpoints(file: string): Promise<LedgerCheckpoint[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const checkpoints: LedgerCheckpoint[] = [];
  for (const raw of text.split('\n')) {
    if (raw.trim() === '') continue;
    try {
      const value = JSON.parse(raw) as Partial<LedgerCheckpoint>;
      if ((value.ledger === 'exec' || value.ledger === 'evidence') && Number.isInteger(value.line) && typeof value.entry_hash === 'string') {
        checkpoints.push(value as LedgerCheckpoint);
      }
    } catch {
      // A torn last line of a crashed write is not a checkpoint; earlier ones still are.
    }
  }
  return checkpoints;
}

/** The latest checkpoint of `ledger`, optionally the latest whose entry is at or before `before`. */
export function latestCheckpoint(checkpoints: LedgerCheckpoint[], ledger: LedgerKind, before?: Date): LedgerCheckpoint | undefined {
  let best: LedgerCheckpoint | undefined;
  for (const checkpoint of checkpoints) {
    if (checkpoint.ledger !== ledger) continue;
    if (before && !(Date.parse(checkpoint.entry_timestamp) <= before.getTime())) continue;
    if (!best || checkpoint.line > best.line) best = checkpoint;
  }
  return best;
}
