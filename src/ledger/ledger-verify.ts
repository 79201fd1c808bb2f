/**
 * `verifyLedgers(dataDir)`: checks every session ledger under
 * `<dataDir>/planes/<tier>/sessions/<sid>/ledger/` and reports, per ledger, the
 * first entry that does not verify (file, line, reason). Files are streamed
 * line by line in constant memory, whatever their size, and the segments of
 * every session are verified on several threads at once (segment-verify-pool.ts);
 * ledger-join.ts then joins them into one chain per ledger, and keyed-rule.ts
 * judges what a ledger key asks of the session's unkeyed entries.
 *
 * By default each ledger is checked from its latest checkpoint (the segments
 * before it only at their ends); `full` checks every line of every segment and
 * every checkpoint. With ledger keys, keyed entries, checkpoints and anchors are
 * checked with them. What retention removed is reported as a gap, never as a
 * break, and never silently. What a crash leaves at the very end of a ledger (a
 * torn line, or a last turn with only one of its two entries) is reported as a
 * torn tail, not as tampering, and `repair` moves it aside (ledger-repair.ts).
 */
import { opendir, readdir, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ChainProblem, ChainWarning } from './ledger-chain.js';
import type { LedgerKind } from './ledger-entry.js';
import {
  joinLedger,
  pairTurns,
  planLedger,
  readLayout,
  restartedVerdict,
  segmentPath,
  type LedgerLayout,
  type LedgerPlan,
  type LedgerVerdict,
  type SessionLayout,
} from './ledger-join.js';
import type { LedgerKeyring } from './ledger-key.js';
import { judgeKeying } from './keyed-rule.js';
import { LEDGER_FILES, LEDGER_KINDS, PRUNED_SESSIONS_FILE, parseSegmentFileName } from './ledger-paths.js';
import { quarantineTail } from './ledger-repair.js';
import { verifyPrunedSessions } from './pruned-sessions.js';
import { createVerifyPool, type VerifyPool } from './segment-verify-pool.js';
import type { SegmentReport } from './segment-verifier.js';

export interface VerifyLedgersOptions {
  /** Verify every line from the start and every checkpoint, not just from the latest checkpoint. @defaultValue false */
  full?: boolean;
  /** Keys to check HMAC-sealed entries, checkpoints and anchors with. @defaultValue none */
  keys?: LedgerKeyring;
  /**
   * With keys: accept, with a warning, sessions no entry of which is keyed (begun before the key) and the plain
   * entries that begin a ledger a keyed entry continues; never an unhashed or plain entry elsewhere in a keyed
   * session (keyed-rule.ts). @defaultValue false
   */
  allowUnkeyed?: boolean;
  /**
   * Threads verifying segments at once, the calling thread included; 0 or 1 verifies on the calling thread alone.
   * @defaultValue the machine's available parallelism (at most 8), or 0 when there is less than 8 MiB to read
   */
  threads?: number;
  /** Move torn tails aside into `<segment>.torn` and cut the segment back to its last whole turn. @defaultValue false */
  repair?: boolean;
  /** Called now and then during a long verification. */
  onProgress?: (progress: VerifyProgress) => void;
}

export interface VerifyProgress {
  bytes: number;
  totalBytes: number;
  entries: number;
  sessions: number;
  elapsedMs: number;
}

/** What retention removed, as verification reports it. */
export interface LedgerGap {
  /** The session's ledger directory, or for sessions removed whole the plane's `pruned-sessions.jsonl`. */
  where: string;
  message: string;
}

/** The end of a ledger cut short by a crash. */
export interface TornTail {
  file: string;
  line: number;
  /** Where the torn part starts, bytes. */
  offset: number;
  message: string;
  /** Set once `repair` moved it aside. */
  repaired?: { quarantine: string; bytes: number };
}

export interface VerifyLedgersReport {
  problems: ChainProblem[];
  warnings: ChainWarning[];
  gaps: LedgerGap[];
  torn: TornTail[];
  sessions: number;
  /** Segment files read. */
  files: number;
  entriesChecked: number;
  bytes: number;
}

/** Below this much ledger, threads cost more than they save. */
const SMALL_BYTES = 8 * 1024 * 1024;
const MAX_THREADS = 8;
/** Session directories read from a plane at a time (and sorted within). */
const SESSION_BATCH = 1024;
const PROGRESS_EVERY_MS = 1000;

