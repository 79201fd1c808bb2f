/**
 * Replay of a session ledger from its latest checkpoint (FR-RT-009): the state
 * stored in the checkpoint is merged with the entries written after it, and the
 * chain is verified on the way (FR-RT-008: a read of a tampered ledger throws
 * `UHLP_LEDGER_INTEGRITY`).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { UhlpError } from '../errors.js';
import { checkpointDistrust, latestCheckpoint, readCheckpoints, type LedgerCheckpoint } from './ledger-checkpoints.js';
import { chainErrorCode, parseJsonLines, verifyChain, type ChainWarning } from './ledger-chain.js';
import type { LedgerEntry, LedgerKind } from './ledger-entry.js';
import type { LedgerKeyring } from './ledger-key.js';
import { CHECKPOINT_FILE, LEDGER_FILES, sessionLedgerDir } from './ledger-paths.js';

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
  const file = path.join(dir, LEDGER_FILES[options.ledger]);
  const checkpointFile = path.join(dir, CHECKPOINT_FILE);
  const checkpoint = latestCheckpoint(await readCheckpoints(checkpointFile), options.ledger, options.until);
  const distrust = checkpoint && checkpointDistrust(checkpoint, options.keys);
  if (checkpoint && distrust) {
    throw new UhlpError('UHLP_LEDGER_INTEGRITY', `${checkpointFile}: the checkpoint of ${options.ledger} line ${checkpoint.line} ${distrust}`, {
      file: checkpointFile,
      line: checkpoint.line,
      code: 'CHECKPOINT_MISMATCH',
    });
  }
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
      throw new UhlpError('UHLP_SESSION_NOT_FOUND', `session ${options.sessionId} has no ${options.ledger} ledger`, { sessionId: options.sessionId });
    }
    throw error;
  }
  const result = verifyChain(file, parseJsonLines(text), checkpoint, { keys: options.keys });
  if (result.problem) {
    throw new UhlpError(chainErrorCode(result.problem), `${file}:${result.problem.line}: ${result.problem.message}`, result.problem);
  }
  let state = checkpoint ? (structuredClone(checkpoint.state) as S) : options.initial;
  let replayed = 0;
  const until = options.until?.getTime();
  for (const { entry } of result.entries) {
    if (until !== undefined && Date.parse(String(entry.timestamp)) > until) break;
    state = options.reduce(state, entry as unknown as LedgerEntry);
    replayed += 1;
  }
  const replay: ReplayResult<S> = { state, replayed, warnings: result.warnings };
  if (checkpoint) replay.checkpoint = checkpoint;
  return replay;
}
