/**
 * The plane's record of sessions retention removed whole
 * (`planes/<tier>/pruned-sessions.jsonl`): one line per session with what its
 * ledgers held (entries, last hashes, the time of the last entry) and why it
 * went. The lines are hash-chained and sealed like ledger entries, so a
 * removed session cannot be dropped from the record unnoticed either, and
 * verification reports the removed sessions as a gap.
 */
import { closeSync, existsSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { canonicalJson } from '../shared/canonical-json.js';
import type { AnchoredLedger } from './ledger-anchor.js';
import { ChainVerifier, parseJsonLine, type ChainProblem, type ChainWarning } from './ledger-chain.js';
import { LEDGER_SCHEMA_VERSION, sha256, type LedgerKind } from './ledger-entry.js';
import { KEYED_HASH_ALG, type LedgerKey, type LedgerKeyring } from './ledger-key.js';
import { quarantineTail } from './ledger-repair.js';
import { readLastLine, readLines } from './line-reader.js';

export const PRUNED_ENTRY_TYPE = 'L-PRUNED';

export interface PrunedSession {
  sessionId: string;
  appId?: string;
  /** Segments the session had. */
  segments: number;
  ledgers: Record<LedgerKind, AnchoredLedger>;
  reason: string;
}

/** Appends chained, sealed records of removed sessions; one write for all of them. */
export function appendPrunedSessions(file: string, sessions: readonly PrunedSession[], key: LedgerKey | undefined, now: Date): void {
  if (sessions.length === 0) return;
  let previous: string | null = null;
  if (existsSync(file)) {
    const last = readLastLine(file);
    // Only this file's own writer (a prune) can have torn it: moved aside, so the chain goes on from its last whole line.
    if (last.tornBytes > 0) quarantineTail(file, last.size - last.tornBytes, now);
    const entry = last.text === undefined ? undefined : parseJsonLine(last.text, 0).entry;
    previous = typeof entry?.entry_hash === 'string' ? entry.entry_hash : null;
  }
  let text = '';
  for (const session of sessions) {
    const entry: Record<string, unknown> = {
      entry_type: PRUNED_ENTRY_TYPE,
      schema_version: LEDGER_SCHEMA_VERSION,
      session_id: session.sessionId,
      ...(session.appId !== undefined ? { app_id: session.appId } : {}),
      segments: session.segments,
      ledgers: session.ledgers,
      reason: session.reason,
      timestamp: now.toISOString(),
      previous_hash: previous,
      ...(key ? { hash_alg: KEYED_HASH_ALG, key_id: key.id } : {}),
    };
    const canonical = canonicalJson(JSON.parse(JSON.stringify(entry)));
    const hash = key === undefined ? sha256(canonical) : key.seal(canonical);
    text += `${canonical.slice(0, -1)},"entry_hash":"${hash}"}\n`;
    previous = hash;
  }
  const fd = openSync(file, 'a');
  try {
    writeSync(fd, text);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export interface PrunedSessionsSummary {
  problem?: ChainProblem;
  warnings: ChainWarning[];
  entriesChecked: number;
  /** Sessions listed. */
  sessions: number;
  /** Entries those sessions held, both ledgers. */
  entries: number;
  lastPrunedAt?: string;
}

/** Verifies the record as a chain, streamed; undefined when there is none. */
export function verifyPrunedSessions(file: string, keys: LedgerKeyring | undefined, allowUnkeyed: boolean): PrunedSessionsSummary | undefined {
  if (!existsSync(file)) return undefined;
  const verifier = new ChainVerifier(file, { ...(keys ? { keys } : {}), allowUnkeyed });
  const summary: PrunedSessionsSummary = { warnings: [], entriesChecked: 0, sessions: 0, entries: 0 };
  const read = readLines(file, {
    line(buffer, start, end, lineNumber) {
      const raw = buffer.toString('utf8', start, end);
      if (raw.trim() === '') return true;
      const { entry, error } = parseJsonLine(raw, lineNumber);
      if (entry?.entry_type === PRUNED_ENTRY_TYPE) {
        summary.sessions += 1;
        const ledgers = entry.ledgers as Partial<Record<LedgerKind, Partial<AnchoredLedger>>> | undefined;
        summary.entries += Number(ledgers?.exec?.entries ?? 0) + Number(ledgers?.evidence?.entries ?? 0);
        if (typeof entry.timestamp === 'string') summary.lastPrunedAt = entry.timestamp;
      }
      return verifier.push(lineNumber, entry, error, raw);
    },
  });
  const result = verifier.finish();
  summary.entriesChecked = result.entriesChecked;
  summary.warnings = result.warnings;
  if (result.problem) summary.problem = result.problem;
  if (read.tail) summary.warnings.push({ file, line: read.tail.line, message: 'the last line is cut short (a prune stopped while writing it); the next prune moves it aside' });
  return summary;
}
