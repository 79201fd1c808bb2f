/**
 * A ledger of several segments, verified as one chain: which segments to read
 * and how (planLedger), and the checks between them once each was verified on
 * its own (joinLedger): no segment missing, each header linking to the last
 * hash of the segment before (or to the anchor retention left), closing
 * checkpoints still naming each segment's last entry, no plain segment after a
 * keyed one, a torn tail only at the very end. And between the two ledgers of a
 * session (pairTurns): every turn has both its exec and its evidence entry.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { anchorDistrust, readAnchor, type LedgerAnchor } from './ledger-anchor.js';
import { parseJsonLine, type ChainProblem, type ChainWarning } from './ledger-chain.js';
import { checkpointDistrust, checkpointSegment, latestCheckpoint, readCheckpointsSync, type LedgerCheckpoint } from './ledger-checkpoints.js';
import type { LedgerKind } from './ledger-entry.js';
import type { LedgerKeyring } from './ledger-key.js';
import { addSegmentKeying, emptyKeying, judgeKeying, type LedgerKeying } from './keyed-rule.js';
import { ANCHOR_FILE, CHECKPOINT_FILE, segmentFileName, segmentsIn } from './ledger-paths.js';
import { readLines } from './line-reader.js';
import { sameTurns, verifySegment, type SegmentReport, type SegmentTask, type SegmentVerifyOptions } from './segment-verifier.js';

export interface LedgerLayout {
  /** The session's ledger directory. */
  readonly dir: string;
  readonly kind: LedgerKind;
  /** The segments present after the anchor, in order. */
  readonly segments: readonly number[];
  /** What retention removed (trusted: the caller checked its seal). */
  readonly anchor?: LedgerAnchor;
  /** The session's checkpoints of this ledger. */
  readonly checkpoints: readonly LedgerCheckpoint[];
}

export interface LedgerPlanOptions {
  /** Every line of every segment. @defaultValue false: from the latest checkpoint */
  full?: boolean;
  keys?: LedgerKeyring;
  /** Start here (a checkpoint already trusted), or null for the first segment; overrides `full`'s choice. */
  from?: LedgerCheckpoint | null;
}

export interface LedgerPlan {
  readonly tasks: SegmentTask[];
  /** The checkpoint verification starts from. */
  readonly start?: LedgerCheckpoint;
  /** A checkpoint that cannot be trusted (reported; verification starts from the first segment instead). */
  readonly problems: ChainProblem[];
  readonly full: boolean;
}

export function segmentPath(dir: string, kind: LedgerKind, segment: number): string {
  return path.join(dir, segmentFileName(kind, segment));
}

/** What a session's ledger directory holds, read once: segments, anchor, checkpoints. */
export interface SessionLayout {
  readonly dir: string;
  /** The segments of each ledger after the anchor, in order. */
  readonly segments: Record<LedgerKind, number[]>;
  /** Segments the anchor says were removed that are still there (a prune cut short): not verified. */
  readonly leftovers: Record<LedgerKind, number[]>;
  readonly anchor?: LedgerAnchor;
  /** The anchor cannot be trusted, or is not one. */
  readonly anchorProblem?: ChainProblem;
  readonly checkpoints: readonly LedgerCheckpoint[];
  /** One ledger of the session. */
  ledger(kind: LedgerKind): LedgerLayout;
}

/** Reads a session's ledger directory; `checkpoints` when the caller has them already. */
export function readLayout(dir: string, checkpoints?: readonly LedgerCheckpoint[], keys?: LedgerKeyring): SessionLayout {
  const names = readdirSync(dir);
  const all = segmentsIn(names);
  const read = names.includes(ANCHOR_FILE) ? readAnchor(dir) : undefined;
  let anchor: LedgerAnchor | undefined;
  let anchorProblem: ChainProblem | undefined;
  if (read !== undefined && 'error' in read) {
    anchorProblem = { file: path.join(dir, ANCHOR_FILE), line: 0, code: 'ANCHOR_MISMATCH', message: `anchor.json ${read.error}` };
  } else if (read !== undefined) {
    anchor = read;
    anchorProblem = checkAnchor(dir, read, keys);
  }
  const through = anchor?.through_segment ?? 0;
  const segments = { exec: all.exec.filter((n) => n > through), evidence: all.evidence.filter((n) => n > through) };
  const leftovers = { exec: all.exec.filter((n) => n <= through), evidence: all.evidence.filter((n) => n <= through) };
  const points = checkpoints ?? readCheckpointsSync(path.join(dir, CHECKPOINT_FILE));
  const layout: SessionLayout = {
    dir,
    segments,
    leftovers,
    ...(anchor ? { anchor } : {}),
    ...(anchorProblem ? { anchorProblem } : {}),
    checkpoints: points,
    ledger: (kind) => ({
      dir,
      kind,
      segments: segments[kind],
      ...(anchor ? { anchor } : {}),
      checkpoints: points.filter((c) => c.ledger === kind && checkpointSegment(c) > through),
    }),
  };
  return layout;
}

