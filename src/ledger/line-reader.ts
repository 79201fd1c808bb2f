/**
 * Reading ledger files line by line in bounded memory. A ledger segment can be
 * far larger than a string may be (V8 caps one at about 512 MiB), and the ledger
 * thread, the verifier and the pruner all run off the request thread, so reads
 * are synchronous into one reused buffer: a line is handed over as a byte range
 * of that buffer, never copied unless the caller decodes it.
 *
 * The bytes after the last line break are not a line: a write cut short by a
 * crash leaves them, and they are reported as the file's torn tail.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** Bytes read per system call. */
const CHUNK_BYTES = 1024 * 1024;
/** A line longer than this is reported as too long and skipped, so that a damaged file cannot make a reader grow without bound. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;

export interface LineVisitor {
  /** A whole line, without its line break: `buffer[start, end)`, at byte `offset` of the file. Return false to stop reading. */
  line(buffer: Buffer, start: number, end: number, lineNumber: number, offset: number): boolean | void;
  /** A line longer than `maxLineBytes`, skipped. */
  overlong?(lineNumber: number): void;
  /** Called now and then with the bytes read so far. */
  progress?(bytes: number): void;
}

export interface ReadLinesResult {
  /** Whole lines seen. */
  lines: number;
  /** Bytes read. */
  bytes: number;
  /** Bytes after the last line break (a torn last line), if any: where they start and how many. */
  tail?: { line: number; offset: number; bytes: number };
  /** The visitor stopped the read. */
  stopped: boolean;
}

export interface ReadLinesOptions {
  /** @defaultValue MAX_LINE_BYTES */
  maxLineBytes?: number;
  /** Start reading at this byte offset (a line boundary), numbering lines from `firstLine`. @defaultValue 0 */
  offset?: number;
  /** @defaultValue 1 */
  firstLine?: number;
}

/**
 * One read buffer per thread, lent to one read at a time. A verifier reads
 * thousands of files; a fresh megabyte for each lives outside the heap and is
 * only freed by a full collection, so unreturned buffers, not lines, were most
 * of its memory.
 */
let spare: Buffer | undefined;

function borrowBuffer(size: number): Buffer {
  if (size === CHUNK_BYTES && spare !== undefined) {
    const buffer = spare;
    spare = undefined;
    return buffer;
  }
  return Buffer.allocUnsafe(size);
}

function returnBuffer(buffer: Buffer): void {
  if (buffer.length === CHUNK_BYTES) spare = buffer;
}

/** Reads `file` line by line; the file must exist. */
export function readLines(file: string, visitor: LineVisitor, options: ReadLinesOptions = {}): ReadLinesResult {
  const fd = openSync(file, 'r');
  try {
    return readLinesFd(fd, visitor, options);
  } finally {
    closeSync(fd);
  }
}

export function readLinesFd(fd: number, visitor: LineVisitor, options: ReadLinesOptions = {}): ReadLinesResult {
  const maxLine = options.maxLineBytes ?? MAX_LINE_BYTES;
  // A read that outgrows the borrowed buffer copies it into a larger one of its own; the borrowed one is free again.
  const borrowed = borrowBuffer(Math.min(CHUNK_BYTES, Math.max(4096, maxLine + 1)));
  try {
    return readInto(fd, visitor, options, borrowed);
  } finally {
    returnBuffer(borrowed);
  }
}

