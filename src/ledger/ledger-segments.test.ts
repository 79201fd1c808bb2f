import { existsSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonLines as lines, writeJsonLines as rewrite } from '../../test/helpers/json-lines-file.js';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { computeEntryHash, hashPayload, type LedgerEntry } from './ledger-entry.js';
import { ledgerKeyring, makeLedgerKey } from './ledger-key.js';
import { replayLedger } from './ledger-replay.js';
import { verifyLedgers } from './ledger-verify.js';

const newId = createSessionIdGenerator();
type Entry = Record<string, unknown>;

/** The entries from `from` (0-based) on, changed by `change` at `from` and re-hashed and re-linked after it, as a local writer without a key can. */
function rehashFrom(entries: Entry[], from: number, change: (e: Entry) => Entry): Entry[] {
  const out = entries.map((e) => ({ ...e }));
  out[from] = change(out[from]!);
  for (let i = from; i < out.length; i++) {
    if (i > 0 && i > from) out[i]!.previous_hash = out[i - 1]!.entry_hash;
    out[i]!.entry_hash = computeEntryHash(out[i]!);
  }
  return out;
}

const problemsOf = (report: Awaited<ReturnType<typeof verifyLedgers>>): Array<[string, number, string]> =>
  report.problems.map((p) => [path.basename(p.file), p.line, p.code]);