/**
 * Verifies one ledger here, segment after segment (checkpoints, replay, small
 * ledgers); verify-ledgers.ts spreads the same work over threads. A start that
 * no longer holds is reported and verification starts again from the first
 * segment, as it would without it.
 */
export function verifyLedgerHere(layout: LedgerLayout, planOptions: LedgerPlanOptions, joinOptions: JoinOptions, segmentOptions: SegmentVerifyOptions = {}): LedgerVerdict {
  const run = (plan: LedgerPlan): LedgerVerdict => {
    const reports = new Map<number, SegmentReport>();
    for (const task of plan.tasks) {
      const report = verifySegment(task, { ...segmentOptions, keys: joinOptions.keys });
      reports.set(task.segment, report);
      // Later segments of a broken chain tell nothing more (and replay must not fold past the break).
      if (report.problem) break;
    }
    const verdict = joinLedger(layout, plan, reports, joinOptions);
    // The one ledger read here is all of the session this judges.
    const [keyed] = judgeKeying([verdict.keying], joinOptions);
    verdict.problems.push(...keyed!.problems);
    verdict.warnings.push(...keyed!.warnings);
    return verdict;
  };
  const first = run(planLedger(layout, planOptions));
  if (!first.retryFromStart || planOptions.from !== undefined) return first;
  return restartedVerdict(first, run(planLedger(layout, { ...planOptions, from: null })));
}

/** The verdict of a verification run again from the start: the problems that sent it back, then its own. */
export function restartedVerdict(first: LedgerVerdict, again: LedgerVerdict): LedgerVerdict {
  const why = first.problems.filter((p) => p.code === 'CHECKPOINT_MISMATCH');
  return { ...again, problems: [...why, ...again.problems], entriesChecked: first.entriesChecked + again.entriesChecked };
}

/**
 * Full: every segment, every line. Otherwise from the latest checkpoint: the
 * segments before it have only their first and last line checked, the one it
 * is in is read from it on, and the later ones whole. A closing checkpoint
 * starts verification at the next segment.
 */
export function planLedger(layout: LedgerLayout, options: LedgerPlanOptions): LedgerPlan {
  const { dir, kind, segments } = layout;
  const problems: ChainProblem[] = [];
  const present = new Set(segments);
  let start: LedgerCheckpoint | undefined;
  if (options.from !== undefined) start = options.from ?? undefined;
  else if (!options.full) {
    const candidates = layout.checkpoints.filter((c) => present.has(checkpointSegment(c)));
    const latest = latestCheckpoint(candidates, kind);
    const distrust = latest && checkpointDistrust(latest, options.keys);
    if (latest && distrust) problems.push(distrustProblem(segmentPath(dir, kind, checkpointSegment(latest)), latest, options.keys, distrust));
    else start = latest;
  }
  const full = options.full === true && options.from === undefined;
  // Full verification checks each checkpoint against the entry it names.
  const watch = new Map<number, number[]>();
  if (full) {
    for (const checkpoint of layout.checkpoints) {
      if (checkpoint.closes_segment) continue;
      const at = watch.get(checkpointSegment(checkpoint)) ?? [];
      at.push(checkpoint.line);
      watch.set(checkpointSegment(checkpoint), at);
    }
  }
  const tasks: SegmentTask[] = [];
  const startSegment = start ? checkpointSegment(start) : 0;
  for (const segment of segments) {
    const file = segmentPath(dir, kind, segment);
    if (start && (segment < startSegment || (segment === startSegment && start.closes_segment))) tasks.push({ file, kind, segment, mode: 'ends' });
    else if (start && segment === startSegment) tasks.push({ file, kind, segment, mode: 'full', start: { line: start.line, entry_hash: start.entry_hash } });
    else tasks.push({ file, kind, segment, mode: 'full', ...(watch.has(segment) ? { watch: watch.get(segment)! } : {}) });
  }
  return { tasks, ...(start ? { start } : {}), problems, full };
}

