import { existsSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { hashPayload } from './ledger-entry.js';
import { ledgerKeyring, makeLedgerKey, type LedgerKey } from './ledger-key.js';
import { runLedgerPrune } from '../cli/ledger-prune-command.js';
import { pruneLedgers } from './ledger-prune.js';
import { writeRetentionFile } from './ledger-retention.js';
import { runLedgerVerify } from '../cli/ledger-verify-command.js';
import { verifyLedgers } from './ledger-verify.js';
import { EXIT_USAGE } from '../cli/exit-codes.js';

const newId = createSessionIdGenerator();
const HOUR = 3600_000;

describe('ledger retention (pruning whole segments behind an anchor)', () => {
  let dataDir: string;
  let clock: number;

  const sessionDir = (sid: string, tier = 'production'): string => path.join(dataDir, 'planes', tier, 'sessions', sid, 'ledger');
  const segmentFiles = (sid: string, tier = 'production'): string[] =>
    existsSync(sessionDir(sid, tier)) ? readdirSync(sessionDir(sid, tier)).filter((n) => /^(exec|evidence)(\.\d+)?\.jsonl$/.test(n)).sort() : [];

  /** A session of `turns` turns in small segments, written `ageMs` ago. */
  async function session(options: { turns: number; appId?: string; ambient?: boolean; tier?: string; key?: LedgerKey; ageMs?: number }): Promise<string> {
    const sid = newId();
    const tier = options.tier ?? 'production';
    const ledger = new FileLedger({ dataDir, tier, now: () => new Date((clock += 10)), segmentBytes: 1500, ...(options.key ? { key: options.key } : {}) });
    await ledger.startSession(sid, { appId: options.appId ?? 'shop', ambient: options.ambient ?? false });
    for (let n = 1; n <= options.turns; n++) {
      const failed = await ledger.recordTurns([{ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`), requestId: `req-${n}` }]);
      expect(failed).toEqual([]);
    }
    if (options.ageMs !== undefined) {
      const at = new Date(Date.now() - options.ageMs);
      for (const name of segmentFiles(sid, tier)) utimesSync(path.join(sessionDir(sid, tier), name), at, at);
    }
    return sid;
  }

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-prune-'));
    clock = Date.now();
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('removes the oldest segments over a size limit, keeps the last one, and what remains verifies with the gap reported', async () => {
    const sid = await session({ turns: 30 });
    const before = segmentFiles(sid);
    expect(before.length).toBeGreaterThanOrEqual(8);
    const fullBefore = await verifyLedgers(dataDir, { full: true });
    expect(fullBefore.problems).toEqual([]);

    const report = await pruneLedgers({ dataDir, policy: { planes: { production: { maxBytes: 4000 } }, apps: {} }, sessionTtlMs: HOUR });
    expect(report.errors).toEqual([]);
    expect(report.removedSegments).toBeGreaterThan(0);
    expect(report.pruned).toEqual([expect.objectContaining({ sessionId: sid, whole: false, reason: expect.stringContaining('plane production') })]);
    const after = segmentFiles(sid);
    // Whole segments, both ledgers together, oldest first.
    expect(after.length).toBeLessThan(before.length);
    expect(after.filter((n) => n.startsWith('exec')).length).toBe(after.filter((n) => n.startsWith('evidence')).length);
    expect(after).not.toContain('exec.jsonl');
    expect(report.keptBytes.production).toBeLessThanOrEqual(4000);
    const anchor = JSON.parse(readFileSync(path.join(sessionDir(sid), 'anchor.json'), 'utf8')) as Record<string, unknown>;
    expect(anchor).toMatchObject({ anchor_type: 'L-ANCHOR', session_id: sid, through_segment: report.pruned[0]!.throughSegment });

    for (const full of [false, true]) {
      const verified = await verifyLedgers(dataDir, { full });
      expect(verified.problems).toEqual([]);
      expect(verified.gaps).toEqual([expect.objectContaining({ where: sessionDir(sid), message: expect.stringMatching(/segments? 1.*removed/) })]);
    }
    // The anchor's entry count and what remains add up to what was there.
    const fullAfter = await verifyLedgers(dataDir, { full: true });
    expect(fullAfter.entriesChecked).toBeLessThan(fullBefore.entriesChecked);

    // The chain goes on after the prune, and a second prune anchors cumulatively.
    const more = new FileLedger({ dataDir, tier: 'production', now: () => new Date((clock += 10)), segmentBytes: 1500 });
    for (let n = 31; n <= 45; n++) await more.recordTurns([{ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`) }]);
    const second = await pruneLedgers({ dataDir, policy: { planes: { '*': { maxBytes: 4000 } }, apps: {} }, sessionTtlMs: HOUR });
    expect(second.pruned[0]!.throughSegment).toBeGreaterThan(report.pruned[0]!.throughSegment);
    expect((await verifyLedgers(dataDir, { full: true })).problems).toEqual([]);
  });

  it('catches an anchor altered to hide more than retention removed, and a remaining segment removed as well', async () => {
    const sid = await session({ turns: 30 });
    await pruneLedgers({ dataDir, policy: { planes: { production: { maxBytes: 4000 } }, apps: {} }, sessionTtlMs: HOUR });
    const file = path.join(sessionDir(sid), 'anchor.json');
    const anchor = JSON.parse(readFileSync(file, 'utf8')) as { ledgers: { exec: { last_hash: string } } };
    const original = readFileSync(file, 'utf8');
    anchor.ledgers.exec.last_hash = 'f'.repeat(64);
    writeFileSync(file, JSON.stringify(anchor));
    expect((await verifyLedgers(dataDir, { full: true })).problems.length).toBeGreaterThan(0);
    writeFileSync(file, original);
    expect((await verifyLedgers(dataDir, { full: true })).problems).toEqual([]);
    // The first segment after the anchor removed too: not covered by the anchor, so missing, not a gap.
    const through = (JSON.parse(original) as { through_segment: number }).through_segment;
    const next = path.join(sessionDir(sid), `exec.${String(through + 1).padStart(6, '0')}.jsonl`);
    expect(existsSync(next)).toBe(true);
    rmSync(next);
    const problems = (await verifyLedgers(dataDir, { full: true })).problems;
    expect(problems.length).toBeGreaterThan(0);
    expect(problems[0]!.code).toMatch(/^(SEGMENT|LEDGER)_MISSING$/);
  });

  it('removes by age, per app as well as per plane, and a session over and past its age whole, listed so its absence is reported', async () => {
    const old = await session({ turns: 20, appId: 'shop', ageMs: 3 * 24 * HOUR });
    const fresh = await session({ turns: 20, appId: 'shop' });
    const otherApp = await session({ turns: 20, appId: 'blog', ageMs: 2 * HOUR });
    const staging = await session({ turns: 20, appId: 'blog', tier: 'staging', ageMs: 3 * 24 * HOUR });

    const policy = { planes: { production: { maxAgeMs: 24 * HOUR } }, apps: { blog: { maxAgeMs: HOUR } } };
    const dry = await pruneLedgers({ dataDir, policy, sessionTtlMs: HOUR, dryRun: true });
    expect(dry.removedSegments).toBeGreaterThan(0);
    expect(existsSync(sessionDir(old))).toBe(true);

    const report = await pruneLedgers({ dataDir, policy, sessionTtlMs: HOUR });
    expect(report.errors).toEqual([]);
    const bySession = Object.fromEntries(report.pruned.map((r) => [r.sessionId, r]));
    // Idle longer than the session TTL and older than the plane's day: gone whole.
    expect(bySession[old]).toMatchObject({ whole: true, reason: expect.stringContaining('plane production') });
    expect(existsSync(path.dirname(sessionDir(old)))).toBe(false);
    expect(bySession[fresh]).toBeUndefined();
    // The app's hour applies to its own sessions.
    expect(bySession[otherApp]).toMatchObject({ whole: true, reason: expect.stringContaining('app blog') });
    // In a plane with no limits of its own, the app's limit still applies.
    expect(bySession[staging]).toMatchObject({ whole: true, reason: expect.stringContaining('app blog') });

    const verified = await verifyLedgers(dataDir, { full: true });
    expect(verified.problems).toEqual([]);
    expect(verified.gaps).toEqual([
      { where: path.join(dataDir, 'planes', 'production', 'pruned-sessions.jsonl'), message: expect.stringMatching(/^2 sessions removed whole by retention \(80 entries/) },
      { where: path.join(dataDir, 'planes', 'staging', 'pruned-sessions.jsonl'), message: expect.stringMatching(/^1 session removed whole/) },
    ]);
    const listed = readFileSync(path.join(dataDir, 'planes', 'production', 'pruned-sessions.jsonl'), 'utf8');
    expect(listed).toContain(old);
    expect(listed).toContain(otherApp);
    expect(verified.sessions).toBe(1);
  });

  it('keeps the last segment of a session not yet over, however old', async () => {
    const sid = await session({ turns: 20, ambient: true, ageMs: 3 * 24 * HOUR });
    // An ambient session begun just now (by the ledger's clock) is not over.
    const report = await pruneLedgers({ dataDir, policy: { planes: { '*': { maxAgeMs: HOUR } }, apps: {} }, sessionTtlMs: HOUR });
    expect(report.pruned).toEqual([expect.objectContaining({ sessionId: sid, whole: false })]);
    expect(segmentFiles(sid).length).toBe(2);
    expect((await verifyLedgers(dataDir, { full: true })).problems).toEqual([]);
  });

  it('anchors keyed ledgers with the key, and refuses to prune them without it', async () => {
    const key = makeLedgerKey(Buffer.alloc(32, 9), 'k1');
    const sid = await session({ turns: 30, key });
    const policy = { planes: { production: { maxBytes: 4000 } }, apps: {} };
    const without = await pruneLedgers({ dataDir, policy, sessionTtlMs: HOUR });
    expect(without.errors).toEqual([expect.objectContaining({ message: expect.stringContaining('ledger key') })]);
    expect(segmentFiles(sid)).toContain('exec.jsonl');
    const keyed = await pruneLedgers({ dataDir, policy, sessionTtlMs: HOUR, key });
    expect(keyed.errors).toEqual([]);
    expect(JSON.parse(readFileSync(path.join(sessionDir(sid), 'anchor.json'), 'utf8'))).toMatchObject({ key_id: key.id });
    const verified = await verifyLedgers(dataDir, { full: true, keys: ledgerKeyring([key]) });
    expect(verified.problems).toEqual([]);
    expect(verified.gaps.length).toBe(1);
  });

  it('keep the record of sessions removed whole keyed: an unhashed entry put before it is refused', async () => {
    const key = makeLedgerKey(Buffer.alloc(32, 9), 'k1');
    await session({ turns: 20, key, ageMs: 3 * 24 * HOUR });
    const report = await pruneLedgers({ dataDir, policy: { planes: { production: { maxAgeMs: 24 * HOUR } }, apps: {} }, sessionTtlMs: HOUR, key });
    expect(report.pruned).toEqual([expect.objectContaining({ whole: true })]);
    const record = path.join(dataDir, 'planes', 'production', 'pruned-sessions.jsonl');
    const keys = ledgerKeyring([key]);
    expect((await verifyLedgers(dataDir, { full: true, keys })).problems).toEqual([]);
    const [first] = readFileSync(record, 'utf8').split('\n');
    const { entry_hash: _h, previous_hash: _p, hash_alg: _a, key_id: _k, ...unhashed } = JSON.parse(first!) as Record<string, unknown>;
    writeFileSync(record, `${JSON.stringify(unhashed)}\n${readFileSync(record, 'utf8')}`);
    const verified = await verifyLedgers(dataDir, { full: true, keys, allowUnkeyed: true });
    expect(verified.problems.map((p) => [path.basename(p.file), p.line, p.code])).toEqual([['pruned-sessions.jsonl', 1, 'UNKEYED_ENTRY']]);
  });

  it('`uhlp ledger prune` applies what the core last applied, or its flags; `uhlp ledger verify` then exits 0 and prints the gap', async () => {
    const sid = await session({ turns: 30, appId: 'shop' });
    const out: string[] = [];
    const err: string[] = [];
    const io = { stdout: (l: string) => void out.push(l), stderr: (l: string) => void err.push(l) };
    // Nothing applied here yet and no flags: a usage error, not a silent no-op.
    expect(await runLedgerPrune(['--data-dir', dataDir], io, {})).toBe(EXIT_USAGE);
    expect(err.join('\n')).toContain('no retention limits');
    expect(await runLedgerPrune(['--data-dir', dataDir, '--max-size', 'lots'], io, {})).toBe(EXIT_USAGE);
    expect(await runLedgerPrune(['--data-dir', path.join(dataDir, 'nope'), '--max-size', '4K'], io, {})).toBe(EXIT_USAGE);

    writeRetentionFile(dataDir, { planes: {}, apps: { shop: { maxBytes: 4000 } } }, HOUR);
    out.length = 0;
    expect(await runLedgerPrune(['--data-dir', dataDir, '--dry-run'], io, {})).toBe(0);
    expect(out.join('\n')).toContain(`would remove: production/${sid}: segments 1-`);
    expect(segmentFiles(sid)).toContain('exec.jsonl');
    expect(await runLedgerPrune(['--data-dir', dataDir], io, {})).toBe(0);
    expect(out.join('\n')).toMatch(/removed: production\/.*\(app shop\)/);
    expect(segmentFiles(sid)).not.toContain('exec.jsonl');

    out.length = 0;
    expect(await runLedgerVerify(['--data-dir', dataDir, '--full', '--quiet'], io, {})).toBe(0);
    expect(out.join('\n')).toMatch(/^gap: .*segments? 1/m);
    expect(out.at(-1)).toMatch(/^ledger verify ok: .*1 gaps/);
  });
});
