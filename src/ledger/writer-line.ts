/**
 * Reading a ledger line in the writer's form without JSON.parse. The writer
 * makes each line the canonical JSON of its entry (canonical-json.ts) with
 * `,"entry_hash":"…"}` in place of the closing brace, so the text that was
 * sealed is the line's own bytes up to that comma, closed by a brace. A
 * verifier that checks the line's form byte by byte can hash those bytes as
 * they are and read the few fields the chain needs, instead of parsing every
 * entry into objects and writing it back out: most of verification's cost.
 *
 * The form accepted here is a strict subset of canonical JSON: ASCII only, no
 * escapes, no whitespace, integers of at most 15 digits (not -0), object keys in
 * strictly increasing order at every depth. For such text, and only for it,
 * canonicalJson(JSON.parse(text)) is the text itself, so hashing the bytes gives
 * what hashing the parsed entry would, and verdicts do not depend on the path
 * taken. A line outside the subset (an escaped string, a non-ASCII path, a
 * float, a field of an unexpected type, a legacy line) is not an error here:
 * the scan says no and the caller parses the line the general way.
 */

/** What the chain needs from a line, valid after `scanWriterLine` returned true. */
export interface WriterLine {
  /** Offset of the comma before `"entry_hash"`: the sealed text is the line's bytes up to it, then `}`. */
  sealedEnd: number;
  entryHash: string;
  /** null for a JSON null; undefined when absent. */
  previousHash: string | null | undefined;
  entryType: string | undefined;
  sessionId: string | undefined;
  timestamp: string | undefined;
  turnNumber: number | undefined;
  hashAlg: string | undefined;
  keyId: string | undefined;
}

export function emptyWriterLine(): WriterLine {
  return {
    sealedEnd: 0,
    entryHash: '',
    previousHash: undefined,
    entryType: undefined,
    sessionId: undefined,
    timestamp: undefined,
    turnNumber: undefined,
    hashAlg: undefined,
    keyId: undefined,
  };
}

const QUOTE = 0x22;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_OBJECT = 0x7b;
const CLOSE_OBJECT = 0x7d;
const OPEN_ARRAY = 0x5b;
const CLOSE_ARRAY = 0x5d;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const ZERO = 0x30;
const NINE = 0x39;
/** Nesting deeper than this is left to the general parser. */
const MAX_DEPTH = 32;

/** The top-level fields the chain reads, by name. */
const OTHER = 0;
const ENTRY_HASH = 1;
const PREVIOUS_HASH = 2;
const ENTRY_TYPE = 3;
const SESSION_ID = 4;
const TIMESTAMP = 5;
const TURN_NUMBER = 6;
const HASH_ALG = 7;
const KEY_ID = 8;

const FIELDS: ReadonlyArray<readonly [string, number]> = [
  ['entry_hash', ENTRY_HASH],
  ['previous_hash', PREVIOUS_HASH],
  ['entry_type', ENTRY_TYPE],
  ['session_id', SESSION_ID],
  ['timestamp', TIMESTAMP],
  ['turn_number', TURN_NUMBER],
  ['hash_alg', HASH_ALG],
  ['key_id', KEY_ID],
];
const FIELD_NAMES = FIELDS.map(([name]) => Buffer.from(name));
const FIELD_IDS = FIELDS.map(([, id]) => id);

/** Per field, where its string value (between the quotes) lies in the line being scanned; -1: absent. */
const valueStarts = new Int32Array(KEY_ID + 1);
const valueEnds = new Int32Array(KEY_ID + 1);

/** Per depth, for the key-order check: where the previous key of the object at that depth lies (-1: none yet). */
const previousKeyStart = new Int32Array(MAX_DEPTH + 1);
const previousKeyEnd = new Int32Array(MAX_DEPTH + 1);
/** Per depth: the container is an object (1) or an array (0). */
const isObject = new Uint8Array(MAX_DEPTH + 1);

/**
 * Scans `buffer[start, end)`. True when the line is in the writer's form; then
 * `out` holds its fields. False sends the line to the general parser.
 */