describe('ledger segments', () => {
  let dataDir: string;
  let sid: string;
  let dir: string;
  let clock: number;
  let ledger: FileLedger;

  const make = (options: Partial<ConstructorParameters<typeof FileLedger>[0]> = {}): FileLedger =>
    new FileLedger({ dataDir, tier: 'production', now: () => new Date((clock += 1000)), segmentBytes: 1500, ...options });

  async function turns(on: FileLedger, from: number, to: number): Promise<void> {
    const batch = [];
    for (let n = from; n <= to; n++) batch.push({ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`), requestId: `req-${n}` });
    expect(await on.recordTurns(batch)).toEqual([]);
  }

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-segments-'));
    clock = Date.UTC(2026, 10, 22);
    sid = newId();
    dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    ledger = make();
    await ledger.startSession(sid, { appId: 'shop', ambient: true });
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('rotates both ledgers together by size; each segment opens with a header linking to the last hash before it, and a checkpoint closes it', async () => {
    // One batch per turn: rotation is checked before each turn is written.
    for (let n = 1; n <= 12; n++) await turns(ledger, n, n);
    const names = readdirSync(dir).sort();
    expect(names).toContain('exec.000002.jsonl');
    expect(names).toContain('evidence.000002.jsonl');
    const execSegments = names.filter((n) => n.startsWith('exec.'));
    const evidenceSegments = names.filter((n) => n.startsWith('evidence.'));
    expect(execSegments.length).toBe(evidenceSegments.length);
    expect(JSON.parse(readFileSync(path.join(dir, 'session.json'), 'utf8'))).toMatchObject({ session_id: sid, app_id: 'shop', ambient: true });

    // Segment n of exec and of evidence hold the same turns.
    const turnsIn = (file: string): unknown[] => lines(path.join(dir, file)).filter((e) => e.entry_type !== 'L-SEGMENT').map((e) => e.turn_number);
    expect(turnsIn('exec.000002.jsonl')).toEqual(turnsIn('evidence.000002.jsonl'));

    const first = lines(path.join(dir, 'exec.jsonl'));
    const second = lines(path.join(dir, 'exec.000002.jsonl'));
    expect(second[0]).toMatchObject({ entry_type: 'L-SEGMENT', segment: 2, session_id: sid, previous_hash: first.at(-1)!.entry_hash });
    expect(computeEntryHash(second[0]!)).toBe(second[0]!.entry_hash);
    expect(second[1]!.previous_hash).toBe(second[0]!.entry_hash);
    expect(first[0]).toMatchObject({ entry_type: 'L-EXEC', request_id: 'req-1' });

    const closing = lines(path.join(dir, 'checkpoints.jsonl')).filter((c) => c.closes_segment === true && c.ledger === 'exec' && c.segment === 1);
    expect(closing).toEqual([expect.objectContaining({ line: first.length, entry_hash: first.at(-1)!.entry_hash, state: null })]);

    for (const full of [false, true]) {
      const report = await verifyLedgers(dataDir, { full });
      expect(report.problems).toEqual([]);
      expect(report.files).toBe(execSegments.length * 2);
    }
    // Full: every line of every segment (headers are entries too).
    const all = [...execSegments, ...evidenceSegments].reduce((sum, file) => sum + lines(path.join(dir, file)).length, 0);
    expect((await verifyLedgers(dataDir, { full: true })).entriesChecked).toBe(all);
    // The same on threads: segments verified in parallel, joined the same way.
    expect(await verifyLedgers(dataDir, { full: true, threads: 2 })).toMatchObject({ problems: [], entriesChecked: all });
  });

  it('rotates by time, and a restarted writer goes on in the last segment', async () => {
    const timed = make({ segmentBytes: 1 << 30, segmentMs: 5000 });
    await turns(timed, 1, 1);
    await turns(timed, 2, 2);
    clock += 10_000;
    await turns(timed, 3, 3);
    expect(existsSync(path.join(dir, 'exec.000002.jsonl'))).toBe(true);
    const restarted = make({ segmentBytes: 1 << 30 });
    await turns(restarted, 4, 5);
    expect(lines(path.join(dir, 'exec.000002.jsonl')).map((e) => e.turn_number ?? 'header')).toEqual(['header', 3, 4, 5]);
    expect((await verifyLedgers(dataDir, { full: true })).problems).toEqual([]);
  });

  it('finishes a rotation a crash cut short between the two ledgers', async () => {
    for (let n = 1; n <= 12; n++) await turns(ledger, n, n);
    const last = String(Math.max(...readdirSync(dir).map((n) => Number(/^evidence\.(\d+)\.jsonl$/.exec(n)?.[1] ?? 0)))).padStart(6, '0');
    // As a crash right after the exec header of the last segment landed: the evidence segment was never opened.
    const execFile = path.join(dir, `exec.${last}.jsonl`);
    rewrite(execFile, lines(execFile).slice(0, 1));
    unlinkSync(path.join(dir, `evidence.${last}.jsonl`));
    await turns(make(), 13, 13);
    expect(lines(path.join(dir, `evidence.${last}.jsonl`)).map((e) => e.entry_type)).toEqual(['L-SEGMENT', 'L-EVIDENCE']);
    expect((await verifyLedgers(dataDir, { full: true })).problems).toEqual([]);
  });

  describe('tampering across segment boundaries', () => {
    beforeEach(async () => {
      for (let n = 1; n <= 12; n++) await turns(ledger, n, n);
      expect(existsSync(path.join(dir, 'exec.000003.jsonl'))).toBe(true);
    });

    it('names a changed entry inside a closed segment (full), and a segment re-hashed inside through the links around it (either way)', async () => {
      const file = path.join(dir, 'exec.000002.jsonl');
      const entries = lines(file);
      rewrite(file, entries.map((e, i) => (i === 2 ? { ...e, status: 'forged' } : e)));
      expect(problemsOf(await verifyLedgers(dataDir, { full: true }))).toEqual([['exec.000002.jsonl', 3, 'ENTRY_HASH_MISMATCH']]);

      rewrite(file, rehashFrom(entries, 2, (e) => ({ ...e, status: 'forged' })));
      const full = problemsOf(await verifyLedgers(dataDir, { full: true }));
      expect(full).toContainEqual(['exec.000003.jsonl', 1, 'PREVIOUS_HASH_MISMATCH']);
      // The default verification reads the closed segment only at its ends, and its last entry is no longer the one its closing checkpoint names.
      const quick = problemsOf(await verifyLedgers(dataDir));
      expect(quick).toContainEqual(['exec.000002.jsonl', entries.length, 'CHECKPOINT_MISMATCH']);
      expect(quick).toContainEqual(['exec.000003.jsonl', 1, 'PREVIOUS_HASH_MISMATCH']);
    });

    it('reports a removed middle segment, and segments swapped', async () => {
      renameSync(path.join(dir, 'exec.000002.jsonl'), path.join(dataDir, 'moved'));
      expect(problemsOf(await verifyLedgers(dataDir, { full: true }))[0]).toEqual(['exec.000002.jsonl', 0, 'SEGMENT_MISSING']);
      renameSync(path.join(dir, 'exec.000003.jsonl'), path.join(dir, 'exec.000002.jsonl'));
      renameSync(path.join(dataDir, 'moved'), path.join(dir, 'exec.000003.jsonl'));
      expect(problemsOf(await verifyLedgers(dataDir, { full: true }))).toContainEqual(['exec.000002.jsonl', 1, 'SEGMENT_HEADER_INVALID']);
    });

    it('reports a removed first segment as missing when no anchor says retention removed it', async () => {
      unlinkSync(path.join(dir, 'exec.jsonl'));
      expect(problemsOf(await verifyLedgers(dataDir))).toContainEqual(['exec.jsonl', 0, 'SEGMENT_MISSING']);
    });

    it('replays across segments, and checkpoints at the end of the last one', async () => {
      const reduce = (state: number[], entry: LedgerEntry): number[] => [...state, entry.turn_number];
      const replay = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: [] as number[], reduce });
      expect(replay.state).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
      const checkpoint = await ledger.checkpoint(sid, 'exec', replay.state);
      expect(checkpoint.segment).toBeGreaterThan(2);
      await turns(ledger, 13, 14);
      const again = await replayLedger({ dataDir, tier: 'production', sessionId: sid, ledger: 'exec', initial: [] as number[], reduce });
      expect(again).toMatchObject({ replayed: 2, state: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14] });
    });
  });

  it('catches a session\'s whole ledger copied over another\'s, keyed: each entry must name the session whose ledger it is in', async () => {
    const key = makeLedgerKey(Buffer.alloc(32, 5), 'test');
    const keys = ledgerKeyring([key]);
    const keyed = make({ key, segmentBytes: 1 << 30 });
    const other = newId();
    await keyed.startSession(other, { appId: 'shop' });
    await keyed.recordTurns([{ sessionId: other, turnNumber: 1, status: 'error', queryHash: hashPayload({ n: 1 }), resultHash: null }]);
    await keyed.recordTurns([{ sessionId: sid, turnNumber: 1, status: 'ok', queryHash: hashPayload({ n: 1 }), resultHash: hashPayload('r1') }]);
    await keyed.close();
    expect((await verifyLedgers(dataDir, { keys, full: true })).problems).toEqual([]);
    // The other session's ledgers, sealed with the same key, put in place of this session's.
    const otherDir = path.join(dataDir, 'planes', 'production', 'sessions', other, 'ledger');
    for (const name of ['exec.jsonl', 'evidence.jsonl']) writeFileSync(path.join(dir, name), readFileSync(path.join(otherDir, name)));
    for (const full of [true, false]) {
      expect(problemsOf(await verifyLedgers(dataDir, { keys, full }))).toEqual([
        ['exec.jsonl', 1, 'SESSION_MISMATCH'],
        ['evidence.jsonl', 1, 'SESSION_MISMATCH'],
      ]);
    }
  });

  it('seals segment headers and closing checkpoints with the ledger key, and catches a plain segment after keyed ones', async () => {
    const key = makeLedgerKey(Buffer.alloc(32, 7), 'test');
    const keyed = make({ key });
    for (let n = 1; n <= 12; n++) await turns(keyed, n, n);
    const header = lines(path.join(dir, 'exec.000002.jsonl'))[0]!;
    expect(header).toMatchObject({ hash_alg: 'hmac-sha256', key_id: key.id });
    const keys = ledgerKeyring([key]);
    expect((await verifyLedgers(dataDir, { keys, full: true })).problems).toEqual([]);
    // The last segment re-sealed with plain sha256 from its header on (linked to the keyed one before it).
    const file = path.join(dir, 'exec.000003.jsonl');
    const plain = rehashFrom(
      lines(file).map(({ hash_alg: _a, key_id: _k, ...rest }) => rest),
      0,
      (e) => e,
    );
    rewrite(file, plain);
    expect(problemsOf(await verifyLedgers(dataDir, { keys, full: true }))).toContainEqual(['exec.000003.jsonl', 1, 'HASH_DOWNGRADE']);
  });

  it('refuse an unhashed entry forged at the start of a keyed session, also where verification reads a segment at its ends only', async () => {
    const key = makeLedgerKey(Buffer.alloc(32, 7), 'test');
    const keyed = make({ key });
    for (let n = 1; n <= 12; n++) await turns(keyed, n, n);
    const keys = ledgerKeyring([key]);
    const first = path.join(dir, 'exec.jsonl');
    const { entry_hash: _h, previous_hash: _p, hash_alg: _a, key_id: _k, ...rest } = lines(first)[0]!;
    rewrite(first, [{ ...rest, turn_number: 0 }, ...lines(first)]);
    for (const full of [false, true]) {
      const report = await verifyLedgers(dataDir, { keys, full, allowUnkeyed: true });
      expect(problemsOf(report), full ? 'full' : 'from the latest checkpoint').toContainEqual(['exec.jsonl', 1, 'UNKEYED_ENTRY']);
    }
  });
});
