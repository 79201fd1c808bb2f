/**
 * `verifyLedgers(dataDir)`: checks every session ledger under
 * `<dataDir>/planes/<tier>/sessions/<sid>/ledger/` and reports, per file, the
 * first entry that does not verify. By default each file is checked from its
 * latest checkpoint (after confirming the checkpointed entry still has its hash);
 * `full` checks every line and every checkpoint. With ledger keys, keyed entries
 * and checkpoints are checked with them, and a checkpoint not sealed with one is
 * reported and not started from (ledger-chain.ts, ledger-checkpoints.ts).
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { checkpointDistrust, latestCheckpoint, readCheckpoints, type LedgerCheckpoint } from './ledger-checkpoints.js';
import { parseJsonLines, verifyChain, type ChainProblem, type ChainWarning } from './ledger-chain.js';
import type { LedgerKeyring } from './ledger-key.js';
import type { LedgerKind } from './ledger-entry.js';
import { CHECKPOINT_FILE, LEDGER_FILES } from './ledger-paths.js';

export interface VerifyLedgersOptions {
  /** Verify every line from the start and every checkpoint, not just from the latest checkpoint. @defaultValue false */
  full?: boolean;
  /** Keys to check HMAC-sealed entries and checkpoints with. @defaultValue none */
  keys?: LedgerKeyring;
  /** With keys: accept chains that have no keyed entry (begun before the key), with a warning. @defaultValue false */
  allowUnkeyed?: boolean;
}

export interface VerifyLedgersReport {
  problems: ChainProblem[];
  warnings: ChainWarning[];
  sessions: number;
  files: number;
  entriesChecked: number;
}

export async function verifyLedgers(dataDir: string, options: VerifyLedgersOptions = {}): Promise<VerifyLedgersReport> {
  const report: VerifyLedgersReport = { problems: [], warnings: [], sessions: 0, files: 0, entriesChecked: 0 };
  const planes = path.join(dataDir, 'planes');
  for (const tier of await listDirs(planes)) {
    const sessionsDir = path.join(planes, tier, 'sessions');
    for (const sessionId of await listDirs(sessionsDir)) {
      report.sessions += 1;
      await verifySession(path.join(sessionsDir, sessionId, 'ledger'), options, report);
    }
  }
  return report;
}

async function verifySession(dir: string, options: VerifyLedgersOptions, report: VerifyLedgersReport): Promise<void> {
  const checkpoints = await readCheckpoints(path.join(dir, CHECKPOINT_FILE));
  const turns = new Map<LedgerKind, Map<number, number>>();
  for (const kind of Object.keys(LEDGER_FILES) as LedgerKind[]) {
    const file = path.join(dir, LEDGER_FILES[kind]);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      report.problems.push({ file, line: 0, code: 'LEDGER_MISSING', message: `${LEDGER_FILES[kind]} is missing; a session needs both ledgers` });
      continue;
    }
    report.files += 1;
    const lines = parseJsonLines(text);
    turns.set(kind, turnLines(lines));
    const chainOptions = { keys: options.keys, allowUnkeyed: options.allowUnkeyed };
    let latest = options.full ? undefined : latestCheckpoint(checkpoints, kind);
    const distrusted = latest && distrustProblem(file, latest, options.keys);
    if (distrusted) {
      // A checkpoint that cannot be trusted vouches for nothing: verify from the start.
      report.problems.push(distrusted);
      latest = undefined;
    }
    let result = verifyChain(file, lines, latest, chainOptions);
    if (result.problem?.code === 'CHECKPOINT_MISMATCH') {
      // The checkpoint no longer matches: report it, and find the first bad entry from the start.
      report.problems.push(result.problem);
      report.entriesChecked += result.entriesChecked;
      result = verifyChain(file, lines, undefined, chainOptions);
    }
    report.entriesChecked += result.entriesChecked;
    report.warnings.push(...result.warnings);
    if (result.problem) report.problems.push(result.problem);
    if (options.full && !result.problem) {
      // A full check also holds every checkpoint against the verified chain.
      const hashes = new Map(result.entries.map(({ line, entry }) => [line, entry.entry_hash]));
      for (const checkpoint of checkpoints) {
        if (checkpoint.ledger !== kind) continue;
        const problem = distrustProblem(file, checkpoint, options.keys);
        if (problem) report.problems.push(problem);
        if (hashes.get(checkpoint.line) === checkpoint.entry_hash) continue;
        report.problems.push({
          file,
          line: checkpoint.line,
          code: 'CHECKPOINT_MISMATCH',
          message: `checkpoint of line ${checkpoint.line} names ${checkpoint.entry_hash}, which is not the entry there`,
        });
      }
    }
  }
  checkTurnsPaired(dir, turns, report);
}

/** The problem of a checkpoint these keys cannot trust, if any. */
function distrustProblem(file: string, checkpoint: LedgerCheckpoint, keys: LedgerKeyring | undefined): ChainProblem | undefined {
  const distrust = checkpointDistrust(checkpoint, keys);
  if (distrust === undefined) return undefined;
  const keyed = keys !== undefined && keys.size > 0;
  return {
    file,
    line: checkpoint.line,
    code: keyed ? 'CHECKPOINT_MISMATCH' : 'KEY_REQUIRED',
    message: `the checkpoint of line ${checkpoint.line} ${distrust}${keyed ? '; verified from the start instead' : ': verifying it needs that key'}`,
  };
}

/** turn_number -> first line, over every readable entry (cheap: no hashing). */
function turnLines(lines: ReturnType<typeof parseJsonLines>): Map<number, number> {
  const found = new Map<number, number>();
  for (const { line, entry } of lines) {
    const turn = entry?.turn_number;
    if (typeof turn === 'number' && !found.has(turn)) found.set(turn, line);
  }
  return found;
}

/** Every turn has an exec and an evidence entry (FR-RT-007/018); report the first turn of each ledger that lacks its twin. */
function checkTurnsPaired(dir: string, turns: Map<LedgerKind, Map<number, number>>, report: VerifyLedgersReport): void {
  const exec = turns.get('exec');
  const evidence = turns.get('evidence');
  if (!exec || !evidence) return;
  for (const [kind, own, other, otherName] of [
    ['exec', exec, evidence, 'evidence'],
    ['evidence', evidence, exec, 'exec'],
  ] as const) {
    const unpaired = [...own].filter(([turn]) => !other.has(turn)).sort((a, b) => a[1] - b[1])[0];
    if (!unpaired) continue;
    report.problems.push({
      file: path.join(dir, LEDGER_FILES[kind]),
      line: unpaired[1],
      code: 'TURN_UNPAIRED',
      message: `turn ${unpaired[0]} has no ${otherName} entry`,
    });
  }
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory()).map((e) => e.name).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