export function scanWriterLine(buffer: Buffer, start: number, end: number, out: WriterLine): boolean {
  if (end - start < 2 || buffer[start] !== OPEN_OBJECT) return false;
  previousKeyStart[0] = -1;
  let i = start + 1;
  valueStarts.fill(-1);
  let turn: number | undefined;
  let previousIsNull = false;
  for (;;) {
    // A top-level member: "key":value.
    const keyStart = i + 1;
    const keyEnd = stringEnd(buffer, i, end);
    if (keyEnd < 0 || buffer[keyEnd + 1] !== COLON) return false;
    const field = fieldOf(buffer, keyStart, keyEnd);
    const valueStart = keyEnd + 2;
    if (field === ENTRY_HASH) {
      // The seal comes last, after a comma (a line with no other member was never written), and closes the line.
      const valueEnd = stringEnd(buffer, valueStart, end);
      if (previousKeyStart[0] === -1 || valueEnd < 0 || buffer[valueEnd + 1] !== CLOSE_OBJECT || valueEnd + 2 !== end) return false;
      out.sealedEnd = keyStart - 2;
      out.entryHash = latin1(buffer, valueStart + 1, valueEnd);
      break;
    }
    if (!keyAfterPrevious(buffer, 0, keyStart, keyEnd)) return false;
    let next: number;
    switch (field) {
      case OTHER:
        next = valueEnd(buffer, valueStart, end);
        break;
      case TURN_NUMBER:
        next = integerEnd(buffer, valueStart, end);
        if (next < 0) return false;
        turn = integerValue(buffer, valueStart, next);
        break;
      case PREVIOUS_HASH:
        if (isNull(buffer, valueStart, end)) {
          previousIsNull = true;
          next = valueStart + 4;
          break;
        }
      // falls through: otherwise a string, like the rest
      default: {
        const close = stringEnd(buffer, valueStart, end);
        if (close < 0) return false;
        next = close + 1;
        valueStarts[field] = valueStart + 1;
        valueEnds[field] = close;
      }
    }
    if (next < 0 || buffer[next] !== COMMA) return false;
    previousKeyStart[0] = keyStart;
    previousKeyEnd[0] = keyEnd;
    i = next + 1;
  }
  out.previousHash = previousIsNull ? null : stringValue(buffer, PREVIOUS_HASH);
  out.entryType = stringValue(buffer, ENTRY_TYPE);
  out.sessionId = stringValue(buffer, SESSION_ID);
  out.timestamp = stringValue(buffer, TIMESTAMP);
  out.hashAlg = stringValue(buffer, HASH_ALG);
  out.keyId = stringValue(buffer, KEY_ID);
  out.turnNumber = turn;
  return true;
}

/** Bytes that end a plain string (the quote) or put it outside the subset (controls, backslash, non-ASCII): one load per byte. */
const STRING_STOP = new Uint8Array(256);
for (let byte = 0; byte < 256; byte++) STRING_STOP[byte] = byte < 0x20 || byte === QUOTE || byte === BACKSLASH || byte >= 0x80 ? 1 : 0;

/** Where the string opening at `at` closes (its closing quote), or -1: not a string, or one with escapes or non-ASCII. */
function stringEnd(buffer: Uint8Array, at: number, end: number): number {
  if (buffer[at] !== QUOTE) return -1;
  let j = at + 1;
  while (j < end && STRING_STOP[buffer[j]!] === 0) j++;
  return j < end && buffer[j] === QUOTE ? j : -1;
}

/** Where the integer at `at` ends, or -1: not an integer in canonical form of at most 15 digits. */
function integerEnd(buffer: Uint8Array, at: number, end: number): number {
  let j = buffer[at] === MINUS ? at + 1 : at;
  const first = j;
  while (j < end && buffer[j]! >= ZERO && buffer[j]! <= NINE) j++;
  const digits = j - first;
  if (digits === 0 || digits > 15) return -1;
  // No leading zero, and no -0 (JSON.stringify writes it as 0).
  if (buffer[first] === ZERO && (digits > 1 || first !== at)) return -1;
  return j;
}

function integerValue(buffer: Uint8Array, from: number, to: number): number {
  const negative = buffer[from] === MINUS;
  let value = 0;
  for (let j = negative ? from + 1 : from; j < to; j++) value = value * 10 + (buffer[j]! - ZERO);
  return negative ? -value : value;
}

function isNull(buffer: Uint8Array, at: number, end: number): boolean {
  return at + 4 <= end && buffer[at] === 0x6e && buffer[at + 1] === 0x75 && buffer[at + 2] === 0x6c && buffer[at + 3] === 0x6c;
}

