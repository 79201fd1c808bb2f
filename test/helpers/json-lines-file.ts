/**
 * A JSON-lines file (a ledger, its checkpoints) as a test reads and tampers with
 * it: one object per non-empty line.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export type JsonLine = Record<string, unknown>;

export function readJsonLines(file: string): JsonLine[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as JsonLine);
}

/** Replaces the file with `entries`, one line each (the order and bytes a test chose). */
export function writeJsonLines(file: string, entries: readonly JsonLine[]): void {
  writeFileSync(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''));
}