export async function verifyLedgers(dataDir: string, options: VerifyLedgersOptions = {}): Promise<VerifyLedgersReport> {
  const report: VerifyLedgersReport = { problems: [], warnings: [], gaps: [], torn: [], sessions: 0, files: 0, entriesChecked: 0, bytes: 0 };
  const started = Date.now();
  const planes = path.join(dataDir, 'planes');
  const tiers = await listDirs(planes);
  const totalBytes = options.onProgress || options.threads === undefined ? await ledgerBytes(planes, tiers) : 0;
  const threads = options.threads ?? (totalBytes < SMALL_BYTES ? 0 : Math.min(MAX_THREADS, os.availableParallelism()));
  let bytesRead = 0;
  let lastProgress = started;
  const progress = (): void => {
    if (!options.onProgress || Date.now() - lastProgress < PROGRESS_EVERY_MS) return;
    lastProgress = Date.now();
    options.onProgress({ bytes: bytesRead, totalBytes, entries: report.entriesChecked, sessions: report.sessions, elapsedMs: lastProgress - started });
  };
  const pool = createVerifyPool({
    threads,
    ...(options.keys ? { keys: options.keys } : {}),
    onBytes: (bytes) => {
      bytesRead += bytes;
      progress();
    },
  });
  const inFlight = new Set<Promise<void>>();
  try {
    for (const tier of tiers) {
      const planeDir = path.join(planes, tier);
      verifyPlaneLog(planeDir, options, report);
      for await (const batch of sessionBatches(path.join(planeDir, 'sessions'))) {
        for (const sessionId of batch) {
          const done = verifySession(path.join(planeDir, 'sessions', sessionId, 'ledger'), pool, options, report).finally(() => {
            inFlight.delete(done);
            progress();
          });
          inFlight.add(done);
          // Enough sessions in flight to keep every thread busy; more would only hold their layouts in memory.
          while (inFlight.size > Math.max(2, threads * 4)) await Promise.race(inFlight);
        }
      }
    }
    await Promise.all(inFlight);
  } finally {
    await pool.close();
  }
  report.bytes = bytesRead;
  return report;
}

async function verifySession(dir: string, pool: VerifyPool, options: VerifyLedgersOptions, report: VerifyLedgersReport): Promise<void> {
  report.sessions += 1;
  let layout: SessionLayout;
  try {
    layout = readLayout(dir, undefined, options.keys);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    for (const kind of LEDGER_KINDS) report.problems.push(ledgerMissing(dir, kind));
    return;
  }
  if (layout.anchorProblem) report.problems.push(layout.anchorProblem);
  const leftovers = [...layout.leftovers.exec, ...layout.leftovers.evidence];
  if (leftovers.length > 0) {
    report.warnings.push({
      file: dir,
      line: 0,
      message: `segments up to ${layout.anchor?.through_segment} are still here though the anchor says retention removed them (a prune cut short); not verified, and the next prune removes them`,
    });
  }
  const reports = new Map<LedgerKind, Map<number, SegmentReport>>();
  const verdicts = new Map<LedgerKind, LedgerVerdict>();
  const missing = new Map<LedgerKind, ChainProblem>();
  await Promise.all(
    LEDGER_KINDS.map(async (kind) => {
      const ledger = layout.ledger(kind);
      if (ledger.segments.length === 0) {
        missing.set(kind, ledgerMissing(dir, kind));
        return;
      }
      const planOptions = { full: options.full === true, ...(options.keys ? { keys: options.keys } : {}) };
      const joinOptions = { ...(options.keys ? { keys: options.keys } : {}), ...(options.allowUnkeyed ? { allowUnkeyed: true } : {}) };
      let run = await runPlan(ledger, planLedger(ledger, planOptions), pool, joinOptions, report);
      if (run.verdict.retryFromStart) {
        // The checkpoint no longer matches: report it, and find the first bad entry from the start.
        const again = await runPlan(ledger, planLedger(ledger, { ...planOptions, from: null }), pool, joinOptions, report);
        run = { reports: again.reports, verdict: restartedVerdict(run.verdict, again.verdict) };
      }
      reports.set(kind, run.reports);
      verdicts.set(kind, run.verdict);
    }),
  );
  // Keyed means keyed: judged over both ledgers, since a key on either says the session was written keyed.
  const judged = LEDGER_KINDS.filter((kind) => verdicts.has(kind));
  const keyed = judgeKeying(
    judged.map((kind) => verdicts.get(kind)!.keying),
    { ...(options.keys ? { keys: options.keys } : {}), ...(options.allowUnkeyed ? { allowUnkeyed: true } : {}) },
  );
  judged.forEach((kind, i) => {
    verdicts.get(kind)!.problems.push(...keyed[i]!.problems);
    verdicts.get(kind)!.warnings.push(...keyed[i]!.warnings);
  });
  // Reported in a fixed order (exec, then evidence), whichever thread finished first.
  for (const kind of LEDGER_KINDS) {
    const verdict = verdicts.get(kind);
    if (verdict) {
      report.entriesChecked += verdict.entriesChecked;
      report.warnings.push(...verdict.warnings);
      report.problems.push(...verdict.problems);
    }
    const absent = missing.get(kind);
    if (absent) report.problems.push(absent);
  }
  const execVerdict = verdicts.get('exec');
  const evidenceVerdict = verdicts.get('evidence');
  const torn: TornTail[] = [];
  for (const verdict of [execVerdict, evidenceVerdict]) {
    if (verdict?.torn) {
      torn.push({
        file: verdict.torn.file,
        line: verdict.torn.line,
        offset: verdict.torn.offset,
        message: `the last line is cut short (${verdict.torn.bytes} bytes without a line break): a write torn by a crash, not tampering`,
      });
    }
  }
  if (execVerdict && evidenceVerdict && execVerdict.problems.length === 0 && evidenceVerdict.problems.length === 0) {
    const execReports = reports.get('exec')!;
    const evidenceReports = reports.get('evidence')!;
    const lastExec = layout.segments.exec.at(-1);
    const lastEvidence = layout.segments.evidence.at(-1);
    for (const [segment, execReport] of execReports) {
      const evidenceReport = evidenceReports.get(segment);
      if (!evidenceReport) continue;
      const pairing = pairTurns(dir, segment, execReport, evidenceReport, segment === lastExec && segment === lastEvidence);
      report.problems.push(...pairing.problems);
      if (pairing.tail) {
        const { tail } = pairing;
        const otherName = tail.kind === 'exec' ? 'evidence' : 'exec';
        torn.push({
          file: tail.file,
          line: tail.line,
          offset: tail.offset,
          message: `the last ${tail.entries === 1 ? 'entry' : `${tail.entries} entries`} (${tail.turns}) ${tail.entries === 1 ? 'has' : 'have'} no ${otherName} entry: the core stopped between the two writes of a turn, not tampering`,
        });
      }
    }
  }
  if (options.repair) {
    for (const tail of torn) tail.repaired = quarantineTail(tail.file, tail.offset);
  }
  report.torn.push(...torn);
  const anchor = layout.anchor;
  if (anchor) {
    const { exec, evidence } = anchor.ledgers;
    const range = anchor.through_segment === 1 ? 'segment 1' : `segments 1-${anchor.through_segment}`;
    report.gaps.push({
      where: dir,
      message:
        `${range} of both ledgers removed by retention (${anchor.reason}) at ${anchor.pruned_at}: ${exec.entries} exec and ${evidence.entries} evidence entries` +
        `${exec.last_timestamp ? `, the last of ${exec.last_timestamp}` : ''}; the chain resumes from the anchor`,
    });
  }
}

