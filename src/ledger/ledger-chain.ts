/**
 * Verification of one hash-chained JSONL ledger file (or segment of one). Pure:
 * it is fed the file's lines one at a time and an optional checkpoint to start
 * from, keeps nothing of a line once it is checked, and reports the first entry
 * that does not verify. Legacy entries (written before hashing existed,
 * no `entry_hash`) can only come before the first hashed entry: an unhashed
 * entry inside a chain would be a way to hide a change (HASH_MISSING).
 *
 * Keyed chains (ledger-key.ts): an entry sealed with `hmac-sha256` is checked
 * with the key its `key_id` names, and without that key it cannot be checked at
 * all (KEY_REQUIRED). What the key protects must not be shed by re-sealing:
 * a plain sha256 entry after a keyed one is a downgrade (HASH_DOWNGRADE). What a
 * key asks of the entries that are not sealed with it (legacy ones, plain ones,
 * a chain with none keyed) is judged over the whole session by keyed-rule.ts,
 * from what the verifier reports of the seals it saw; a verifier that is not
 * deferred (one file on its own) applies the same rule to its file.
 */
import { canonicalJson } from '../shared/canonical-json.js';
import { knownEntryJson } from './entry-json.js';
import { KEYED_HASH_ALG, type LedgerKey, type LedgerKeyring } from './ledger-key.js';
import { sha256 } from './ledger-entry.js';
import { chainKeying, judgeKeying } from './keyed-rule.js';

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
  | 'UNKEYED_CHAIN'
  | 'UNKEYED_ENTRY'
  | 'SEGMENT_MISSING'
  | 'SEGMENT_HEADER_INVALID'
  | 'ANCHOR_MISMATCH'
  | 'SESSION_MISMATCH'
  | 'TORN_TAIL';

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
  /**
   * The file continues a chain from another file (a segment after the first):
   * its first entry's `previous_hash` is taken as given and reported as
   * `continuesFrom`, for the caller to join to the file before.
   * @defaultValue false: the chain starts with `previous_hash: null`
   */
  continues?: boolean;
  /**
   * Leave what the key asks of unkeyed entries (keyed-rule.ts) to the caller,
   * who sees every segment of the session's two ledgers; the result's seal
   * fields (`legacyLines`, `firstPlainLine`, `claimsKeyed`, ...) tell it what
   * it needs. Legacy entries are then not warned about here either: in a keyed
   * session they are an error.
   * @defaultValue false
   */
  deferUnkeyed?: boolean;
  /** Keep the verified entries in the result (replay and checkpoints read them). @defaultValue false for ChainVerifier, true for verifyChain */
  keepEntries?: boolean;
  /** Called with each verified entry after the start, in file order (a streaming replay). @defaultValue none */
  onEntry?: (line: number, entry: Record<string, unknown>) => void;
}

export interface ChainResult {
  problem?: ChainProblem;
  warnings: ChainWarning[];
  /** Entries whose hash was recomputed. */
  entriesChecked: number;
  /** Hash and line of the last entry (what the next append links to). */
  lastHash: string | null;
  lastLine: number;
  /** The timestamp of the last hashed entry. */
  lastTimestamp?: string;
  /** The last hashed entry is HMAC-sealed. */
  lastKeyed: boolean;
  /** The first hashed entry seen is HMAC-sealed (undefined when there was none). */
  firstKeyed?: boolean;
  /** Hashed entries that are HMAC-sealed. */
  keyedEntries: number;
  /** The first plain (or legacy) entry after the start, 0 when none. */
  firstUnkeyedLine: number;
  /** The first hashed entry after the start sealed with plain sha256, 0 when none. */
  firstPlainLine: number;
  /** The first entry that names a ledger key (`hash_alg: hmac-sha256`), whether or not its seal could be checked; 0 when none. */
  firstKeyedLine: number;
  /** Some entry named a ledger key: the file was written keyed, whatever else it holds. */
  claimsKeyed: boolean;
  /** Entries without entry_hash before the first hashed one (written before hashing existed, or forged as such). */
  legacyLines: number[];
  /** With `continues`: the `previous_hash` of the first entry, which the file before must end with. */
  continuesFrom?: string | null;
  /** The verified entries after the start, with their lines, in file order (with `keepEntries`). */
  entries: Array<{ line: number; entry: Record<string, unknown> }>;
}

