/**
 * `uhlp ledger verify --repair`: what a crash leaves at the end of a ledger
 * (a line cut short, or the last turns written to one ledger and not yet to the
 * other) is moved, byte for byte, into `<segment>.torn` beside it, and the
 * segment is cut back to its last whole turn. Nothing is thrown away: the torn
 * bytes stay for inspection. Removing trailing entries keeps the chain whole
 * (nothing links to them), and those turns were never answered in `sync` or
 * `fsync` durability.
 */
import { closeSync, fstatSync, fsyncSync, ftruncateSync, openSync, readSync, writeSync } from 'node:fs';
import path from 'node:path';
import { TORN_SUFFIX } from './ledger-paths.js';

export interface Quarantined {
  /** Where the bytes went. */
  quarantine: string;
  bytes: number;
}

/** Moves the bytes of `file` from `offset` to its end into `<file>.torn` and cuts `file` at `offset`. */
export function quarantineTail(file: string, offset: number, now: Date = new Date()): Quarantined {
  const quarantine = `${file}${TORN_SUFFIX}`;
  const fd = openSync(file, 'r+');
  try {
    const size = fstatSync(fd).size;
    if (offset >= size) return { quarantine, bytes: 0 };
    const out = openSync(quarantine, 'a');
    try {
      writeSync(out, `# ${path.basename(file)} from byte ${offset} (${size - offset} bytes), moved aside ${now.toISOString()}\n`);
      const buffer = Buffer.allocUnsafe(1024 * 1024);
      let last = 0x0a;
      for (let at = offset; at < size; ) {
        const read = readSync(fd, buffer, 0, Math.min(buffer.length, size - at), at);
        if (read === 0) break;
        writeSync(out, buffer, 0, read);
        last = buffer[read - 1]!;
        at += read;
      }
      if (last !== 0x0a) writeSync(out, '\n');
      fsyncSync(out);
    } finally {
      closeSync(out);
    }
    ftruncateSync(fd, offset);
    fsyncSync(fd);
    return { quarantine, bytes: size - offset };
  } finally {
    closeSync(fd);
  }
}
