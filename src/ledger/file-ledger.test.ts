import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonLines as readLines } from '../../test/helpers/json-lines-file.js';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { computeEntryHash, hashPayload } from './ledger-entry.js';
import { verifyLedgers } from './ledger-verify.js';

const newId = createSessionIdGenerator();

describe('FileLedger', () => {
  let dataDir: string;
  let ledger: FileLedger;
  let sid: string;
  let dir: string;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-ledger-'));
    ledger = new FileLedger({ dataDir, tier: 'development' });
    sid = newId();
    dir = path.join(dataDir, 'planes', 'development', 'sessions', sid, 'ledger');
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('creates both ledgers empty when the session starts', async () => {
    await ledger.startSession(sid);
    expect(await readFile(path.join(dir, 'exec.jsonl'), 'utf8')).toBe('');
    expect(await readFile(path.join(dir, 'evidence.jsonl'), 'utf8')).toBe('');
  });

  it('writes an exec and an evidence entry per turn, chained, also for a failed turn', async () => {
    await ledger.startSession(sid);
    await ledger.recordTurn({ sessionId: sid, turnNumber: 1, status: 'ok', queryHash: hashPayload({ q: 1 }), resultHash: hashPayload('r'), workOrderId: 'WO-7' });
    await ledger.recordTurn({
      sessionId: sid,
      turnNumber: 2,
      status: 'error',
      queryHash: hashPayload({ q: 2 }),
      resultHash: null,
      declaredWrites: [{ path: 'output/x.txt', role: 'report' }],
      externalCalls: [{ kind: 'mcp', target: 'core.llm.generate', status: 'ok' }],
      capabilityViolations: [{ operation: 'write /etc/passwd', capability: 'capabilities.write', timestamp: '2026-11-22T00:00:00.000Z' }],
    });

    const exec = await readLines(path.join(dir, 'exec.jsonl'));
    const evidence = await readLines(path.join(dir, 'evidence.jsonl'));
    expect(exec.map((e) => [e.entry_type, e.session_id, e.turn_number, e.status])).toEqual([
      ['L-EXEC', sid, 1, 'ok'],
      ['L-EXEC', sid, 2, 'error'],
    ]);
    expect(exec[1]?.result_hash).toBeNull();
    expect(evidence[0]).toMatchObject({ entry_type: 'L-EVIDENCE', work_order_id: 'WO-7', declared_reads: [], capability_violations: [] });
    expect(evidence[1]).toMatchObject({ status: 'error', declared_writes: [{ path: 'output/x.txt', role: 'report' }] });
    expect(evidence[1]).not.toHaveProperty('work_order_id');
    for (const entries of [exec, evidence]) {
      expect(entries[0]?.previous_hash).toBeNull();
      expect(entries[1]?.previous_hash).toBe(entries[0]?.entry_hash);
      for (const entry of entries) expect(computeEntryHash(entry)).toBe(entry.entry_hash);
    }
  });

  it('serializes concurrent appends: whole lines, one unbroken chain per file', async () => {
    await ledger.startSession(sid);
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        ledger.recordTurn({ sessionId: sid, turnNumber: i + 1, status: 'ok', queryHash: hashPayload(i), resultHash: hashPayload(`r${i}`), externalCalls: [{ kind: 'http', target: 'x'.repeat(5000) }] }),
      ),
    );
    expect(await readLines(path.join(dir, 'exec.jsonl'))).toHaveLength(60);
    expect(await readLines(path.join(dir, 'evidence.jsonl'))).toHaveLength(60);
    const report = await verifyLedgers(dataDir);
    expect(report.problems).toEqual([]);
    expect(report.entriesChecked).toBe(120);
  });

  it('continues the chain of an existing file after a restart', async () => {
    await ledger.startSession(sid);
    await ledger.recordTurn({ sessionId: sid, turnNumber: 1, status: 'ok', queryHash: hashPayload(1), resultHash: null });
    const restarted = new FileLedger({ dataDir, tier: 'development' });
    await restarted.recordTurn({ sessionId: sid, turnNumber: 2, status: 'ok', queryHash: hashPayload(2), resultHash: null });
    expect((await verifyLedgers(dataDir)).problems).toEqual([]);
  });

  it('refuses to write for a session whose ledgers were not started, and ids that are not session ids', async () => {
    await expect(ledger.appendExec({ sessionId: sid, turnNumber: 1, status: 'ok', queryHash: 'h', resultHash: null })).rejects.toMatchObject({
      code: 'UHLP_SESSION_NOT_FOUND',
    });
    await expect(ledger.startSession('../../etc')).rejects.toMatchObject({ code: 'UHLP_SESSION_ID_INVALID' });
    await ledger.startSession(sid);
    await expect(ledger.appendExec({ sessionId: sid, turnNumber: 0, status: 'ok', queryHash: 'h', resultHash: null })).rejects.toMatchObject({
      code: 'UHLP_STATE_INPUT_INVALID',
      details: { field: 'turnNumber' },
    });
  });

  it('writes a batch of turns in order, sessions with known tails at once and new ones after reading theirs, and reports bad turns', async () => {
    const other = newId();
    await ledger.startSession(sid);
    await ledger.startSession(other);
    // `sid` has a known tail after this; `other` has none cached yet.
    await ledger.recordTurn({ sessionId: sid, turnNumber: 1, status: 'ok', queryHash: hashPayload(1), resultHash: null });
    const turn = (sessionId: string, turnNumber: number, status = 'ok') => ({ sessionId, turnNumber, status, queryHash: hashPayload(turnNumber), resultHash: null });
    const failed = await ledger.recordTurns([turn(sid, 2), turn(other, 1), turn(sid, 0), turn(other, 2), turn(sid, 3)]);
    expect(failed.map((f) => [f.input.sessionId, f.input.turnNumber, (f.error as { code?: string }).code])).toEqual([[sid, 0, 'UHLP_STATE_INPUT_INVALID']]);

    const turnsOf = async (session: string, file: string): Promise<unknown[]> =>
      (await readLines(path.join(dataDir, 'planes', 'development', 'sessions', session, 'ledger', file))).map((e) => e.turn_number);
    expect(await turnsOf(sid, 'exec.jsonl')).toEqual([1, 2, 3]);
    expect(await turnsOf(sid, 'evidence.jsonl')).toEqual([1, 2, 3]);
    expect(await turnsOf(other, 'exec.jsonl')).toEqual([1, 2]);
    expect(await turnsOf(other, 'evidence.jsonl')).toEqual([1, 2]);
    expect((await verifyLedgers(dataDir)).problems).toEqual([]);
  });
});
