/**
 * Writes a large ledger directly, in the core's format (file-ledger.ts): sessions
 * of exec and evidence segments, each later segment opening with its L-SEGMENT
 * header and each closed one closed by a checkpoint. Entries are built by the
 * same fast serializers the ledger thread seals with (entry-json.ts), and
 * written in big chunks: millions of entries in seconds, for the scale test and
 * the verification benchmark. Plain sha256 (no ledger key).
 */
import { hash } from 'node:crypto';
import { closeSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { execEntryJson, evidenceEntryJson } from '../../src/ledger/entry-json.js';
import { canonicalJson } from '../../src/shared/canonical-json.js';
import { LEDGER_SCHEMA_VERSION, SEGMENT_ENTRY_TYPE, type LedgerKind } from '../../src/ledger/ledger-entry.js';
import { CHECKPOINT_FILE, SESSION_META_FILE, segmentFileName } from '../../src/ledger/ledger-paths.js';
import { createSessionIdGenerator } from '../../src/state/session-id.js';

export interface GenerateLedgerOptions {
  dataDir: string;
  /** @defaultValue `production` */
  tier?: string;
  sessions: number;
  /** Turns per session: each is an exec and an evidence entry. */
  turnsPerSession: number;
  /** Turns per segment (the core rotates by size; here by count). */
  turnsPerSegment: number;
}

export interface GeneratedLedger {
  sessionIds: string[];
  /** Lines written, headers included. */
  entries: number;
  bytes: number;
}

const CHUNK = 4 * 1024 * 1024;

export function generateLedger(options: GenerateLedgerOptions): GeneratedLedger {
  const tier = options.tier ?? 'production';
  const newId = createSessionIdGenerator();
  const result: GeneratedLedger = { sessionIds: [], entries: 0, bytes: 0 };
  const started = Date.now();
  for (let s = 0; s < options.sessions; s++) {
    const sessionId = newId();
    result.sessionIds.push(sessionId);
    const dir = path.join(options.dataDir, 'planes', tier, 'sessions', sessionId, 'ledger');
    mkdirSync(dir, { recursive: true });
    writeFileSync(path.join(dir, SESSION_META_FILE), `${JSON.stringify({ session_id: sessionId, app_id: 'gen', ambient: true, started_at: new Date(started).toISOString() })}\n`);
    const previous: Record<LedgerKind, string | null> = { exec: null, evidence: null };
    let checkpoints = '';
    let turn = 0;
    for (let segment = 1; turn < options.turnsPerSession; segment++) {
      const last = Math.min(options.turnsPerSession, turn + options.turnsPerSegment);
      const fds: Record<LedgerKind, number> = { exec: openSync(path.join(dir, segmentFileName('exec', segment)), 'w'), evidence: openSync(path.join(dir, segmentFileName('evidence', segment)), 'w') };
      const text: Record<LedgerKind, string> = { exec: '', evidence: '' };
      const lines: Record<LedgerKind, number> = { exec: 0, evidence: 0 };
      const timestamp = new Date(started + turn).toISOString();
      const write = (kind: LedgerKind, canonical: string): void => {
        const entryHash = `sha256:${hash('sha256', canonical, 'hex')}`;
        text[kind] += `${canonical.slice(0, -1)},"entry_hash":"${entryHash}"}\n`;
        previous[kind] = entryHash;
        lines[kind] += 1;
        if (text[kind].length >= CHUNK) {
          result.bytes += writeSync(fds[kind], text[kind]);
          text[kind] = '';
        }
      };
      if (segment > 1) {
        for (const kind of ['exec', 'evidence'] as const) {
          write(kind, canonicalJson({ entry_type: SEGMENT_ENTRY_TYPE, schema_version: LEDGER_SCHEMA_VERSION, session_id: sessionId, segment, timestamp, previous_hash: previous[kind] }));
        }
      }
      for (turn += 1; turn <= last; turn++) {
        const queryHash = `sha256:${(turn * 2654435761).toString(16).padStart(64, '0')}`;
        // Most entries from a template (the serializers' quoting is most of the cost); the first ones both ways, held equal.
        const exec = `{"entry_type":"L-EXEC","previous_hash":"${previous.exec}","query_hash":"${queryHash}","request_id":"req-${s}-${turn}","result_hash":"${queryHash}","schema_version":${LEDGER_SCHEMA_VERSION},"session_id":"${sessionId}","status":"ok","timestamp":"${timestamp}","turn_number":${turn}}`;
        const evidence = `{"capability_violations":[],"declared_reads":[],"declared_writes":[],"entry_type":"L-EVIDENCE","external_calls":[],"previous_hash":"${previous.evidence}","schema_version":${LEDGER_SCHEMA_VERSION},"session_id":"${sessionId}","status":"ok","timestamp":"${timestamp}","turn_number":${turn}}`;
        if (turn <= 2) {
          const execJson = execEntryJson({ entry_type: 'L-EXEC', schema_version: LEDGER_SCHEMA_VERSION, session_id: sessionId, turn_number: turn, timestamp, query_hash: queryHash, result_hash: queryHash, status: 'ok', previous_hash: previous.exec, request_id: `req-${s}-${turn}` });
          const evidenceJson = evidenceEntryJson({ entry_type: 'L-EVIDENCE', schema_version: LEDGER_SCHEMA_VERSION, session_id: sessionId, turn_number: turn, timestamp, status: 'ok', declared_reads: [], declared_writes: [], external_calls: [], capability_violations: [], previous_hash: previous.evidence });
          write('exec', execJson);
          write('evidence', evidenceJson);
          if (turn === 2 && (execJson !== exec || evidenceJson !== evidence)) throw new Error(`generate-ledger: the template is not the serializers' output:\n${exec}\n${execJson}`);
        } else {
          write('exec', exec);
          write('evidence', evidence);
        }
      }
      turn -= 1;
      for (const kind of ['exec', 'evidence'] as const) {
        if (text[kind] !== '') result.bytes += writeSync(fds[kind], text[kind]);
        closeSync(fds[kind]);
        result.entries += lines[kind];
      }
      if (turn < options.turnsPerSession) {
        for (const kind of ['exec', 'evidence'] as const) {
          checkpoints += `${JSON.stringify({ ledger: kind, segment, line: lines[kind], entry_hash: previous[kind], entry_timestamp: timestamp, created_at: timestamp, state: null, closes_segment: true })}\n`;
        }
      }
    }
    if (checkpoints !== '') writeFileSync(path.join(dir, CHECKPOINT_FILE), checkpoints);
  }
  return result;
}
