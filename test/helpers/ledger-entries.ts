/** Reading a core's ledger files straight from its data directory, as an operator's tools would. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** Every entry of every ledger file under a core's data directory. */
export function ledgerEntries(dataDir: string): Array<Record<string, unknown>> {
  const entries: Array<Record<string, unknown>> = [];
  for (const file of readdirSync(dataDir, { recursive: true, encoding: 'utf8' })) {
    if (!file.split(path.sep).includes('ledger')) continue;
    let text: string;
    try {
      text = readFileSync(path.join(dataDir, file), 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        entries.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // A line being written.
      }
    }
  }
  return entries;
}
