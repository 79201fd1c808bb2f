/** Disk use of a data directory, for the benches that report what the ledger writes. */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

/** Bytes of every file under `dir` (0 when it does not exist). */
export function bytesUnder(dir: string): number {
  let total = 0;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const entry of entries) {
    const full = path.join(dir, entry.name);
    try {
      total += entry.isDirectory() ? bytesUnder(full) : statSync(full).size;
    } catch {
      // Removed while counted (a rotation or a prune).
    }
  }
  return total;
}
