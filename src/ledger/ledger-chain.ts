/**
 * Verification of one hash-chained JSONL ledger file. Pure: it is given the
 * file's text and an optional checkpoint to start from, and reports the first
 * entry that does not verify. Legacy entries (written before hashing existed,
 * no `entry_hash`) are accepted with a warning naming them, but only before the
 * first hashed entry: an unhashed entry inside a chain would be a way to hide a
 * change.
 *
 * Keyed chains (ledger-key.ts): an entry sealed with `hmac-sha256` is checked
 * with the key its `key_id` names, and without that key it cannot be checked at
 * all (KEY_REQUIRED). What the key protects must not be shed by re-sealing:
 * a plain sha256 entry after a keyed one is a downgrade (HASH_DOWNGRADE), and
 * when verification is given a key, a chain with no keyed entry from its start
 * (or checkpoint) on is one anybody could have re-hashed (UNKEYED_CHAIN), unless
 * `allowUnkeyed` says such chains predate the key. Plain entries before the
 * first keyed one are covered by it: its HMAC includes `previous_hash`.
 */
import { KEYED_HASH_ALG, type LedgerKeyring } from './ledger-key.js';
import { computeEntryHash } from './ledger-entry.js';

export type ChainProblemCode =
  | 'UNPARSEABLE'
  | 'ENTRY_HASH_MISMATCH'
  | 'PREVIOUS_HASH_MISMATCH'
  | 'HASH_MISSING'
  | 'CHECKPOINT_MISMATCH'
  | 'LEDGER_MISSING'
  | 'TURN_UNPAIRED'
  | 'KEY_REQUIRED'
  | 'KEY_UNKNOWN'
  | 'HASH_ALG_UNKNOWN'
  | 'HASH_DOWNGRADE'
  | 'UNKEYED_CHAIN';

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

