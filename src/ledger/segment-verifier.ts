/**
 * Verification of one segment file, streamed line by line in constant memory:
 * the chain within it (ChainVerifier), its header (a later segment opens with an
 * L-SEGMENT line naming it and the last hash of the one before), a digest of
 * the turn numbers it holds (for the exec/evidence pairing check), and its torn
 * tail, if any. What joins segments to each other (links, anchors, pairing) is
 * ledger-join.ts: a segment is verified alone, so segments can be verified on
 * several threads at once.
 *
 * `ends` mode reads only the first and the last line, checking each one's own
 * seal: what a default verification does with segments before its checkpoint.
 */
import { statSync } from 'node:fs';
import path from 'node:path';
import { ChainVerifier, emptyChainResult, expectedHash, expectedLineHash, parseJsonLine, type ChainProblem, type ChainResult, type ChainStart, type ExpectedHash } from './ledger-chain.js';
import { SEGMENT_ENTRY_TYPE, type LedgerKind } from './ledger-entry.js';
import { KEYED_HASH_ALG, type LedgerKeyring } from './ledger-key.js';
import { readFirstLine, readLastLine, readLines } from './line-reader.js';
import { emptyWriterLine, scanWriterLine, type WriterLine } from './writer-line.js';

export interface SegmentTask {
  readonly file: string;
  readonly kind: LedgerKind;
  readonly segment: number;
  /** `full`: every line; `ends`: the first and last line only. */
  readonly mode: 'full' | 'ends';
  /** Full mode: verify from this checkpoint (lines before it are read for the turn digest only). */
  readonly start?: ChainStart;
  /** Full mode: lines whose entry_hash to report (where checkpoints point). */
  readonly watch?: readonly number[];
}

export interface SegmentVerifyOptions {
  keys?: LedgerKeyring;
  /** Each verified entry after the start, in order (replay). */
  onEntry?: (line: number, entry: Record<string, unknown>) => void;
  /** Bytes read so far, now and then. */
  onProgress?: (bytes: number) => void;
}

/** An order-free digest of the turn numbers of a segment's entries: equal sets give equal digests. */
export interface TurnDigest {
  count: number;
  a: number;
  b: number;
}

/**
 * What a segment's check found: the chain fields mean what they mean in
 * ChainResult (in ends mode, of the two lines read); keyed-rule.ts judges the
 * session by them.
 */
export interface SegmentReport extends Pick<ChainResult, SegmentChainField> {
  readonly file: string;
  readonly kind: LedgerKind;
  readonly segment: number;
  readonly mode: 'full' | 'ends';
  /** Whole lines (unknown, -1, in ends mode). */
  lines: number;
  bytes: number;
  /** The segment's first line when it is a segment header: the segment it names and the hash it continues from. */
  header?: { segment: unknown; previousHash: string | null; keyed: boolean };
  /** Full mode without a problem: the digest of the turn numbers. */
  turns?: TurnDigest;
  /** Bytes after the last line break: where they start and how many. */
  torn?: { line: number; offset: number; bytes: number };
  /** The entry_hash at each watched line (null: no entry there). */
  watched?: Record<number, string | null>;
}

/** The fields of a chain's check a segment report carries. */
type SegmentChainField =
  | 'problem'
  | 'warnings'
  | 'entriesChecked'
  | 'lastHash'
  | 'lastLine'
  | 'lastTimestamp'
  | 'lastKeyed'
  | 'firstKeyed'
  | 'keyedEntries'
  | 'firstUnkeyedLine'
  | 'firstPlainLine'
  | 'firstKeyedLine'
  | 'claimsKeyed'
  | 'legacyLines';

export function verifySegment(task: SegmentTask, options: SegmentVerifyOptions = {}): SegmentReport {
  return task.mode === 'ends' ? verifyEnds(task, options) : verifyFull(task, options);
}

/** A report of nothing read yet. */
export function emptyReport(task: SegmentTask): SegmentReport {
  // A report carries no entries: it crosses from a worker thread.
  const { entries: _entries, ...chain } = emptyChainResult();
  return { file: task.file, kind: task.kind, segment: task.segment, mode: task.mode, lines: 0, bytes: 0, ...chain };
}

