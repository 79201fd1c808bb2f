/**
 * Where a session's ledgers live: `<dataDir>/planes/<tier>/sessions/<sid>/ledger/`
 * with `exec.jsonl`, `evidence.jsonl` and `checkpoints.jsonl`. The tier is the
 * deployment mode. Both parts are checked before they become a path.
 */
import path from 'node:path';
import { UhlpError } from '../errors.js';
import { assertSessionId } from '../state/session-id.js';
import type { LedgerKind } from './ledger-entry.js';

const TIER_PATTERN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export const LEDGER_FILES: Record<LedgerKind, string> = { exec: 'exec.jsonl', evidence: 'evidence.jsonl' };
export const CHECKPOINT_FILE = 'checkpoints.jsonl';

export function checkTier(tier: string): void {
  if (!TIER_PATTERN.test(tier)) {
    throw new UhlpError('UHLP_CONFIG_INVALID', `ledger tier "${tier}" is not a deployment mode name`, { field: 'tier' });
  }
}

export function sessionLedgerDir(dataDir: string, tier: string, sessionId: string): string {
  checkTier(tier);
  assertSessionId(sessionId);
  return path.join(dataDir, 'planes', tier, 'sessions', sessionId, 'ledger');
}

export function ledgerFile(dataDir: string, tier: string, sessionId: string, kind: LedgerKind): string {
  return path.join(sessionLedgerDir(dataDir, tier, sessionId), LEDGER_FILES[kind]);
}