export interface LedgerVerdict {
  problems: ChainProblem[];
  warnings: ChainWarning[];
  entriesChecked: number;
  /** The checkpoint verification started from no longer holds: verify again from the first segment. */
  retryFromStart: boolean;
  lastHash: string | null;
  lastLine: number;
  lastSegment: number;
  lastTimestamp?: string;
  /** A torn tail at the end of the ledger (a write cut short). */
  torn?: { file: string; line: number; offset: number; bytes: number };
  /** What its segments' seals add up to: keyed-rule.ts judges it with the session's other ledger. */
  keying: LedgerKeying;
}

export interface JoinOptions {
  keys?: LedgerKeyring;
  /** Used by the keyed rule (keyed-rule.ts), which the caller applies to the verdicts of a whole session. */
  allowUnkeyed?: boolean;
}

export function joinLedger(layout: LedgerLayout, plan: LedgerPlan, reports: ReadonlyMap<number, SegmentReport>, options: JoinOptions = {}): LedgerVerdict {
  const { dir, kind, segments, anchor } = layout;
  const verdict: LedgerVerdict = {
    problems: [...plan.problems],
    warnings: [],
    entriesChecked: 0,
    retryFromStart: false,
    lastHash: null,
    lastLine: 0,
    lastSegment: 0,
    keying: emptyKeying(segmentPath(dir, kind, segments[0] ?? 1)),
  };
  const closing = new Map<number, LedgerCheckpoint>();
  for (const checkpoint of layout.checkpoints) if (checkpoint.closes_segment) closing.set(checkpointSegment(checkpoint), checkpoint);
  const startSegment = plan.start ? checkpointSegment(plan.start) : 0;
  let previous: SegmentReport | undefined;
  let previousBroken = false;
  for (const segment of segments) {
    const report = reports.get(segment);
    if (report === undefined) continue;
    const file = report.file;
    verdict.entriesChecked += report.entriesChecked;
    verdict.warnings.push(...report.warnings);
    const problem = report.problem;
    if (problem) {
      const atStart = problem.code === 'CHECKPOINT_MISMATCH' && plan.start !== undefined && segment === startSegment;
      if (atStart) verdict.retryFromStart = true;
      verdict.problems.push(problem);
    }
    if (previous === undefined) {
      if (segment > 1) {
        if (anchor === undefined || anchor.through_segment !== segment - 1) {
          verdict.problems.push(missing(dir, kind, anchor ? anchor.through_segment + 1 : 1, segment));
        } else if (report.header && report.header.previousHash !== anchor.ledgers[kind].last_hash) {
          verdict.problems.push({
            file,
            line: 1,
            code: 'ANCHOR_MISMATCH',
            message: `the segment header continues from ${String(report.header.previousHash)}, but the anchor says the pruned part ends with ${String(anchor.ledgers[kind].last_hash)}`,
          });
        }
      }
    } else if (segment !== previous.segment + 1) {
      verdict.problems.push(missing(dir, kind, previous.segment + 1, segment));
    } else if (!previousBroken && problem === undefined) {
      if (report.header && previous.lastHash !== null && report.header.previousHash !== previous.lastHash) {
        verdict.problems.push({
          file,
          line: 1,
          code: 'PREVIOUS_HASH_MISMATCH',
          message: `the segment header does not link to the last entry of ${path.basename(previous.file)}: a segment was replaced, or the one before was truncated or changed`,
        });
      } else if (previous.lastKeyed && report.firstKeyed === false) {
        verdict.problems.push({
          file,
          line: 1,
          code: 'HASH_DOWNGRADE',
          message: `the segment is sealed with plain sha256 after ${path.basename(previous.file)} was sealed with the ledger key: re-sealed without the key`,
        });
      }
    }
    const close = closing.get(segment);
    if (close && problem === undefined && report.lastHash !== null) {
      const lineOff = report.mode === 'full' && report.lastLine !== close.line;
      if (close.entry_hash !== report.lastHash || lineOff) {
        if (plan.start === close) verdict.retryFromStart = true;
        verdict.problems.push({
          file,
          line: close.line,
          code: 'CHECKPOINT_MISMATCH',
          message: `the closing checkpoint of segment ${segment} names line ${close.line} with ${close.entry_hash}, but the segment ends at line ${report.lastLine > 0 ? report.lastLine : '?'} with ${report.lastHash}: changed or extended after it was closed`,
        });
      }
    }
    if (report.torn) {
      if (segment === segments[segments.length - 1]) verdict.torn = { file, ...report.torn };
      else if (problem === undefined) {
        verdict.problems.push({ file, line: report.torn.line, code: 'UNPARSEABLE', message: 'the segment ends in a partial line, and it is not the last segment (a crash leaves one only at the end)' });
      }
    }
    previous = report;
    previousBroken = problem !== undefined;
    verdict.lastHash = report.lastHash;
    verdict.lastLine = report.lastLine;
    verdict.lastSegment = segment;
    if (report.lastTimestamp !== undefined) verdict.lastTimestamp = report.lastTimestamp;
  }
  // What the key asks of unkeyed entries is judged by the caller over the session; a chain that otherwise
  // verified (a distrusted checkpoint only changed where it started) is judged whole.
  for (const segment of segments) {
    const report = reports.get(segment);
    if (report) addSegmentKeying(verdict.keying, report.file, report);
  }
  verdict.keying.broken = verdict.problems.length > plan.problems.length;
  // A full verification also holds every checkpoint against the verified chain.
  if (plan.full && verdict.problems.length === plan.problems.length) {
    for (const segment of segments) {
      const report = reports.get(segment);
      if (!report?.watched) continue;
      for (const checkpoint of layout.checkpoints) {
        if (checkpoint.closes_segment || checkpointSegment(checkpoint) !== segment) continue;
        const distrust = checkpointDistrust(checkpoint, options.keys);
        if (distrust) verdict.problems.push(distrustProblem(report.file, checkpoint, options.keys, distrust));
        if (report.watched[checkpoint.line] !== checkpoint.entry_hash) {
          verdict.problems.push({
            file: report.file,
            line: checkpoint.line,
            code: 'CHECKPOINT_MISMATCH',
            message: `checkpoint of line ${checkpoint.line} names ${checkpoint.entry_hash}, which is not the entry there`,
          });
        }
      }
    }
  }
  return verdict;
}