function verifyFull(task: SegmentTask, options: SegmentVerifyOptions): SegmentReport {
  const report = emptyReport(task);
  const verifier = new ChainVerifier(
    task.file,
    { keys: options.keys, continues: task.segment > 1 && task.start === undefined, deferUnkeyed: true, ...(options.onEntry ? { onEntry: options.onEntry } : {}) },
    task.start,
  );
  const digest: TurnDigest = { count: 0, a: 0, b: 0 };
  const sessionId = sessionOfFile(task.file);
  const watch = task.watch && task.watch.length > 0 ? new Set(task.watch) : undefined;
  if (watch) report.watched = Object.fromEntries([...watch].map((line) => [line, null]));
  let first = true;
  let problem: ChainProblem | undefined;
  // Lines in the writer's form are checked from their bytes; a replay needs every entry parsed.
  const scanned = options.onEntry === undefined ? emptyWriterLine() : undefined;
  const startLine = task.start?.line ?? 0;
  const read = readLines(task.file, {
    line(buffer, start, end, lineNumber) {
      if (isBlank(buffer, start, end)) return true;
      if (scanned !== undefined && scanWriterLine(buffer, start, end, scanned) && scanned.entryType !== SEGMENT_ENTRY_TYPE) {
        if (sessionId !== undefined && scanned.sessionId !== sessionId) {
          problem = sessionProblem(task, lineNumber, scanned.sessionId, sessionId);
          return false;
        }
        if (watch?.has(lineNumber)) report.watched![lineNumber] = scanned.entryHash;
        if (first && task.segment > 1) {
          problem = headerProblem(task, lineNumber, `segment ${task.segment} does not open with its segment header`);
          return false;
        }
        first = false;
        if (scanned.turnNumber !== undefined) addTurn(digest, scanned.turnNumber);
        // Lines before the checkpoint count for the turn digest only: no need to hash them.
        if (lineNumber < startLine) return true;
        return verifier.pushSealed(lineNumber, scanned, sealedHash(buffer, start, scanned, options.keys));
      }
      const raw = buffer.toString('utf8', start, end);
      const { entry, error } = parseJsonLine(raw, lineNumber);
      if (entry !== undefined) {
        // Legacy entries (no entry_hash, before hashing existed) are only warned about; hashed ones must name their session.
        if (sessionId !== undefined && entry.session_id !== sessionId && entry.entry_hash !== undefined) {
          problem = sessionProblem(task, lineNumber, entry.session_id, sessionId);
          return false;
        }
        if (watch?.has(lineNumber)) report.watched![lineNumber] = typeof entry.entry_hash === 'string' ? entry.entry_hash : null;
        const type = entry.entry_type;
        if (type === SEGMENT_ENTRY_TYPE) {
          if (!first || task.segment === 1) {
            problem = headerProblem(task, lineNumber, `a segment header ${first ? 'opens the first segment' : 'inside the segment'}`);
            return false;
          }
          report.header = { segment: entry.segment, previousHash: (entry.previous_hash ?? null) as string | null, keyed: entry.hash_alg !== undefined };
          if (entry.segment !== task.segment) {
            problem = headerProblem(task, lineNumber, `the header names segment ${JSON.stringify(entry.segment)}, not ${task.segment}: segments renamed or swapped`);
            return false;
          }
        } else {
          if (first && task.segment > 1) {
            problem = headerProblem(task, lineNumber, `segment ${task.segment} does not open with its segment header`);
            return false;
          }
          const turn = entry.turn_number;
          if (typeof turn === 'number' && Number.isSafeInteger(turn)) addTurn(digest, turn);
        }
      }
      first = false;
      return verifier.push(lineNumber, entry, error, raw);
    },
    overlong(lineNumber) {
      problem ??= { file: task.file, line: lineNumber, code: 'UNPARSEABLE', message: 'line is longer than any entry may be (64 MiB): not a ledger entry' };
    },
    ...(options.onProgress ? { progress: options.onProgress } : {}),
  });
  const chain = verifier.finish();
  report.problem = problem ?? chain.problem;
  report.warnings = chain.warnings;
  report.entriesChecked = chain.entriesChecked;
  report.lines = read.lines;
  report.bytes = read.bytes;
  report.lastHash = chain.lastHash;
  report.lastLine = chain.lastLine;
  if (chain.lastTimestamp !== undefined) report.lastTimestamp = chain.lastTimestamp;
  report.lastKeyed = chain.lastKeyed;
  if (chain.firstKeyed !== undefined) report.firstKeyed = chain.firstKeyed;
  report.keyedEntries = chain.keyedEntries;
  report.firstUnkeyedLine = chain.firstUnkeyedLine;
  report.firstPlainLine = chain.firstPlainLine;
  report.firstKeyedLine = chain.firstKeyedLine;
  report.claimsKeyed = chain.claimsKeyed;
  report.legacyLines = chain.legacyLines;
  if (read.tail) report.torn = read.tail;
  if (report.problem === undefined && !read.stopped) report.turns = digest;
  return report;
}