export function parseJsonLines(text: string): ParsedLine[] {
  const parsed: ParsedLine[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    if (raw.trim() === '') return;
    parsed.push(parseJsonLine(raw, index + 1));
  });
  return parsed;
}

/** One line of a ledger, parsed; a line that is not a JSON object is an error. */
export function parseJsonLine(raw: string, line: number): ParsedLine {
  try {
    const value: unknown = JSON.parse(raw);
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return { line, error: 'not a JSON object' };
    return { line, entry: value as Record<string, unknown> };
  } catch (error) {
    return { line, error: error instanceof Error ? error.message : String(error) };
  }
}

/** verifyChain over lines already in memory: a small file, or a test. */
export function verifyChain(file: string, lines: ParsedLine[], start?: ChainStart, options: ChainOptions = {}): ChainResult {
  const verifier = new ChainVerifier(file, { keepEntries: true, ...options }, start);
  for (const { line, entry, error } of lines) {
    if (!verifier.push(line, entry, error)) break;
  }
  return verifier.finish();
}

/** The result of a check before its first line. */
export function emptyChainResult(): ChainResult {
  return {
    warnings: [],
    entriesChecked: 0,
    lastHash: null,
    lastLine: 0,
    lastKeyed: false,
    keyedEntries: 0,
    firstUnkeyedLine: 0,
    firstPlainLine: 0,
    firstKeyedLine: 0,
    claimsKeyed: false,
    legacyLines: [],
    entries: [],
  };
}

/**
 * Verifies one hash-chained file fed line by line, in constant memory: each
 * line is checked against the one before it and then forgotten. With a start
 * (a checkpoint), lines before it are ignored and the checkpointed line must
 * still carry the checkpointed hash.
 */
export class ChainVerifier {
  private readonly result: ChainResult = emptyChainResult();
  private expectedPrevious: string | null = null;
  private chainStarted = false;
  private previousLine = 0;
  /** The line of the last keyed entry so far (0: none). */
  private lastKeyedLine = 0;
  private awaitingStart: ChainStart | undefined;
  private done = false;

  constructor(
    private readonly file: string,
    private readonly options: ChainOptions = {},
    start?: ChainStart,
  ) {
    this.awaitingStart = start;
  }

  /**
   * The next line: its parsed entry, or why it is not one. `raw` is the line's
   * text, which lets an entry written in canonical form be hashed without the
   * general canonical walk. Returns false once a problem was found (the rest of
   * the file need not be read).
   */
  push(line: number, entry: Record<string, unknown> | undefined, error?: string, raw?: string): boolean {
    if (this.done) return false;
    if (this.awaitingStart !== undefined) {
      if (line < this.awaitingStart.line) return true;
      if (!entry) return this.fail(this.awaitingStart.line, 'CHECKPOINT_MISMATCH', checkpointMissing(this.awaitingStart.line));
      return this.begin(line, entry.entry_hash, entry.timestamp, expectedHash(entry, this.options.keys, raw));
    }
    if (!entry) return this.fail(line, 'UNPARSEABLE', `line is not a JSON object: ${error ?? 'unknown error'}`);
    const hash = entry.entry_hash;
    if (hash === undefined) {
      if (this.chainStarted) return this.fail(line, 'HASH_MISSING', 'entry has no entry_hash after hashed entries (hash removed?)');
      this.result.legacyLines.push(line);
      if (this.result.firstUnkeyedLine === 0) this.result.firstUnkeyedLine = line;
      this.result.lastLine = line;
      return true;
    }
    return this.link(line, hash, entry.previous_hash ?? null, entry.timestamp, expectedHash(entry, this.options.keys, raw), entry);
  }

  /**
   * The next line, read in the writer's form without parsing (writer-line.ts)
   * and sealed from its bytes by the caller (expectedLineHash): the same checks
   * as push, without the entry object, which is why a verifier that keeps or
   * replays entries cannot take this way.
   */
  pushSealed(line: number, fields: SealedFields, sealed: ExpectedHash): boolean {
    if (this.options.keepEntries || this.options.onEntry) throw new Error('a chain that keeps or replays entries needs them parsed: push them');
    if (this.done) return false;
    if (this.awaitingStart !== undefined) {
      if (line < this.awaitingStart.line) return true;
      return this.begin(line, fields.entryHash, fields.timestamp, sealed);
    }
    return this.link(line, fields.entryHash, fields.previousHash ?? null, fields.timestamp, sealed);
  }

