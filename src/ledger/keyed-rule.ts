/**
 * Keyed means keyed: what a ledger key asks of the entries that are not sealed
 * with it, judged over a whole session (both ledgers, every segment), because a
 * writer without the key can add entries anywhere a chain does not reach.
 *
 * A session is keyed when any of its entries, segment headers or its anchor
 * names a ledger key, whether or not that seal could be checked (without the
 * key it cannot). In a keyed session:
 *
 * - an unhashed ("legacy") entry is an error (UNKEYED_ENTRY) wherever it is,
 *   whatever the flags: no seal covers it, so prepending one to a keyed chain
 *   is exactly what a writer without the key can do;
 * - a plain sha256 entry is an error too (UNKEYED_ENTRY), unless a key is given
 *   with `allowUnkeyed` and the plain entries begin a ledger that a keyed entry
 *   continues (a session begun before the core had a key): the first keyed
 *   entry's HMAC covers them through `previous_hash`, so that is a warning;
 * - a ledger with no keyed entry at all beside a keyed one is UNKEYED_CHAIN,
 *   which `allowUnkeyed` does not excuse: its twin says the session was keyed.
 *
 * A session that nothing names a key for was never keyed: with a key given it
 * is UNKEYED_CHAIN (anybody could have re-hashed it), or with `allowUnkeyed` a
 * warning; its legacy entries pass with a warning naming them, as they always did.
 */
import path from 'node:path';
import type { ChainProblem, ChainResult, ChainWarning } from './ledger-chain.js';
import type { LedgerKeyring } from './ledger-key.js';

/** A place in a ledger: a file (a segment) and a 1-based line, 0 when only the file is known. */
export interface LedgerPlace {
  readonly file: string;
  readonly line: number;
}

/** What verification saw of one ledger's seals, its segments taken in order. */
export interface LedgerKeying {
  /** Where a problem of the ledger as a whole is named: its first segment verified. */
  readonly file: string;
  keyedEntries: number;
  /** Something of the ledger names a ledger key. */
  claimsKeyed: boolean;
  /** The first entry that names a ledger key (line 0: somewhere in that file). */
  firstKeyed?: LedgerPlace;
  /** The first hashed entry sealed with plain sha256. */
  firstPlain?: LedgerPlace;
  /** The first entry not sealed with a key, plain or legacy. */
  firstUnkeyed?: LedgerPlace;
  /** The plain entries come before the first keyed entry, which continues them. */
  plainBeforeKeyed: boolean;
  /** Unhashed entries, by file. */
  legacy: Array<{ file: string; lines: number[] }>;
  /** The chain already has a problem: whether the chain as a whole is keyed is not judged. */
  broken: boolean;
}

export interface KeyingOptions {
  keys?: LedgerKeyring;
  /** With keys: sessions never keyed, and the plain entries that begin a keyed ledger, are warnings. @defaultValue false */
  allowUnkeyed?: boolean;
}

export interface KeyingVerdict {
  problems: ChainProblem[];
  warnings: ChainWarning[];
}

/** An empty record of seals for a ledger whose first segment is `file`. */
export function emptyKeying(file: string): LedgerKeying {
  return { file, keyedEntries: 0, claimsKeyed: false, plainBeforeKeyed: false, legacy: [], broken: false };
}

/** Adds a segment's seals to its ledger's, segments taken in order. */
export function addSegmentKeying(keying: LedgerKeying, file: string, seen: Pick<ChainResult, 'keyedEntries' | 'claimsKeyed' | 'firstKeyedLine' | 'firstPlainLine' | 'firstUnkeyedLine' | 'legacyLines'>): void {
  keying.keyedEntries += seen.keyedEntries;
  if (seen.claimsKeyed && keying.firstKeyed === undefined) keying.firstKeyed = { file, line: seen.firstKeyedLine };
  keying.claimsKeyed ||= seen.claimsKeyed;
  if (seen.firstPlainLine > 0 && keying.firstPlain === undefined) {
    keying.firstPlain = { file, line: seen.firstPlainLine };
    // Before it in this file, or in a file after this one (a later segment, later in order).
    keying.plainBeforeKeyed = !seen.claimsKeyed || seen.firstKeyedLine === 0 || seen.firstKeyedLine > seen.firstPlainLine;
    if (keying.firstKeyed !== undefined && keying.firstKeyed.file !== file) keying.plainBeforeKeyed = false;
  }
  if (seen.firstUnkeyedLine > 0 && keying.firstUnkeyed === undefined) keying.firstUnkeyed = { file, line: seen.firstUnkeyedLine };
  if (seen.legacyLines.length > 0) keying.legacy.push({ file, lines: seen.legacyLines });
}

/** The seals of one chain file verified on its own. */
export function chainKeying(file: string, result: ChainResult): LedgerKeying {
  const keying = emptyKeying(file);
  addSegmentKeying(keying, file, result);
  keying.broken = result.problem !== undefined;
  return keying;
}

