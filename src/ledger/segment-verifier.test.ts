/**
 * A segment is verified from its lines' bytes when they are in the writer's
 * form (writer-line.ts) and by parsing otherwise; a replay always parses. The
 * verdict must not depend on the way taken: each ledger here, intact or
 * tampered, gets the same report both ways.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { hashPayload, sha256 } from './ledger-entry.js';
import { ledgerKeyring, makeLedgerKey, type LedgerKeyring } from './ledger-key.js';
import { segmentFileName } from './ledger-paths.js';
import { verifySegment, type SegmentReport, type SegmentTask } from './segment-verifier.js';

const newId = createSessionIdGenerator();
const key = makeLedgerKey(Buffer.alloc(32, 7), 'test');
const otherKeys = ledgerKeyring([makeLedgerKey(Buffer.alloc(32, 9), 'test')]);

/** Both ways: from the bytes where it can, and parsing every line (what a replay does). */
function bothWays(task: SegmentTask, keys?: LedgerKeyring): { fast: SegmentReport; parsed: SegmentReport } {
  const options = keys ? { keys } : {};
  return { fast: verifySegment(task, options), parsed: verifySegment(task, { ...options, onEntry: () => {} }) };
}

/** Line `index` (0-based) of a file changed by `change`, the rest as it was. */
function editLine(file: string, index: number, change: (line: string) => string): void {
  const lines = readFileSync(file, 'utf8').split('\n');
  lines[index] = change(lines[index]!);
  writeFileSync(file, lines.join('\n'));
}

/** A line re-sealed after `change`, in the writer's form, as a local writer without a key can. */
function resealed(line: string, change: (canonical: string) => string): string {
  const canonical = change(`${line.slice(0, line.indexOf(',"entry_hash":'))}}`);
  return `${canonical.slice(0, -1)},"entry_hash":"${sha256(canonical)}"}`;
}