async function runPlan(
  ledger: LedgerLayout,
  plan: LedgerPlan,
  pool: VerifyPool,
  joinOptions: Parameters<typeof joinLedger>[3],
  report: VerifyLedgersReport,
): Promise<{ reports: Map<number, SegmentReport>; verdict: LedgerVerdict }> {
  const reports = new Map<number, SegmentReport>();
  await Promise.all(
    plan.tasks.map(async (task) => {
      reports.set(task.segment, await pool.run(task));
      report.files += 1;
    }),
  );
  return { reports, verdict: joinLedger(ledger, plan, reports, joinOptions) };
}

/** The plane's log of sessions retention removed whole: verified as a chain, and reported as one gap. */
function verifyPlaneLog(planeDir: string, options: VerifyLedgersOptions, report: VerifyLedgersReport): void {
  const summary = verifyPrunedSessions(path.join(planeDir, PRUNED_SESSIONS_FILE), options.keys, options.allowUnkeyed ?? false);
  if (summary === undefined) return;
  report.entriesChecked += summary.entriesChecked;
  report.warnings.push(...summary.warnings);
  if (summary.problem) report.problems.push(summary.problem);
  if (summary.sessions > 0) {
    report.gaps.push({
      where: path.join(planeDir, PRUNED_SESSIONS_FILE),
      message: `${summary.sessions} session${summary.sessions === 1 ? '' : 's'} removed whole by retention (${summary.entries} entries; the latest on ${summary.lastPrunedAt}); each is listed with its last hashes`,
    });
  }
}

function ledgerMissing(dir: string, kind: LedgerKind): ChainProblem {
  return { file: segmentPath(dir, kind, 1), line: 0, code: 'LEDGER_MISSING', message: `${LEDGER_FILES[kind]} is missing; a session needs both ledgers` };
}

/** The sessions of a plane in batches, each sorted, read with a directory stream (a plane may hold a great many). */
async function* sessionBatches(sessionsDir: string): AsyncGenerator<string[]> {
  let dir;
  try {
    dir = await opendir(sessionsDir, { bufferSize: 256 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  let batch: string[] = [];
  for await (const entry of dir) {
    if (!entry.isDirectory()) continue;
    batch.push(entry.name);
    if (batch.length >= SESSION_BATCH) {
      yield batch.sort();
      batch = [];
    }
  }
  if (batch.length > 0) yield batch.sort();
}

/** The size of every segment under the planes, for progress and for choosing threads. */
async function ledgerBytes(planes: string, tiers: readonly string[]): Promise<number> {
  let total = 0;
  for (const tier of tiers) {
    for await (const batch of sessionBatches(path.join(planes, tier, 'sessions'))) {
      for (const sessionId of batch) {
        const dir = path.join(planes, tier, 'sessions', sessionId, 'ledger');
        let names: string[];
        try {
          names = await readdir(dir);
        } catch {
          continue;
        }
        for (const name of names) {
          if (parseSegmentFileName(name) === undefined) continue;
          total += await stat(path.join(dir, name)).then(
            (s) => s.size,
            () => 0,
          );
        }
      }
    }
  }
  return total;
}

async function listDirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries
      .filter((e) => e.isDirectory())
      .map((e) => e.name)
      .sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
