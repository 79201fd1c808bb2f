import { mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonLines as lines, writeJsonLines as rewrite } from '../../test/helpers/json-lines-file.js';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { computeEntryHash, hashPayload, type LedgerEntry } from './ledger-entry.js';
import { replayLedger } from './ledger-replay.js';
import { verifyLedgers } from './ledger-verify.js';
import { runLedgerVerify } from '../cli/ledger-verify-command.js';
import { EXIT_USAGE } from '../cli/exit-codes.js';

const newId = createSessionIdGenerator();
type Entry = Record<string, unknown>;

describe('ledger verification, checkpoints and replay', () => {
  let dataDir: string;
  let sid: string;
  let dir: string;
  let ledger: FileLedger;
  let clock: number;

  const execFile = (): string => path.join(dir, 'exec.jsonl');
  const evidenceFile = (): string => path.join(dir, 'evidence.jsonl');

  async function turns(from: number, to: number): Promise<void> {
    for (let n = from; n <= to; n++) {
      await ledger.recordTurn({ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`) });
    }
  }

  async function run(argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runLedgerVerify(argv, { stdout: (l) => out.push(l), stderr: (l) => err.push(l) });
    return { code, out, err };
  }

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-ledger-'));
    clock = Date.UTC(2026, 10, 22, 0, 0, 0);
    // Each entry one second after the previous, so replay-to-a-time has exact boundaries.
    ledger = new FileLedger({ dataDir, tier: 'production', now: () => new Date((clock += 1000)) });
    sid = newId();
    dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    await ledger.startSession(sid);
    await turns(1, 5);
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('passes intact ledgers, and the command exits 0 with a summary', async () => {
    const { code, out } = await run(['--data-dir', dataDir]);
    expect(code).toBe(0);
    expect(out).toEqual([`ledger verify ok: 1 sessions, 2 files, 10 entries checked, 0 problems, 0 warnings`]);
  });

  it.each<[string, (entries: Entry[]) => Entry[], number, string]>([
    ['a changed field', (e) => e.map((x, i) => (i === 2 ? { ...x, status: 'error' } : x)), 3, 'ENTRY_HASH_MISMATCH'],
    ['a changed entry with its hash recomputed', (e) => e.map((x, i) => (i === 2 ? rehash({ ...x, status: 'error' }) : x)), 4, 'PREVIOUS_HASH_MISMATCH'],
    ['two entries swapped', (e) => [e[0]!, e[2]!, e[1]!, e[3]!, e[4]!], 2, 'PREVIOUS_HASH_MISMATCH'],
    ['a deleted line', (e) => e.filter((_, i) => i !== 2), 3, 'PREVIOUS_HASH_MISMATCH'],
    ['a deleted first line', (e) => e.slice(1), 1, 'PREVIOUS_HASH_MISMATCH'],
    ['a hash removed inside the chain', (e) => e.map((x, i) => (i === 3 ? withoutHash(x) : x)), 4, 'HASH_MISSING'],
  ])('reports %s at the first entry that does not verify', async (_case, tamper, line, problemCode) => {
    await rewrite(execFile(), tamper(await lines(execFile())));
    const report = await verifyLedgers(dataDir);
    const inExec = report.problems.filter((p) => p.file === execFile());
    expect(inExec.map((p) => [p.line, p.code])).toEqual([[line, problemCode]]);

    const { code, out } = await run([`--data-dir=${dataDir}`]);
    expect(code).toBe(1);
    expect(out[0]).toBe(`${execFile()}:${line}: ${problemCode}: ${inExec[0]?.message}`);
    expect(out.at(-1)).toMatch(new RegExp(`^ledger verify FAILED: .* ${report.problems.length} problems`));
  });

  it('reports an unreadable line and a missing ledger', async () => {
    await writeFile(execFile(), (await readFile(execFile(), 'utf8')) + '{"torn": \n');
    await unlink(evidenceFile());
    const report = await verifyLedgers(dataDir);
    expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([
      ['exec.jsonl', 6, 'UNPARSEABLE'],
      ['evidence.jsonl', 0, 'LEDGER_MISSING'],
    ]);
  });

  it('reports a turn written to one ledger but not the other', async () => {
    await ledger.appendExec({ sessionId: sid, turnNumber: 6, status: 'error', queryHash: 'q', resultHash: null });
    await ledger.appendEvidence({ sessionId: sid, turnNumber: 7, status: 'ok' });
    const report = await verifyLedgers(dataDir);
    expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code, p.message])).toEqual([
      ['exec.jsonl', 6, 'TURN_UNPAIRED', 'turn 6 has no evidence entry'],
      ['evidence.jsonl', 6, 'TURN_UNPAIRED', 'turn 7 has no exec entry'],
    ]);
  });

  it('warns about legacy entries written before hashing, without failing', async () => {
    const legacy = [
      { session_id: sid, turn_number: 1, query_hash: 'q', result_hash: 'r', status: 'ok' },
      { session_id: sid, turn_number: 2, query_hash: 'q', result_hash: 'r', status: 'ok' },
    ];
    await rewrite(execFile(), [...legacy, ...(await lines(execFile()))]);
    const { code, out, err } = await run(['--data-dir', dataDir]);
    expect(code).toBe(0);
    expect(err).toEqual([`warning: ${execFile()}:1: legacy entries without entry_hash (written before hashing) at lines 1-2; not verifiable`]);
    expect(out).toEqual(['ledger verify ok: 1 sessions, 2 files, 10 entries checked, 0 problems, 1 warnings']);
    // A new append after legacy-only content starts a chain.
    const fresh = newId();
    await ledger.startSession(fresh);
    const freshExec = path.join(dataDir, 'planes', 'production', 'sessions', fresh, 'ledger', 'exec.jsonl');
    await writeFile(freshExec, `${JSON.stringify(legacy[0])}\n`);
    const entry = await ledger.appendExec({ sessionId: fresh, turnNumber: 2, status: 'ok', queryHash: 'q', resultHash: null });
    expect(entry.previous_hash).toBeNull();
    for (const turnNumber of [1, 2]) await ledger.appendEvidence({ sessionId: fresh, turnNumber, status: 'ok' });
    expect((await verifyLedgers(dataDir)).problems).toEqual([]);
  });

  it('verifies from the latest checkpoint: only the checkpointed entry and what follows are rehashed', async () => {
    await ledger.checkpoint(sid, 'exec', { turns: 5 });
    await turns(6, 7);
    const fromCheckpoint = await verifyLedgers(dataDir);
    expect(fromCheckpoint.problems).toEqual([]);
    // exec: checkpointed line 5 + lines 6-7; evidence (no checkpoint): 7 lines.
    expect(fromCheckpoint.entriesChecked).toBe(3 + 7);
    expect((await verifyLedgers(dataDir, { full: true })).entriesChecked).toBe(14);
  });

  it('catches a whole rewritten chain through the checkpoint it no longer matches', async () => {
    await ledger.checkpoint(sid, 'exec', { turns: 5 });
    // Change line 2 and recompute every hash and link after it: the chain alone verifies again.
    const rewritten: Entry[] = [];
    for (const [i, entry] of (await lines(execFile())).entries()) {
      const changed: Entry = i === 1 ? { ...entry, status: 'error' } : { ...entry };
      changed.previous_hash = i === 0 ? null : rewritten[i - 1]!.entry_hash;
      rewritten.push(rehash(changed));
    }
    await rewrite(execFile(), rewritten);

    for (const full of [false, true]) {
      const report = await verifyLedgers(dataDir, { full });
      expect(report.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([['exec.jsonl', 5, 'CHECKPOINT_MISMATCH']]);
    }
  });

  it('reports a changed checkpointed entry, then the first bad entry found from the start', async () => {
    await ledger.checkpoint(sid, 'exec', { turns: 5 });
    await rewrite(execFile(), (await lines(execFile())).map((x, i) => (i === 4 ? { ...x, status: 'forged' } : x)));
    const report = await verifyLedgers(dataDir);
    expect(report.problems.map((p) => [p.line, p.code])).toEqual([
      [5, 'CHECKPOINT_MISMATCH'],
      [5, 'ENTRY_HASH_MISMATCH'],
    ]);
    // A truncated file loses the checkpointed line altogether.
    await rewrite(execFile(), (await lines(execFile())).slice(0, 3));
    expect((await verifyLedgers(dataDir)).problems[0]).toMatchObject({ line: 5, code: 'CHECKPOINT_MISMATCH' });
  });

  it('replays from the latest checkpoint, merging its state with later entries', async () => {
    const reduce = (state: { turns: number[] }, entry: LedgerEntry): { turns: number[] } => ({ turns: [...state.turns, entry.turn_number] });
    await ledger.checkpoint(sid, 'exec', { turns: [1, 2, 3, 4, 5] });
    await turns(6, 8);
    const replay = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: { turns: [] as number[] }, reduce });
    expect(replay.checkpoint?.line).toBe(5);
    expect(replay.replayed).toBe(3);
    expect(replay.state.turns).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);

    // Replay to the time of turn 7: the checkpoint (turn 5) is before it; turn 8 is left out.
    const exec = await lines(execFile());
    const until = new Date(String(exec[6]?.timestamp));
    const partial = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', until, initial: { turns: [] as number[] }, reduce });
    expect(partial.state.turns).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Before the checkpoint: replay from the start.
    const early = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', until: new Date(String(exec[1]?.timestamp)), initial: { turns: [] as number[] }, reduce });
    expect(early.checkpoint).toBeUndefined();
    expect(early.state.turns).toEqual([1, 2]);
  });

  it('throws UHLP_LEDGER_INTEGRITY when a replayed ledger was tampered with, and refuses to checkpoint it', async () => {
    await rewrite(execFile(), (await lines(execFile())).map((x, i) => (i === 3 ? { ...x, status: 'forged' } : x)));
    const reduce = (n: number): number => n + 1;
    await expect(replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: 0, reduce })).rejects.toMatchObject({
      code: 'UHLP_LEDGER_INTEGRITY',
      details: { line: 4, code: 'ENTRY_HASH_MISMATCH' },
    });
    await expect(ledger.checkpoint(sid, 'exec', {})).rejects.toMatchObject({ code: 'UHLP_LEDGER_INTEGRITY' });
  });

  it('answers usage errors with the usage exit code (64)', async () => {
    expect((await run(['--bogus'])).code).toBe(EXIT_USAGE);
    expect((await run(['--data-dir'])).code).toBe(EXIT_USAGE);
    expect((await run(['--help'])).code).toBe(0);
  });
});

function rehash(entry: Entry): Entry {
  return { ...entry, entry_hash: computeEntryHash(entry) };
}

function withoutHash(entry: Entry): Entry {
  const { entry_hash: _h, previous_hash: _p, ...rest } = entry;
  return rest;
}