  /** The line a checkpoint points at: it must still carry the checkpointed hash, and the chain goes on from it. */
  private begin(line: number, hash: unknown, timestamp: unknown, sealed: ExpectedHash): boolean {
    const start = this.awaitingStart!;
    this.awaitingStart = undefined;
    if (line > start.line) return this.fail(start.line, 'CHECKPOINT_MISMATCH', checkpointMissing(start.line));
    if ('code' in sealed) return this.failSeal(start.line, sealed);
    if (hash !== start.entry_hash || sealed.hash !== start.entry_hash) {
      return this.fail(start.line, 'CHECKPOINT_MISMATCH', `entry at line ${start.line} no longer has the checkpointed hash ${start.entry_hash}`);
    }
    const { result } = this;
    result.entriesChecked += 1;
    this.noteSeal(sealed.keyed, start.line);
    this.expectedPrevious = start.entry_hash;
    this.chainStarted = true;
    this.previousLine = start.line;
    result.lastHash = start.entry_hash;
    result.lastLine = start.line;
    result.lastTimestamp = typeof timestamp === 'string' ? timestamp : undefined;
    return true;
  }

  /** A hashed entry after the start: its seal, then its link to the entry before. */
  private link(line: number, hash: unknown, previous: unknown, timestamp: unknown, sealed: ExpectedHash, entry?: Record<string, unknown>): boolean {
    const { result } = this;
    result.entriesChecked += 1;
    if ('code' in sealed) return this.failSeal(line, sealed);
    if (!sealed.keyed && this.lastKeyedLine !== 0) {
      return this.fail(
        line,
        'HASH_DOWNGRADE',
        `entry is sealed with plain sha256 after the HMAC-sealed entry at line ${this.lastKeyedLine}: the chain was re-sealed without the ledger key`,
      );
    }
    if (typeof hash !== 'string' || sealed.hash !== hash) {
      return this.fail(line, 'ENTRY_HASH_MISMATCH', 'entry_hash does not match the entry content (entry was changed)');
    }
    if (!this.chainStarted && this.options.continues && result.continuesFrom === undefined) {
      // The first entry of a later segment links to the segment before; the caller joins the two.
      result.continuesFrom = previous as string | null;
    } else if (previous !== this.expectedPrevious) {
      const what = this.chainStarted ? `the entry at line ${this.previousLine}` : 'the start of the chain (null)';
      return this.fail(line, 'PREVIOUS_HASH_MISMATCH', `previous_hash does not link to ${what}: entries reordered, or its predecessor is missing`);
    }
    this.noteSeal(sealed.keyed, line);
    this.chainStarted = true;
    this.expectedPrevious = hash;
    this.previousLine = line;
    result.lastHash = hash;
    result.lastLine = line;
    result.lastTimestamp = typeof timestamp === 'string' ? timestamp : undefined;
    if (entry !== undefined) {
      if (this.options.keepEntries) result.entries.push({ line, entry });
      this.options.onEntry?.(line, entry);
    }
    return true;
  }

  /** The verdict, once every line was pushed. */
  finish(): ChainResult {
    const { result } = this;
    if (this.done) return result;
    this.done = true;
    if (this.awaitingStart !== undefined) {
      const { line } = this.awaitingStart;
      this.awaitingStart = undefined;
      return this.failed(line, 'CHECKPOINT_MISMATCH', checkpointMissing(line));
    }
    if (!this.options.deferUnkeyed) {
      // One file on its own is all the session there is.
      const [judged] = judgeKeying([chainKeying(this.file, result)], this.options);
      result.warnings.push(...judged!.warnings);
      result.problem ??= judged!.problems[0];
    }
    return result;
  }

  private noteSeal(keyed: boolean, line: number): void {
    const { result } = this;
    if (result.firstKeyed === undefined) result.firstKeyed = keyed;
    result.lastKeyed = keyed;
    if (keyed) {
      this.lastKeyedLine = line;
      result.keyedEntries += 1;
      if (result.firstKeyedLine === 0) {
        result.firstKeyedLine = line;
        result.claimsKeyed = true;
      }
    } else {
      if (result.firstUnkeyedLine === 0) result.firstUnkeyedLine = line;
      if (result.firstPlainLine === 0) result.firstPlainLine = line;
    }
  }