function isLiteral(buffer: Uint8Array, at: number, end: number): number {
  if (isNull(buffer, at, end)) return at + 4;
  // true
  if (at + 4 <= end && buffer[at] === 0x74 && buffer[at + 1] === 0x72 && buffer[at + 2] === 0x75 && buffer[at + 3] === 0x65) return at + 4;
  // false
  if (at + 5 <= end && buffer[at] === 0x66 && buffer[at + 1] === 0x61 && buffer[at + 2] === 0x6c && buffer[at + 3] === 0x73 && buffer[at + 4] === 0x65) return at + 5;
  return -1;
}

/**
 * Where the value starting at `at` ends, or -1 when it is not in the subset.
 * Nested containers are walked with an explicit stack, checking each object's
 * keys are in increasing order.
 */
function valueEnd(buffer: Uint8Array, at: number, end: number): number {
  let depth = 0;
  let i = at;
  for (;;) {
    // A value starts at i.
    const byte = buffer[i];
    if (byte === OPEN_OBJECT || byte === OPEN_ARRAY) {
      if (depth === MAX_DEPTH) return -1;
      depth += 1;
      isObject[depth] = byte === OPEN_OBJECT ? 1 : 0;
      previousKeyStart[depth] = -1;
      i += 1;
      if (buffer[i] === (byte === OPEN_OBJECT ? CLOSE_OBJECT : CLOSE_ARRAY)) {
        depth -= 1;
        i += 1;
      } else {
        if (byte === OPEN_OBJECT) i = memberValue(buffer, depth, i, end);
        if (i < 0) return -1;
        continue;
      }
    } else if (byte === QUOTE) {
      const close = stringEnd(buffer, i, end);
      if (close < 0) return -1;
      i = close + 1;
    } else if (byte === MINUS || (byte !== undefined && byte >= ZERO && byte <= NINE)) {
      i = integerEnd(buffer, i, end);
      if (i < 0) return -1;
    } else {
      i = isLiteral(buffer, i, end);
      if (i < 0) return -1;
    }
    // After a value: the caller's, or the next member or item, or the end of containers.
    for (;;) {
      if (depth === 0) return i;
      const next = buffer[i];
      if (next === COMMA) {
        i = isObject[depth] === 1 ? memberValue(buffer, depth, i + 1, end) : i + 1;
        if (i < 0) return -1;
        break;
      }
      if (next !== (isObject[depth] === 1 ? CLOSE_OBJECT : CLOSE_ARRAY)) return -1;
      depth -= 1;
      i += 1;
    }
  }
}

/** Reads `"key":` of a member of the object at `depth`, checking key order; returns where its value starts, or -1. */
function memberValue(buffer: Uint8Array, depth: number, at: number, end: number): number {
  const close = stringEnd(buffer, at, end);
  if (close < 0 || buffer[close + 1] !== COLON || !keyAfterPrevious(buffer, depth, at + 1, close)) return -1;
  previousKeyStart[depth] = at + 1;
  previousKeyEnd[depth] = close;
  return close + 2;
}

/** The key `[from, to)` sorts strictly after the previous key at `depth` (byte order is code-unit order for ASCII). */
function keyAfterPrevious(buffer: Uint8Array, depth: number, from: number, to: number): boolean {
  const previous = previousKeyStart[depth]!;
  if (previous < 0) return true;
  const previousEnd = previousKeyEnd[depth]!;
  const length = Math.min(to - from, previousEnd - previous);
  for (let k = 0; k < length; k++) {
    const a = buffer[previous + k]!;
    const b = buffer[from + k]!;
    if (a !== b) return a < b;
  }
  return to - from > previousEnd - previous;
}

/** Which of FIELDS the key `[from, to)` is, by length and first byte before comparing whole names. */
function fieldOf(buffer: Uint8Array, from: number, to: number): number {
  const length = to - from;
  const first = buffer[from];
  for (let f = 0; f < FIELD_NAMES.length; f++) {
    const name = FIELD_NAMES[f]!;
    if (name.length !== length || name[0] !== first) continue;
    let k = 1;
    while (k < length && buffer[from + k] === name[k]) k++;
    if (k === length) return FIELD_IDS[f]!;
  }
  return OTHER;
}

function stringValue(buffer: Buffer, field: number): string | undefined {
  return valueStarts[field]! < 0 ? undefined : latin1(buffer, valueStarts[field]!, valueEnds[field]!);
}

/** The bytes as a string: ASCII here, so latin1 is the same text as UTF-8 and cheaper to decode. */
function latin1(buffer: Uint8Array, from: number, to: number): string {
  return (buffer as Buffer).toString('latin1', from, to);
}