describe('segment verification from bytes and from parsed entries', () => {
  let dataDir: string;
  let sid: string;
  let dir: string;

  async function write(options: { keyed?: boolean; turns?: number } = {}): Promise<void> {
    let clock = Date.UTC(2026, 10, 23);
    const ledger = new FileLedger({ dataDir, tier: 'production', segmentBytes: 4096, now: () => new Date((clock += 1000)), ...(options.keyed ? { key } : {}) });
    await ledger.startSession(sid);
    for (let n = 1; n <= (options.turns ?? 20); n++) {
      await ledger.recordTurn({
        sessionId: sid,
        turnNumber: n,
        status: n % 7 === 0 ? 'UHLP_SANDBOX_TIMEOUT' : 'ok',
        queryHash: hashPayload({ n }),
        resultHash: n % 7 === 0 ? null : hashPayload(`r${n}`),
        requestId: `req-${n}`,
        declaredReads: [{ path: `in/${n}.txt`, hash: hashPayload(n) }],
        realizedWrites: n % 3 === 0 ? [{ path: 'out/caf\u00e9.txt', hash: hashPayload('x'), size: 1, kind: 'file' }] : [],
        externalCalls: [{ kind: 'mcp', target: 'core.kv.get', duration_ms: n % 2 === 0 ? 1.5 : 2, status: 'ok' }],
      });
    }
    await ledger.close();
  }

  const file = (kind: 'exec' | 'evidence', segment = 1): string => path.join(dir, segmentFileName(kind, segment));
  const task = (kind: 'exec' | 'evidence', segment = 1, extra: Partial<SegmentTask> = {}): SegmentTask => ({ file: file(kind, segment), kind, segment, mode: 'full', ...extra });

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-segment-'));
    sid = newId();
    dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('agrees on intact segments, plain and keyed, first and later, from a checkpoint and with watched lines', async () => {
    await write();
    for (const kind of ['exec', 'evidence'] as const) {
      for (const segment of [1, 2]) {
        const { fast, parsed } = bothWays(task(kind, segment, { watch: [2, 3] }));
        expect(fast.problem).toBeUndefined();
        expect(fast.entriesChecked).toBeGreaterThan(3);
        expect(fast).toEqual(parsed);
      }
      const whole = verifySegment(task(kind, 1, { watch: [3] }));
      const start = { line: 3, entry_hash: whole.watched![3]! };
      const { fast, parsed } = bothWays(task(kind, 1, { start }));
      expect(fast.problem).toBeUndefined();
      expect(fast).toEqual(parsed);
    }
    await rm(dataDir, { recursive: true, force: true });
    await write({ keyed: true });
    for (const keys of [ledgerKeyring([key]), undefined, otherKeys]) {
      const { fast, parsed } = bothWays(task('exec', 2), keys);
      expect(fast).toEqual(parsed);
      expect(fast.problem?.code).toBe(keys === undefined ? 'KEY_REQUIRED' : keys === otherKeys ? 'KEY_UNKNOWN' : undefined);
    }
  });

  it.each<[string, (lines: { exec: string; evidence: string }) => void, string]>([
    ['a changed status', ({ exec }) => editLine(exec, 2, (l) => l.replace('"status":"ok"', '"status":"no"')), 'ENTRY_HASH_MISMATCH'],
    ['a changed hash digit', ({ exec }) => editLine(exec, 3, (l) => l.replace(/"entry_hash":"sha256:(.)/, (_m, c: string) => `"entry_hash":"sha256:${c === 'a' ? 'b' : 'a'}`)), 'ENTRY_HASH_MISMATCH'],
    ['a re-sealed entry', ({ exec }) => editLine(exec, 2, (l) => resealed(l, (c) => c.replace('"status":"ok"', '"status":"no"'))), 'PREVIOUS_HASH_MISMATCH'],
    ['another session named', ({ exec }) => editLine(exec, 1, (l) => l.replace(sid, newId())), 'SESSION_MISMATCH'],
    ['a re-sealed entry of another session', ({ exec }) => editLine(exec, 1, (l) => resealed(l, (c) => c.replace(sid, newId()))), 'SESSION_MISMATCH'],
    // Whitespace is not content: the parsed way finds the same canonical form.
    ['a reformatted line', ({ exec }) => editLine(exec, 2, (l) => l.replace('"status":"ok",', '"status": "ok",')), 'verifies'],
    ['a re-sealed non-canonical line', ({ exec }) => editLine(exec, 2, (l) => resealed(l, (c) => c.replace('"status":"ok",', '"status":"ok","status":"ok",'))), 'ENTRY_HASH_MISMATCH'],
    ['a non-ASCII path changed', ({ evidence }) => editLine(evidence, 2, (l) => l.replace('caf\u00e9', 'caf\u00e8')), 'ENTRY_HASH_MISMATCH'],
    ['a turn number changed', ({ evidence }) => editLine(evidence, 4, (l) => l.replace(/"turn_number":(\d+)/, '"turn_number":99')), 'ENTRY_HASH_MISMATCH'],
    ['an unparseable line', ({ exec }) => editLine(exec, 3, (l) => l.slice(0, 40)), 'UNPARSEABLE'],
    ['two lines swapped', ({ exec }) => {
      const lines = readFileSync(exec, 'utf8').split('\n');
      [lines[2], lines[3]] = [lines[3]!, lines[2]!];
      writeFileSync(exec, lines.join('\n'));
    }, 'PREVIOUS_HASH_MISMATCH'],
    ['a torn last line', ({ exec }) => writeFileSync(exec, readFileSync(exec, 'utf8').slice(0, -30)), 'torn'],
  ])('agrees on %s', async (_name, tamper, code) => {
    await write();
    tamper({ exec: file('exec'), evidence: file('evidence') });
    for (const kind of ['exec', 'evidence'] as const) {
      const { fast, parsed } = bothWays(task(kind));
      expect(fast).toEqual(parsed);
    }
    const reports = [verifySegment(task('exec')), verifySegment(task('evidence'))];
    const problems = reports.flatMap((r) => (r.problem ? [r.problem.code] : []));
    expect(problems).toEqual(code === 'verifies' || code === 'torn' ? [] : [code]);
    const text = readFileSync(file('exec'), 'utf8');
    expect(reports[0]!.torn?.bytes).toBe(code === 'torn' ? text.length - text.lastIndexOf('\n') - 1 : undefined);
  });

  it('agrees on a later segment that does not open with its header, and on a header moved inside', async () => {
    await write();
    editLine(file('exec', 2), 0, () => '');
    let { fast, parsed } = bothWays(task('exec', 2));
    expect(fast).toEqual(parsed);
    expect(fast.problem?.code).toBe('SEGMENT_HEADER_INVALID');
    const header = readFileSync(file('evidence', 2), 'utf8').split('\n')[0]!;
    editLine(file('evidence', 2), 0, () => readFileSync(file('evidence', 2), 'utf8').split('\n')[1]!);
    editLine(file('evidence', 2), 1, () => header);
    ({ fast, parsed } = bothWays(task('evidence', 2)));
    expect(fast).toEqual(parsed);
    expect(fast.problem?.code).toBe('SEGMENT_HEADER_INVALID');
  });
});
