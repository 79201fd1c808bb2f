/**
 * Verification of one hash-chained JSONL ledger file. Pure: it is given the
 * file's text and an optional checkpoint to start from, and reports the first
 * entry that does not verify. Legacy entries (written before hashing existed,
 * no `entry_hash`) are accepted with a warning, but only before the first hashed
 * entry: an unhashed entry inside a chain would be a way to hide a change.
 */
import { computeEntryHash } from './ledger-entry.js';

export type ChainProblemCode =
  | 'UNPARSEABLE'
  | 'ENTRY_HASH_MISMATCH'
  | 'PREVIOUS_HASH_MISMATCH'
  | 'HASH_MISSING'
  | 'CHECKPOINT_MISMATCH'
  | 'LEDGER_MISSING'
  | 'TURN_UNPAIRED';

export interface ChainProblem {
  file: string;
  /** 1-based line number; 0 for the file as a whole. */
  line: number;
  code: ChainProblemCode;
  message: string;
}

export interface ChainWarning {
  file: string;
  line: number;
  message: string;
}

export interface ParsedLine {
  line: number;
  entry?: Record<string, unknown>;
  error?: string;
}

export interface ChainStart {
  /** The line of the checkpointed entry. */
  line: number;
  entry_hash: string;
}

export interface ChainResult {
  problem?: ChainProblem;
  warnings: ChainWarning[];
  /** Entries whose hash was recomputed. */
  entriesChecked: number;
  /** Hash and line of the last entry (what the next append links to). */
  lastHash: string | null;
  lastLine: number;
  /** The verified entries after the start, with their lines, in file order. */
  entries: Array<{ line: number; entry: Record<string, unknown> }>;
}

export function parseJsonLines(text: string): ParsedLine[] {
  const parsed: ParsedLine[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    if (raw.trim() === '') return;
    try {
      const value: unknown = JSON.parse(raw);
      if (value === null || typeof value !== 'object' || Array.isArray(value)) parsed.push({ line: index + 1, error: 'not a JSON object' });
      else parsed.push({ line: index + 1, entry: value as Record<string, unknown> });
    } catch (error) {
      parsed.push({ line: index + 1, error: error instanceof Error ? error.message : String(error) });
    }
  });
  return parsed;
}

export function verifyChain(file: string, lines: ParsedLine[], start?: ChainStart): ChainResult {
  const result: ChainResult = { warnings: [], entriesChecked: 0, lastHash: null, lastLine: 0, entries: [] };
  let expectedPrevious: string | null = null;
  let chainStarted = false;
  let previousLine = 0;
  let index = 0;

  if (start) {
    index = lines.findIndex((l) => l.line === start.line);
    const at = lines[index];
    const entry = at?.entry;
    if (!at || !entry) {
      return fail(result, file, start.line, 'CHECKPOINT_MISMATCH', `checkpointed line ${start.line} is missing or unreadable (file truncated or rewritten)`);
    }
    if (entry.entry_hash !== start.entry_hash || computeEntryHash(entry) !== start.entry_hash) {
      return fail(result, file, start.line, 'CHECKPOINT_MISMATCH', `entry at line ${start.line} no longer has the checkpointed hash ${start.entry_hash}`);
    }
    result.entriesChecked += 1;
    expectedPrevious = start.entry_hash;
    chainStarted = true;
    previousLine = start.line;
    result.lastHash = start.entry_hash;
    result.lastLine = start.line;
    index += 1;
  }

  let legacy = 0;
  for (; index < lines.length; index++) {
    const { line, entry, error } = lines[index]!;
    if (!entry) return fail(result, file, line, 'UNPARSEABLE', `line is not a JSON object: ${error ?? 'unknown error'}`);
    const hash = entry.entry_hash;
    if (hash === undefined) {
      if (chainStarted) return fail(result, file, line, 'HASH_MISSING', 'entry has no entry_hash after hashed entries (hash removed?)');
      legacy += 1;
      if (legacy === 1) result.warnings.push({ file, line, message: 'legacy entry without entry_hash (written before hashing); not verifiable' });
      result.lastLine = line;
      continue;
    }
    result.entriesChecked += 1;
    if (typeof hash !== 'string' || computeEntryHash(entry) !== hash) {
      return fail(result, file, line, 'ENTRY_HASH_MISMATCH', 'entry_hash does not match the entry content (entry was changed)');
    }
    const previous = entry.previous_hash ?? null;
    if (previous !== expectedPrevious) {
      const what = chainStarted ? `the entry at line ${previousLine}` : 'the start of the chain (null)';
      return fail(result, file, line, 'PREVIOUS_HASH_MISMATCH', `previous_hash does not link to ${what}: entries reordered, or its predecessor is missing`);
    }
    chainStarted = true;
    expectedPrevious = hash;
    previousLine = line;
    result.lastHash = hash;
    result.lastLine = line;
    result.entries.push({ line, entry });
  }
  if (legacy > 1) result.warnings[result.warnings.length - 1]!.message += ` (${legacy} legacy entries in all)`;
  return result;
}

function fail(result: ChainResult, file: string, line: number, code: ChainProblemCode, message: string): ChainResult {
  result.problem = { file, line, code, message };
  return result;
}