export interface ChainOptions {
  /** Keys to check HMAC-sealed entries with. @defaultValue none: keyed entries are KEY_REQUIRED, plain chains pass */
  keys?: LedgerKeyring;
  /** With keys: a chain without any keyed entry is a warning, not UNKEYED_CHAIN (ledgers begun before the key). @defaultValue false */
  allowUnkeyed?: boolean;
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

export function verifyChain(file: string, lines: ParsedLine[], start?: ChainStart, options: ChainOptions = {}): ChainResult {
  const result: ChainResult = { warnings: [], entriesChecked: 0, lastHash: null, lastLine: 0, entries: [] };
  const { keys } = options;
  const keyed = keys !== undefined && keys.size > 0;
  let expectedPrevious: string | null = null;
  let chainStarted = false;
  let previousLine = 0;
  let index = 0;
  /** The line of the last keyed entry so far (0: none), and of the first unkeyed one after the start. */
  let lastKeyedLine = 0;
  let firstUnkeyedLine = 0;

  if (start) {
    index = lines.findIndex((l) => l.line === start.line);
    const at = lines[index];
    const entry = at?.entry;
    if (!at || !entry) {
      return fail(result, file, start.line, 'CHECKPOINT_MISMATCH', `checkpointed line ${start.line} is missing or unreadable (file truncated or rewritten)`);
    }
    const sealed = expectedHash(entry, keys);
    if ('code' in sealed) return fail(result, file, start.line, sealed.code, sealed.message);
    if (entry.entry_hash !== start.entry_hash || sealed.hash !== start.entry_hash) {
      return fail(result, file, start.line, 'CHECKPOINT_MISMATCH', `entry at line ${start.line} no longer has the checkpointed hash ${start.entry_hash}`);
    }
    result.entriesChecked += 1;
    if (sealed.keyed) lastKeyedLine = start.line;
    else firstUnkeyedLine = start.line;
    expectedPrevious = start.entry_hash;
    chainStarted = true;
    previousLine = start.line;
    result.lastHash = start.entry_hash;
    result.lastLine = start.line;
    index += 1;
  }

  const legacy: number[] = [];
  for (; index < lines.length; index++) {
    const { line, entry, error } = lines[index]!;
    if (!entry) return fail(result, file, line, 'UNPARSEABLE', `line is not a JSON object: ${error ?? 'unknown error'}`);
    const hash = entry.entry_hash;
    if (hash === undefined) {
      if (chainStarted) return fail(result, file, line, 'HASH_MISSING', 'entry has no entry_hash after hashed entries (hash removed?)');
      legacy.push(line);
      if (firstUnkeyedLine === 0) firstUnkeyedLine = line;
      result.lastLine = line;
      continue;
    }
    result.entriesChecked += 1;
    const sealed = expectedHash(entry, keys);
    if ('code' in sealed) return fail(result, file, line, sealed.code, sealed.message);
    if (!sealed.keyed && lastKeyedLine !== 0) {
      return fail(
        result,
        file,
        line,
        'HASH_DOWNGRADE',
        `entry is sealed with plain sha256 after the HMAC-sealed entry at line ${lastKeyedLine}: the chain was re-sealed without the ledger key`,
      );
    }
    if (typeof hash !== 'string' || sealed.hash !== hash) {
      return fail(result, file, line, 'ENTRY_HASH_MISMATCH', 'entry_hash does not match the entry content (entry was changed)');
    }
    const previous = entry.previous_hash ?? null;
    if (previous !== expectedPrevious) {
      const what = chainStarted ? `the entry at line ${previousLine}` : 'the start of the chain (null)';
      return fail(result, file, line, 'PREVIOUS_HASH_MISMATCH', `previous_hash does not link to ${what}: entries reordered, or its predecessor is missing`);
    }
    if (sealed.keyed) lastKeyedLine = line;
    else if (firstUnkeyedLine === 0) firstUnkeyedLine = line;
    chainStarted = true;
    expectedPrevious = hash;
    previousLine = line;
    result.lastHash = hash;
    result.lastLine = line;
    result.entries.push({ line, entry });
  }
  if (legacy.length > 0) {
    result.warnings.push({
      file,
      line: legacy[0]!,
      message: `legacy ${legacy.length === 1 ? 'entry' : 'entries'} without entry_hash (written before hashing) at ${lineList(legacy)}; not verifiable`,
    });
  }
  if (keyed && lastKeyedLine === 0 && firstUnkeyedLine !== 0) {
    const message = `a ledger key is given, but no entry from line ${firstUnkeyedLine} on is sealed with it: anybody could have rewritten and re-hashed this chain`;
    if (!options.allowUnkeyed) return fail(result, file, firstUnkeyedLine, 'UNKEYED_CHAIN', `${message} (--allow-unkeyed accepts ledgers begun before the key)`);
    result.warnings.push({ file, line: firstUnkeyedLine, message: `${message}; accepted as begun before the key (--allow-unkeyed)` });
  }
  return result;
}

/**
 * What an entry's hash must be under the scheme it names, or why it cannot be
 * known: a keyed entry needs the key its `key_id` names.
 */
function expectedHash(
  entry: Record<string, unknown>,
  keys: LedgerKeyring | undefined,
): { hash: string; keyed: boolean } | { code: ChainProblemCode; message: string } {
  const alg = entry.hash_alg;
  if (alg === undefined) return { hash: computeEntryHash(entry), keyed: false };
  if (alg !== KEYED_HASH_ALG) {
    return { code: 'HASH_ALG_UNKNOWN', message: `hash_alg ${JSON.stringify(alg).slice(0, 40)} is not ${KEYED_HASH_ALG} (or absent for sha256)` };
  }
  const keyId = typeof entry.key_id === 'string' ? entry.key_id : '';
  if (keys === undefined || keys.size === 0) {
    return {
      code: 'KEY_REQUIRED',
      message: `entry is sealed with ledger key ${keyId || '(no key_id)'}: verifying it needs that key (--key-file, UHLP_LEDGER_KEY_FILE or UHLP_LEDGER_KEY)`,
    };
  }
  const key = keys.get(keyId);
  if (key === undefined) {
    return {
      code: 'KEY_UNKNOWN',
      message: `entry is sealed with key id ${keyId.slice(0, 40) || '(none)'}, not with the key given (${[...keys.keys()].join(', ')}): the chain was re-sealed with another key, or the wrong key was given`,
    };
  }
  return { hash: computeEntryHash(entry, key), keyed: true };
}

/** `line 3`, `lines 1-4`, `lines 1, 3, 5-7`. */
function lineList(lines: number[]): string {
  const parts: string[] = [];
  for (let i = 0; i < lines.length; ) {
    let j = i;
    while (j + 1 < lines.length && lines[j + 1] === lines[j]! + 1) j++;
    parts.push(j === i ? `${lines[i]}` : `${lines[i]}-${lines[j]}`);
    i = j + 1;
  }
  return `${lines.length === 1 ? 'line' : 'lines'} ${parts.join(', ')}`;
}

/** The error code for a chain that does not verify: a missing key is not tampering. */
export function chainErrorCode(problem: ChainProblem): 'UHLP_LEDGER_INTEGRITY' | 'UHLP_LEDGER_KEY_REQUIRED' {
  return problem.code === 'KEY_REQUIRED' ? 'UHLP_LEDGER_KEY_REQUIRED' : 'UHLP_LEDGER_INTEGRITY';
}

function fail(result: ChainResult, file: string, line: number, code: ChainProblemCode, message: string): ChainResult {
  result.problem = { file, line, code, message };
  return result;
}