function missing(dir: string, kind: LedgerKind, from: number, next: number): ChainProblem {
  const range = from === next - 1 ? `segment ${from}` : `segments ${from}-${next - 1}`;
  return {
    file: segmentPath(dir, kind, from),
    line: 0,
    code: 'SEGMENT_MISSING',
    message: `${range} of ${kind} ${from === next - 1 ? 'is' : 'are'} missing and no anchor says retention removed ${from === next - 1 ? 'it' : 'them'}: the chain cannot be followed to ${segmentFileName(kind, next)}`,
  };
}

/** The problem of a checkpoint these keys cannot trust. */
export function distrustProblem(file: string, checkpoint: LedgerCheckpoint, keys: LedgerKeyring | undefined, distrust: string): ChainProblem {
  const keyed = keys !== undefined && keys.size > 0;
  return {
    file,
    line: checkpoint.line,
    code: keyed ? 'CHECKPOINT_MISMATCH' : 'KEY_REQUIRED',
    message: `the checkpoint of line ${checkpoint.line} ${distrust}${keyed ? '; verified from the start instead' : ': verifying it needs that key'}`,
  };
}

/** The anchor of a session as verification sees it: trusted, or the problem that says why not. */
export function checkAnchor(dir: string, anchor: LedgerAnchor, keys: LedgerKeyring | undefined): ChainProblem | undefined {
  const distrust = anchorDistrust(anchor, keys);
  if (distrust === undefined) return undefined;
  const keyed = keys !== undefined && keys.size > 0;
  return { file: path.join(dir, ANCHOR_FILE), line: 0, code: keyed || anchor.hash_alg === undefined ? 'ANCHOR_MISMATCH' : 'KEY_REQUIRED', message: `the anchor ${distrust}` };
}

export interface PairingResult {
  problems: ChainProblem[];
  /** Entries at the very end of one ledger without their twin: a crash between a turn's two writes, repairable. */
  tail?: { kind: LedgerKind; file: string; line: number; offset: number; entries: number; turns: string };
}