function readInto(fd: number, visitor: LineVisitor, options: ReadLinesOptions, first: Buffer): ReadLinesResult {
  const maxLine = options.maxLineBytes ?? MAX_LINE_BYTES;
  let buffer = first;
  let position = options.offset ?? 0;
  /** Bytes of `buffer` holding file data, and where the current line starts in it. */
  let filled = 0;
  let start = 0;
  /** The file offset of buffer[0]. */
  let base = position;
  let lineNumber = (options.firstLine ?? 1) - 1;
  let skipping = false;
  let reported = 0;
  for (;;) {
    if (filled === buffer.length) {
      if (start > 0) {
        buffer.copy(buffer, 0, start, filled);
        base += start;
        filled -= start;
        start = 0;
      } else if (buffer.length <= maxLine) {
        const grown = Buffer.allocUnsafe(Math.min(buffer.length * 2, maxLine + 1));
        buffer.copy(grown, 0, 0, filled);
        buffer = grown;
      } else {
        // One line fills the largest buffer allowed: skip it up to its line break.
        base += filled;
        filled = 0;
        skipping = true;
      }
    }
    const read = readSync(fd, buffer, filled, buffer.length - filled, position);
    if (read === 0) break;
    position += read;
    let from = filled;
    filled += read;
    for (;;) {
      const nl = buffer.indexOf(10, from);
      if (nl === -1 || nl >= filled) break;
      lineNumber += 1;
      if (skipping) {
        skipping = false;
        visitor.overlong?.(lineNumber);
      } else if (visitor.line(buffer, start, nl, lineNumber, base + start) === false) {
        return { lines: lineNumber, bytes: base + nl + 1 - (options.offset ?? 0), stopped: true };
      }
      start = nl + 1;
      from = start;
    }
    if (visitor.progress && position - reported >= 16 * 1024 * 1024) {
      reported = position;
      visitor.progress(position - (options.offset ?? 0));
    }
    if (start === filled) {
      base += filled;
      filled = 0;
      start = 0;
    }
  }
  const result: ReadLinesResult = { lines: lineNumber, bytes: position - (options.offset ?? 0), stopped: false };
  if (skipping || filled > start) {
    const offset = skipping ? base : base + start;
    result.tail = { line: lineNumber + 1, offset, bytes: position - offset };
  }
  return result;
}

export interface LastLine {
  /** The last whole line, decoded; undefined when the file has none. */
  text: string | undefined;
  /** Bytes after the last line break (a torn tail), 0 when the file ends with one. */
  tornBytes: number;
  /** The file's size. */
  size: number;
}

/** The last whole line of a file, read from its end (a few KiB for a ledger, whatever its size). */
export function readLastLine(file: string): LastLine {
  const fd = openSync(file, 'r');
  try {
    return readLastLineFd(fd);
  } finally {
    closeSync(fd);
  }
}

export function readLastLineFd(fd: number, maxLine = MAX_LINE_BYTES): LastLine {
  const size = fstatSync(fd).size;
  let window = 16 * 1024;
  for (;;) {
    const length = Math.min(size, window);
    const buffer = Buffer.allocUnsafe(length);
    const read = readSync(fd, buffer, 0, length, size - length);
    const bytes = buffer.subarray(0, read);
    const lastBreak = bytes.lastIndexOf(10);
    if (lastBreak === -1) {
      // No line break within the window: the whole file is one torn line, or the window is too small.
      if (length === size || length > maxLine) return { text: undefined, tornBytes: length, size };
      window *= 4;
      continue;
    }
    const tornBytes = read - lastBreak - 1;
    const previousBreak = bytes.lastIndexOf(10, lastBreak - 1);
    if (previousBreak === -1 && length < size && length <= maxLine) {
      window *= 4;
      continue;
    }
    return { text: bytes.toString('utf8', previousBreak + 1, lastBreak), tornBytes, size };
  }
}

/** The first line of a file (up to `maxBytes`), decoded; undefined when it has no whole line. */
export function readFirstLine(file: string, maxBytes = MAX_LINE_BYTES): string | undefined {
  const fd = openSync(file, 'r');
  try {
    let window = 16 * 1024;
    for (;;) {
      const buffer = Buffer.allocUnsafe(window);
      const read = readSync(fd, buffer, 0, window, 0);
      const nl = buffer.subarray(0, read).indexOf(10);
      if (nl !== -1) return buffer.toString('utf8', 0, nl);
      if (read < window || window > maxBytes) return undefined;
      window *= 4;
    }
  } finally {
    closeSync(fd);
  }
}

/** Whole lines in a file: a scan for line breaks, no decoding. */
export function countLines(file: string): number {
  return readLines(file, { line: () => undefined }).lines;
}
