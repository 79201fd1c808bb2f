/**
 * Writes that must survive a crash whole: a file replaced at once (written
 * beside it, flushed, renamed over it), and a directory's entries flushed so
 * that a file created, renamed or removed in it stays so after a power loss.
 */
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';

/** Replaces `file` with `text`: a reader sees the old content or the new, never a mix. */
export function replaceFile(file: string, text: string): void {
  const temporary = `${file}.${process.pid}.tmp`;
  const fd = openSync(temporary, 'w');
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, file);
  fsyncDir(path.dirname(file));
}

/** Flushes a directory's entries. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