  /** An entry whose seal cannot be checked; one that names a key it could not be checked with still says the file was written keyed. */
  private failSeal(line: number, sealed: { code: ChainProblemCode; message: string }): false {
    if (sealed.code === 'KEY_REQUIRED' || sealed.code === 'KEY_UNKNOWN') {
      this.result.claimsKeyed = true;
      if (this.result.firstKeyedLine === 0) this.result.firstKeyedLine = line;
    }
    return this.fail(line, sealed.code, sealed.message);
  }

  private fail(line: number, code: ChainProblemCode, message: string): false {
    this.failed(line, code, message);
    return false;
  }

  private failed(line: number, code: ChainProblemCode, message: string): ChainResult {
    this.done = true;
    this.result.problem = { file: this.file, line, code, message };
    return this.result;
  }
}

/** What an entry's hash must be, or why it cannot be known. */
export type ExpectedHash = { hash: string; keyed: boolean } | { code: ChainProblemCode; message: string };

/** The chain's fields of a line read without parsing (writer-line.ts's WriterLine has them). */
export interface SealedFields {
  entryHash: string;
  previousHash: string | null | undefined;
  timestamp: string | undefined;
}

/**
 * What an entry's hash must be under the scheme it names, or why it cannot be
 * known: a keyed entry needs the key its `key_id` names. `raw` is the line's
 * text, when the caller has it.
 */
export function expectedHash(entry: Record<string, unknown>, keys: LedgerKeyring | undefined, raw: string | undefined): ExpectedHash {
  const scheme = sealScheme(entry.hash_alg, entry.key_id, keys);
  if (scheme === undefined) return { hash: sha256(canonicalOf(entry, raw)), keyed: false };
  if ('code' in scheme) return scheme;
  return { hash: scheme.seal(canonicalOf(entry, raw)), keyed: true };
}

/**
 * The same for a line in the writer's form: `sealed` is the text that was
 * sealed, the line's own bytes up to its entry_hash closed by a brace
 * (writer-line.ts says why that is the canonical form).
 */
export function expectedLineHash(hashAlg: string | undefined, keyId: string | undefined, keys: LedgerKeyring | undefined, sealed: Uint8Array): ExpectedHash {
  const scheme = sealScheme(hashAlg, keyId, keys);
  if (scheme === undefined) return { hash: sha256(sealed), keyed: false };
  if ('code' in scheme) return scheme;
  return { hash: scheme.seal(sealed), keyed: true };
}

/** The key that seals an entry of this `hash_alg` and `key_id`: undefined for plain sha256, or why there is none. */
function sealScheme(alg: unknown, keyIdValue: unknown, keys: LedgerKeyring | undefined): LedgerKey | undefined | { code: ChainProblemCode; message: string } {
  if (alg === undefined) return undefined;
  if (alg !== KEYED_HASH_ALG) {
    return { code: 'HASH_ALG_UNKNOWN', message: `hash_alg ${JSON.stringify(alg).slice(0, 40)} is not ${KEYED_HASH_ALG} (or absent for sha256)` };
  }
  const keyId = typeof keyIdValue === 'string' ? keyIdValue : '';
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
  return key;
}

/**
 * The canonical JSON of an entry without its entry_hash. The writer makes each
 * line that very text with `,"entry_hash":"..."}` in place of its closing brace,
 * so when the fast serializer's text and the line agree, that is the answer,
 * and only other lines pay for the general walk with its key sorting.
 */
function canonicalOf(entry: Record<string, unknown>, raw: string | undefined): string {
  if (raw !== undefined && typeof entry.entry_hash === 'string') {
    const known = knownEntryJson(entry);
    if (known !== undefined && raw.length === known.length + entry.entry_hash.length + 16 && raw.startsWith(known.slice(0, -1)) && raw.endsWith(`,"entry_hash":"${entry.entry_hash}"}`)) {
      return known;
    }
  }
  const { entry_hash: _ignored, ...rest } = entry;
  return canonicalJson(rest);
}

function checkpointMissing(line: number): string {
  return `checkpointed line ${line} is missing or unreadable (file truncated or rewritten)`;
}

/** The error code for a chain that does not verify: a missing key is not tampering. */
export function chainErrorCode(problem: ChainProblem): 'UHLP_LEDGER_INTEGRITY' | 'UHLP_LEDGER_KEY_REQUIRED' {
  return problem.code === 'KEY_REQUIRED' ? 'UHLP_LEDGER_KEY_REQUIRED' : 'UHLP_LEDGER_INTEGRITY';
}