/**
 * Every turn of segment `segment` has both entries. The digests of the two
 * segments decide it in the common case; when they differ, both files are read
 * again for the turn numbers (sorted typed arrays, no map per entry) to name the
 * first turn of each that lacks its twin.
 */
export function pairTurns(dir: string, segment: number, exec: SegmentReport, evidence: SegmentReport, last: boolean): PairingResult {
  if (!exec.turns || !evidence.turns || sameTurns(exec.turns, evidence.turns)) return { problems: [] };
  const sides = { exec: turnColumn(exec.file), evidence: turnColumn(evidence.file) };
  const unpaired = {
    exec: unpairedIndexes(sides.exec.turns, sortedCopy(sides.evidence.turns)),
    evidence: unpairedIndexes(sides.evidence.turns, sortedCopy(sides.exec.turns)),
  };
  const result: PairingResult = { problems: [] };
  // Only one ledger has entries without a twin, and they are its last ones: the other write of those turns never happened.
  for (const [kind, other] of [
    ['exec', 'evidence'],
    ['evidence', 'exec'],
  ] as const) {
    const own = unpaired[kind];
    const column = sides[kind];
    const trailing = own.length > 0 && unpaired[other].length === 0 && own[0] === column.count - own.length && own[own.length - 1] === column.count - 1;
    if (last && trailing) {
      const first = own[0]!;
      result.tail = {
        kind,
        file: segmentPath(dir, kind, segment),
        line: column.lines[first]!,
        offset: column.offsets[first]!,
        entries: own.length,
        turns: own.length === 1 ? `turn ${column.turns[first]}` : `turns ${column.turns[first]}-${column.turns[own[own.length - 1]!]}`,
      };
      return result;
    }
  }
  for (const [kind, otherName] of [
    ['exec', 'evidence'],
    ['evidence', 'exec'],
  ] as const) {
    const first = unpaired[kind][0];
    if (first === undefined) continue;
    result.problems.push({
      file: segmentPath(dir, kind, segment),
      line: sides[kind].lines[first]!,
      code: 'TURN_UNPAIRED',
      message: `turn ${sides[kind].turns[first]} has no ${otherName} entry`,
    });
  }
  return result;
}

interface TurnColumn {
  count: number;
  turns: Float64Array;
  lines: Float64Array;
  offsets: Float64Array;
}

function turnColumn(file: string): TurnColumn {
  let column: TurnColumn = { count: 0, turns: new Float64Array(1024), lines: new Float64Array(1024), offsets: new Float64Array(1024) };
  readLines(file, {
    line(buffer, start, end, lineNumber, offset) {
      if (end === start) return;
      const { entry } = parseJsonLine(buffer.toString('utf8', start, end), lineNumber);
      const turn = entry?.turn_number;
      if (typeof turn !== 'number' || entry?.entry_type === 'L-SEGMENT') return;
      if (column.count === column.turns.length) column = grow(column);
      column.turns[column.count] = turn;
      column.lines[column.count] = lineNumber;
      column.offsets[column.count] = offset;
      column.count += 1;
    },
  });
  return { count: column.count, turns: column.turns.subarray(0, column.count), lines: column.lines.subarray(0, column.count), offsets: column.offsets.subarray(0, column.count) };
}

function grow(column: TurnColumn): TurnColumn {
  const size = column.turns.length * 2;
  const copy = (from: Float64Array): Float64Array => {
    const to = new Float64Array(size);
    to.set(from);
    return to;
  };
  return { count: column.count, turns: copy(column.turns), lines: copy(column.lines), offsets: copy(column.offsets) };
}

function sortedCopy(values: Float64Array): Float64Array {
  return Float64Array.from(values).sort();
}

/** Indexes (in file order) of turns that `others` (sorted) does not have. */
function unpairedIndexes(turns: Float64Array, others: Float64Array): number[] {
  const found: number[] = [];
  for (let i = 0; i < turns.length; i++) {
    const turn = turns[i]!;
    let low = 0;
    let high = others.length - 1;
    let hit = false;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const value = others[middle]!;
      if (value === turn) {
        hit = true;
        break;
      }
      if (value < turn) low = middle + 1;
      else high = middle - 1;
    }
    if (!hit) found.push(i);
  }
  return found;
}
