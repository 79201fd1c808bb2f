/**
 * The newest entries of a ledger segment, read from its end: what the console
 * shows of a session (its newest entries) or of one turn (the entries of its
 * turn number), without reading a long segment whole.
 */
import { open } from 'node:fs/promises';

/** Bytes read from the end of a segment at most. */
export const MAX_TAIL_BYTES = 4 * 1024 * 1024;

/** The whole lines of a file's last `maxBytes`; `truncated` when the file is longer. */
export async function readLedgerTail(file: string, maxBytes = MAX_TAIL_BYTES): Promise<{ lines: string[]; truncated: boolean }> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    const length = Math.min(size, maxBytes);
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    let text = buffer.toString('utf8');
    // A read from the middle of the file starts inside a line: that line is left out.
    if (length < size) text = text.slice(text.indexOf('\n') + 1);
    return { lines: text.split('\n').filter((line) => line.trim() !== ''), truncated: length < size };
  } finally {
    await handle.close();
  }
}

/** A line as its entry, or `{unreadable}` with the line's start. */
export function parseLedgerLine(line: string): unknown {
  try {
    return JSON.parse(line) as unknown;
  } catch {
    return { unreadable: line.slice(0, 200) };
  }
}
