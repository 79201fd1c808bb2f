/**
 * Where a session's ledgers live: `<dataDir>/planes/<tier>/sessions/<sid>/ledger/`
 * with the segments of `exec` and `evidence`, `checkpoints.jsonl`, the session's
 * `session.json` and, once retention pruned its oldest segments, `anchor.json`.
 * The first segment of a ledger is `exec.jsonl` (the name every ledger had before
 * segments), later ones `exec.000002.jsonl`, `exec.000003.jsonl`, ... The tier is
 * the deployment mode. Both parts are checked before they become a path.
 */
import path from 'node:path';
import { UhlpError } from '../shared/errors.js';
import { assertSessionId } from '../state/session-id.js';
import type { LedgerKind } from './ledger-entry.js';

const TIER_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const LEDGER_KINDS: readonly LedgerKind[] = ['exec', 'evidence'];
export const LEDGER_FILES: Record<LedgerKind, string> = { exec: 'exec.jsonl', evidence: 'evidence.jsonl' };
export const CHECKPOINT_FILE = 'checkpoints.jsonl';
/** What the core knows of a session when it starts it: its app, ambient or stored, when (ledger-session-meta.ts). */
export const SESSION_META_FILE = 'session.json';
/** What retention removed from the start of a session's ledgers (ledger-anchor.ts). */
export const ANCHOR_FILE = 'anchor.json';
/** Per plane: one chained line per session whose ledgers retention removed whole. */
export const PRUNED_SESSIONS_FILE = 'pruned-sessions.jsonl';
/** Per data directory: the retention the core applies, so that `uhlp ledger prune` by hand applies the same. */
export const RETENTION_FILE = 'ledger-retention.json';
/** A torn tail moved aside by `uhlp ledger verify --repair` goes to `<segment>.torn`. */
export const TORN_SUFFIX = '.torn';

const SEGMENT_NAME = /^(exec|evidence)(?:\.(\d{6,}))?\.jsonl$/;

export function checkTier(tier: string): void {
  if (!TIER_PATTERN.test(tier)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `ledger tier "${tier}" is not a deployment mode name`, { field: 'tier' });
  }
}

export function isTierName(name: string): boolean {
  return TIER_PATTERN.test(name);
}

export function planeDir(dataDir: string, tier: string): string {
  checkTier(tier);
  return path.join(dataDir, 'planes', tier);
}

export function sessionLedgerDir(dataDir: string, tier: string, sessionId: string): string {
  checkTier(tier);
  assertSessionId(sessionId);
  return path.join(dataDir, 'planes', tier, 'sessions', sessionId, 'ledger');
}

export function ledgerFile(dataDir: string, tier: string, sessionId: string, kind: LedgerKind): string {
  return path.join(sessionLedgerDir(dataDir, tier, sessionId), LEDGER_FILES[kind]);
}

/** The file name of segment `segment` (1-based) of a ledger. */
export function segmentFileName(kind: LedgerKind, segment: number): string {
  return segment === 1 ? LEDGER_FILES[kind] : `${kind}.${String(segment).padStart(6, '0')}.jsonl`;
}

/** The ledger and segment a file name is, or undefined for any other file (`exec.000002.jsonl.torn` included). */
export function parseSegmentFileName(name: string): { kind: LedgerKind; segment: number } | undefined {
  const match = SEGMENT_NAME.exec(name);
  if (!match) return undefined;
  const segment = match[2] === undefined ? 1 : Number(match[2]);
  // `exec.000001.jsonl` is not a name the writer uses: segment 1 is `exec.jsonl`.
  if (match[2] !== undefined && !(Number.isSafeInteger(segment) && segment >= 2)) return undefined;
  return { kind: match[1] as LedgerKind, segment };
}

/** The segments of each ledger in a session's ledger directory, from its file names, in order. */
export function segmentsIn(names: Iterable<string>): Record<LedgerKind, number[]> {
  const found: Record<LedgerKind, number[]> = { exec: [], evidence: [] };
  for (const name of names) {
    const parsed = parseSegmentFileName(name);
    if (parsed) found[parsed.kind].push(parsed.segment);
  }
  for (const kind of LEDGER_KINDS) found[kind].sort((a, b) => a - b);
  return found;
}
