/**
 * Replay of a session ledger from its latest checkpoint (FR-RT-009): the state
 * stored in the checkpoint is merged with the entries written after it, and the
 * chain is verified on the way (FR-RT-008: a read of a tampered ledger throws
 * `UHLP_LEDGER_INTEGRITY`). Entries are streamed across the ledger's segments,
 * never held all at once.
 */
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { checkpointDistrust, latestCheckpoint, readCheckpoints, type LedgerCheckpoint } from './ledger-checkpoints.js';
import { chainErrorCode, type ChainWarning } from './ledger-chain.js';
import { SEGMENT_ENTRY_TYPE, type LedgerEntry, type LedgerKind } from './ledger-entry.js';
import { readLayout, verifyLedgerHere, type SessionLayout } from './ledger-join.js';
import type { LedgerKeyring } from './ledger-key.js';
import { CHECKPOINT_FILE, sessionLedgerDir } from './ledger-paths.js';

export interface ReplayLedgerOptions<S> {
  dataDir: string;
  tier: string;
  sessionId: string;
  ledger: LedgerKind;
  /** Replay up to this time: the latest checkpoint at or before it, and entries at or before it. @defaultValue everything */
  until?: Date;
  /** The state before the first entry, used when there is no checkpoint. */
  initial: S;
  /** Folds one entry into the state. */
  reduce: (state: S, entry: LedgerEntry) => S;
  /** Ledger keys: keyed entries and checkpoints are checked with them (ledger-chain.ts). @defaultValue none */
  keys?: LedgerKeyring;
}

export interface ReplayResult<S> {
  state: S;
  /** The checkpoint replay started from, if any. */
  checkpoint?: LedgerCheckpoint;
  /** Entries folded after the checkpoint. */
  replayed: number;
  warnings: ChainWarning[];
}

export async function replayLedger<S>(options: ReplayLedgerOptions<S>): Promise<ReplayResult<S>> {
  const dir = sessionLedgerDir(options.dataDir, options.tier, options.sessionId);
  const checkpointFile = path.join(dir, CHECKPOINT_FILE);
  const checkpoints = await readCheckpoints(checkpointFile);
  // A segment's closing checkpoint carries no replay state: replay starts from one that does.
  const checkpoint = latestCheckpoint(checkpoints, options.ledger, options.until, { withState: true });
  const distrust = checkpoint && checkpointDistrust(checkpoint, options.keys);
  if (checkpoint && distrust) {
    throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${checkpointFile}: the checkpoint of ${options.ledger} line ${checkpoint.line} ${distrust}`, {
      file: checkpointFile,
      line: checkpoint.line,
      code: 'CHECKPOINT_MISMATCH',
    });
  }
  let layout: SessionLayout;
  try {
    layout = readLayout(dir, checkpoints, options.keys);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw noLedger(options);
    throw error;
  }
  const ledger = layout.ledger(options.ledger);
  if (ledger.segments.length === 0) throw noLedger(options);
  if (checkpoint === undefined && layout.anchor !== undefined) {
    throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${dir}: retention removed the first ${layout.anchor.through_segment} segments and no checkpoint after them holds a replay state`, {
      code: 'SEGMENT_MISSING',
    });
  }
  let state = checkpoint ? (structuredClone(checkpoint.state) as S) : options.initial;
  let replayed = 0;
  const until = options.until?.getTime();
  let past = false;
  // Folded as the chain is verified, segment by segment; a chain that does not verify throws, whatever was folded.
  const verdict = verifyLedgerHere(
    ledger,
    { from: checkpoint ?? null, ...(options.keys ? { keys: options.keys } : {}) },
    { ...(options.keys ? { keys: options.keys } : {}) },
    {
      onEntry: (_line, entry) => {
        if (past || entry.entry_type === SEGMENT_ENTRY_TYPE) return;
        if (until !== undefined && Date.parse(String(entry.timestamp)) > until) {
          past = true;
          return;
        }
        state = options.reduce(state, entry as unknown as LedgerEntry);
        replayed += 1;
      },
    },
  );
  const problem = verdict.problems[0];
  if (problem) throw new UhlpError(chainErrorCode(problem), `${problem.file}:${problem.line}: ${problem.message}`, problem);
  const replay: ReplayResult<S> = { state, replayed, warnings: verdict.warnings };
  if (checkpoint) replay.checkpoint = checkpoint;
  return replay;
}

function noLedger(options: { sessionId: string; ledger: LedgerKind }): UhlpError {
  return new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${options.sessionId} has no ${options.ledger} ledger`, { sessionId: options.sessionId });
}