/** Judges the ledgers of one session together: a verdict per ledger, in the order given. */
export function judgeKeying(ledgers: readonly LedgerKeying[], options: KeyingOptions): KeyingVerdict[] {
  const keyGiven = options.keys !== undefined && options.keys.size > 0;
  const allowUnkeyed = keyGiven && options.allowUnkeyed === true;
  const keyedBy = ledgers.find((ledger) => ledger.claimsKeyed)?.firstKeyed;
  return ledgers.map((ledger) => {
    const verdict: KeyingVerdict = { problems: [], warnings: [] };
    if (keyedBy === undefined) {
      for (const { file, lines } of ledger.legacy) {
        verdict.warnings.push({
          file,
          line: lines[0]!,
          message: `legacy ${lines.length === 1 ? 'entry' : 'entries'} without entry_hash (written before hashing) at ${lineList(lines)}; not verifiable`,
        });
      }
      if (keyGiven && !ledger.broken && ledger.firstUnkeyed !== undefined) {
        const found = unkeyedChain(ledger.firstUnkeyed.file, { keyedEntries: ledger.keyedEntries, firstUnkeyedLine: ledger.firstUnkeyed.line }, allowUnkeyed);
        if (found && 'code' in found) verdict.problems.push(found);
        else if (found) verdict.warnings.push(found);
      }
      return verdict;
    }
    if (!ledger.claimsKeyed) {
      // The twin ledger is keyed, this one not at all: one problem from its first unkeyed entry on.
      const where = ledger.firstUnkeyed;
      if (where === undefined) return verdict;
      if (keyGiven && !ledger.broken) {
        verdict.problems.push({
          file: where.file,
          line: where.line,
          code: 'UNKEYED_CHAIN',
          message: `a ledger key is given, but no entry from line ${where.line} on is sealed with it while ${place(keyedBy)} is sealed with it: anybody could have rewritten and re-hashed this chain (--allow-unkeyed does not apply to a keyed session)`,
        });
      } else {
        verdict.problems.push({ file: where.file, line: where.line, code: 'UNKEYED_ENTRY', message: `entry is not sealed with a ledger key, but this session is (${place(keyedBy)})` });
      }
      return verdict;
    }
    for (const { file, lines } of ledger.legacy) {
      verdict.problems.push({
        file,
        line: lines[0]!,
        code: 'UNKEYED_ENTRY',
        message: `entry has no entry_hash (${lineList(lines)}), but this session is sealed with a ledger key: every entry of a keyed session is sealed, so a writer without the key put it there`,
      });
    }
    const plain = ledger.firstPlain;
    if (plain === undefined) return verdict;
    const keyed = ledger.firstKeyed!;
    // Only a keyed entry that verified covers the plain ones before it.
    const covered = ledger.plainBeforeKeyed && ledger.keyedEntries > 0;
    const span = plain.file !== keyed.file || keyed.line <= plain.line ? `from ${place(plain)} on,` : keyed.line - 1 === plain.line ? `at line ${plain.line}` : `at lines ${plain.line}-${keyed.line - 1}`;
    if (covered && allowUnkeyed) {
      verdict.warnings.push({
        file: plain.file,
        line: plain.line,
        message: `plain sha256 entries ${span} before the first keyed entry (${plain.file === keyed.file && keyed.line > 0 ? `line ${keyed.line}` : place(keyed)}): accepted as written before the key (--allow-unkeyed); that entry's HMAC covers them through previous_hash`,
      });
      return verdict;
    }
    verdict.problems.push({
      file: plain.file,
      line: plain.line,
      code: 'UNKEYED_ENTRY',
      message:
        `entry is sealed with plain sha256 in a session sealed with the ledger key (${place(keyed)})` +
        (covered ? ': a session begun before the key? --allow-unkeyed accepts plain entries that begin a ledger the key sealed later' : ''),
    });
    return verdict;
  });
}

/**
 * With a key given, a chain of which no entry (from its start, or from a
 * checkpoint) is keyed is one anybody could have rewritten: UNKEYED_CHAIN, or
 * with `allowUnkeyed` a warning. Undefined when the chain has a keyed entry or
 * no unkeyed one.
 */
export function unkeyedChain(file: string, seen: { keyedEntries: number; firstUnkeyedLine: number }, allowUnkeyed: boolean): ChainProblem | ChainWarning | undefined {
  if (seen.keyedEntries > 0 || seen.firstUnkeyedLine === 0) return undefined;
  const line = seen.firstUnkeyedLine;
  const message = `a ledger key is given, but no entry from line ${line} on is sealed with it: anybody could have rewritten and re-hashed this chain`;
  if (!allowUnkeyed) return { file, line, code: 'UNKEYED_CHAIN', message: `${message} (--allow-unkeyed accepts ledgers begun before the key)` };
  return { file, line, message: `${message}; accepted as begun before the key (--allow-unkeyed)` };
}

/** `line 3`, `lines 1-4`, `lines 1, 3, 5-7`. */
export function lineList(lines: readonly number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < lines.length; ) {
    let j = i;
    while (j + 1 < lines.length && lines[j + 1] === lines[j]! + 1) j++;
    parts.push(j === i ? `${lines[i]}` : `${lines[i]}-${lines[j]}`);
    i = j + 1;
  }
  return `${lines.length === 1 ? 'line' : 'lines'} ${parts.join(', ')}`;
}

function place(where: LedgerPlace): string {
  return where.line > 0 ? `${path.basename(where.file)}:${where.line}` : path.basename(where.file);
}
