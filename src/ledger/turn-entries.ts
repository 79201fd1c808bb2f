/**
 * The entries of one turn of a session's ledger, from whichever segment holds
 * them (ledger-paths.ts): what the console shows of a turn it opens. Turn
 * numbers only grow along a ledger, so the segment is the newest one whose
 * first turn is not after the turn's; within it the turn is usually near the
 * end (read from there, ledger-tail.ts), else the segment is read line by line,
 * off the event loop's way (a segment may be 64 MiB): only a line naming the
 * turn's number is parsed.
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { LedgerKind } from './ledger-entry.js';
import { segmentFileName } from './ledger-paths.js';
import { MAX_TAIL_BYTES, parseLedgerLine, readLedgerTail } from './ledger-tail.js';

/** Bytes of a segment's start read to find its first turn. */
const HEAD_BYTES = 64 * 1024;

/**
 * The entries of turn `turnNumber` in ledger `kind` of the session whose ledger
 * directory is `dir`, whose segments are `segments` (ascending); empty when no
 * segment holds it (pruned, sampled out, not written yet).
 */
export async function readTurnEntries(dir: string, kind: LedgerKind, segments: readonly number[], turnNumber: number, tailBytes = MAX_TAIL_BYTES): Promise<unknown[]> {
  for (let index = segments.length - 1; index >= 0; index--) {
    const file = path.join(dir, segmentFileName(kind, segments[index]!));
    const first = await firstTurnOf(file);
    // A segment with no turn yet (just opened), or one whose turns all come after this one: look further back.
    if (first === undefined || first > turnNumber) continue;
    const tail = await readLedgerTail(file, tailBytes).catch(() => undefined);
    if (tail === undefined) return [];
    const entries = tail.lines.map(parseLedgerLine);
    const ofTurn = entries.filter((entry) => turnOf(entry) === turnNumber);
    const earliest = Math.min(...entries.map((entry) => turnOf(entry) ?? Infinity));
    // The tail reaches back before the turn (or is the whole segment): it holds all of the turn's entries there are.
    if (!tail.truncated || earliest < turnNumber) return ofTurn;
    return scanSegment(file, turnNumber);
  }
  return [];
}

/** The turn number of the first turn entry in a segment's first bytes; undefined when it has none there. */
async function firstTurnOf(file: string): Promise<number | undefined> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(buffer, 0, HEAD_BYTES, 0);
    const text = buffer.toString('utf8', 0, bytesRead);
    // Whole lines only: the last one may be cut.
    for (const line of text.slice(0, text.lastIndexOf('\n') + 1).split('\n')) {
      const turn = turnOf(parseLedgerLine(line));
      if (turn !== undefined) return turn;
    }
    return undefined;
  } finally {
    await handle.close();
  }
}

/** Every entry of the turn in a whole segment, read line by line. */
async function scanSegment(file: string, turnNumber: number): Promise<unknown[]> {
  // The writer's lines are canonical JSON (writer-line.ts): the field reads exactly so, and a line without it is skipped unparsed.
  const needle = `"turn_number":${turnNumber}`;
  const found: unknown[] = [];
  const lines = createInterface({ input: createReadStream(file, { encoding: 'utf8' }), crlfDelay: Infinity });
  for await (const line of lines) {
    const at = line.indexOf(needle);
    if (at === -1 || /[0-9]/.test(line[at + needle.length] ?? '')) continue;
    const entry = parseLedgerLine(line);
    if (turnOf(entry) === turnNumber) found.push(entry);
  }
  return found;
}

function turnOf(entry: unknown): number | undefined {
  const turn = typeof entry === 'object' && entry !== null ? (entry as { turn_number?: unknown }).turn_number : undefined;
  return typeof turn === 'number' ? turn : undefined;
}