/** The first and last line, each checked against its own seal; the lines between are not read. */
function verifyEnds(task: SegmentTask, options: SegmentVerifyOptions): SegmentReport {
  const report = emptyReport(task);
  report.lines = -1;
  report.bytes = statSync(task.file).size;
  const sessionId = sessionOfFile(task.file);
  const firstText = readFirstLine(task.file);
  const last = readLastLine(task.file);
  if (last.tornBytes > 0) report.torn = { line: -1, offset: last.size - last.tornBytes, bytes: last.tornBytes };
  const check = (text: string | undefined, where: 'first' | 'last'): Record<string, unknown> | undefined => {
    if (text === undefined || text.trim() === '') return undefined;
    const { entry, error } = parseJsonLine(text, 0);
    if (!entry) {
      report.problem ??= { file: task.file, line: 0, code: 'UNPARSEABLE', message: `the ${where} line is not a JSON object: ${error ?? 'unknown error'}` };
      return undefined;
    }
    // What the seals of the two lines say, for the keyed rule (the line of the last is not known here).
    const line = where === 'first' ? 1 : 0;
    if (entry.hash_alg === KEYED_HASH_ALG) {
      if (!report.claimsKeyed) report.firstKeyedLine = line;
      report.claimsKeyed = true;
    } else if (where === 'first') {
      if (entry.entry_hash === undefined) report.legacyLines = [1];
      else report.firstPlainLine = 1;
      report.firstUnkeyedLine = 1;
    }
    if (typeof entry.entry_hash !== 'string') return undefined;
    if (sessionId !== undefined && entry.session_id !== sessionId) {
      report.problem ??= sessionProblem(task, 0, entry.session_id, sessionId);
      return undefined;
    }
    const sealed = expectedHash(entry, options.keys, text);
    if ('code' in sealed) report.problem ??= { file: task.file, line: 0, code: sealed.code, message: `${where} line: ${sealed.message}` };
    else if (sealed.hash !== entry.entry_hash) {
      report.problem ??= { file: task.file, line: 0, code: 'ENTRY_HASH_MISMATCH', message: `the ${where} line's entry_hash does not match its content (entry was changed)` };
    } else {
      report.entriesChecked += 1;
      if (sealed.keyed) report.keyedEntries += 1;
      return entry;
    }
    return undefined;
  };
  const head = check(firstText, 'first');
  if (head?.entry_type === SEGMENT_ENTRY_TYPE) {
    report.header = { segment: head.segment, previousHash: (head.previous_hash ?? null) as string | null, keyed: head.hash_alg !== undefined };
    if (head.segment !== task.segment || task.segment === 1) report.problem ??= headerProblem(task, 1, `the header names segment ${JSON.stringify(head.segment)}, not ${task.segment}`);
  } else if (task.segment > 1 && report.problem === undefined) {
    report.problem = headerProblem(task, 1, `segment ${task.segment} does not open with its segment header`);
  }
  if (head) report.firstKeyed = head.hash_alg !== undefined;
  const tail = last.text === firstText ? head : check(last.text, 'last');
  if (tail) {
    report.lastHash = tail.entry_hash as string;
    report.lastKeyed = tail.hash_alg !== undefined;
    if (typeof tail.timestamp === 'string') report.lastTimestamp = tail.timestamp;
  }
  return report;
}

function headerProblem(task: SegmentTask, line: number, message: string): ChainProblem {
  return { file: task.file, line, code: 'SEGMENT_HEADER_INVALID', message };
}

/**
 * The expected hash of a line in the writer's form: its bytes up to the comma
 * before entry_hash, with a closing brace written over that comma for the
 * moment of hashing (the line is a range of the reader's buffer, not copied).
 */
function sealedHash(buffer: Buffer, start: number, line: WriterLine, keys: LedgerKeyring | undefined): ExpectedHash {
  const comma = line.sealedEnd;
  buffer[comma] = 0x7d;
  try {
    return expectedLineHash(line.hashAlg, line.keyId, keys, buffer.subarray(start, comma + 1));
  } finally {
    buffer[comma] = 0x2c;
  }
}

/** Only spaces, tabs and carriage returns (the writer never writes blank lines; a reader skips them as before). */
function isBlank(buffer: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const byte = buffer[i];
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  }
  return true;
}

/** Adds a turn number to a digest: two independent 32-bit mixes, xor-ed, so order does not matter. */
export function addTurn(digest: TurnDigest, turn: number): void {
  const low = turn >>> 0;
  const high = Math.floor(turn / 4294967296) >>> 0;
  digest.count += 1;
  digest.a ^= mix(low ^ Math.imul(high, 0x9e3779b1), 0x85ebca6b);
  digest.b ^= mix(Math.imul(low, 0x27d4eb2f) ^ high, 0xc2b2ae35);
}

function mix(value: number, multiplier: number): number {
  let h = Math.imul(value ^ (value >>> 16), multiplier);
  h = Math.imul(h ^ (h >>> 13), 0x165667b1);
  return (h ^ (h >>> 16)) >>> 0;
}

export function sameTurns(a: TurnDigest, b: TurnDigest): boolean {
  return a.count === b.count && a.a === b.a && a.b === b.b;
}

/**
 * The session a segment file belongs to by where it is
 * (`…/sessions/<sid>/ledger/<segment>`): each of its entries must name it, or a
 * session's whole ledger copied over another's would verify, the chain being
 * per file. Undefined for a file elsewhere (a test's, a copy being inspected).
 */
function sessionOfFile(file: string): string | undefined {
  const ledgerDir = path.dirname(file);
  const sessionDir = path.dirname(ledgerDir);
  if (path.basename(ledgerDir) !== 'ledger' || path.basename(path.dirname(sessionDir)) !== 'sessions') return undefined;
  return path.basename(sessionDir);
}

function sessionProblem(task: SegmentTask, line: number, found: unknown, expected: string): ChainProblem {
  return {
    file: task.file,
    line,
    code: 'SESSION_MISMATCH',
    message: `the entry names session ${String(JSON.stringify(found)).slice(0, 60)}, not ${expected} whose ledger this is: entries moved from another session's ledger`,
  };
}
