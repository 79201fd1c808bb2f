import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { hashPayload } from './ledger-entry.js';
import { EXIT_TORN, runLedgerVerify } from '../cli/ledger-verify-command.js';
import { verifyLedgers } from './ledger-verify.js';

const newId = createSessionIdGenerator();

describe('a torn ledger tail after a crash', () => {
  let dataDir: string;
  let sid: string;
  let dir: string;
  let ledger: FileLedger;
  const out: string[] = [];
  const io = { stdout: (l: string) => void out.push(l), stderr: (l: string) => void out.push(l) };
  const turn = (n: number) => ({ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload({ n }), resultHash: hashPayload(`r${n}`), requestId: `req-${n}` });
  const file = (name: string): string => path.join(dir, name);

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-torn-'));
    sid = newId();
    dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    ledger = new FileLedger({ dataDir, tier: 'production' });
    await ledger.startSession(sid);
    for (let n = 1; n <= 5; n++) await ledger.recordTurn(turn(n));
    await ledger.close();
    out.length = 0;
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('reports a line cut short as a torn tail (exit 3), not tampering; --repair moves it aside and the chain goes on', async () => {
    const whole = readFileSync(file('exec.jsonl'), 'utf8');
    const cut = '{"entry_type":"L-EXEC","previous_hash":"sha256:0e';
    appendFileSync(file('exec.jsonl'), cut);

    const report = await verifyLedgers(dataDir, { full: true });
    expect(report.problems).toEqual([]);
    expect(report.torn).toEqual([expect.objectContaining({ file: file('exec.jsonl'), line: 6, offset: Buffer.byteLength(whole), message: expect.stringContaining('not tampering') })]);

    expect(await runLedgerVerify(['--data-dir', dataDir, '--quiet'], io, {})).toBe(EXIT_TORN);
    expect(out).toContain(`${file('exec.jsonl')}:6: TORN_TAIL: the last line is cut short (${cut.length} bytes without a line break): a write torn by a crash, not tampering`);
    expect(out.at(-1)).toMatch(/^ledger verify TORN: .*1 torn tails/);
    // Nothing moved without --repair.
    expect(readFileSync(file('exec.jsonl'), 'utf8')).toBe(whole + cut);

    out.length = 0;
    expect(await runLedgerVerify(['--data-dir', dataDir, '--quiet', '--repair'], io, {})).toBe(0);
    expect(out.join('\n')).toContain(`repaired: ${file('exec.jsonl')}: ${cut.length} bytes from byte ${Buffer.byteLength(whole)} moved to ${file('exec.jsonl.torn')}`);
    expect(readFileSync(file('exec.jsonl'), 'utf8')).toBe(whole);
    expect(readFileSync(file('exec.jsonl.torn'), 'utf8')).toContain(cut);

    const again = new FileLedger({ dataDir, tier: 'production' });
    await again.recordTurn(turn(6));
    await again.close();
    out.length = 0;
    expect(await runLedgerVerify(['--data-dir', dataDir, '--quiet', '--full'], io, {})).toBe(0);
    expect(out.at(-1)).toMatch(/^ledger verify ok: 1 sessions, 2 files, 12 entries checked, 0 problems/);
  });

  it('reports a turn written to one ledger and not yet the other, at the end, as a torn tail and repairs it', async () => {
    // As a crash between the two writes of turn 6: its exec entry landed, its evidence entry did not.
    const whole = readFileSync(file('exec.jsonl'), 'utf8');
    const writer = new FileLedger({ dataDir, tier: 'production' });
    await writer.recordTurn(turn(6));
    await writer.close();
    const evidence = readFileSync(file('evidence.jsonl'), 'utf8').split('\n').filter(Boolean);
    writeFileSync(file('evidence.jsonl'), `${evidence.slice(0, 5).join('\n')}\n`);

    const report = await verifyLedgers(dataDir, { full: true });
    expect(report.problems).toEqual([]);
    expect(report.torn).toEqual([expect.objectContaining({ file: file('exec.jsonl'), line: 6, message: expect.stringContaining('no evidence entry') })]);
    const repaired = await verifyLedgers(dataDir, { full: true, repair: true });
    expect(repaired.torn[0]!.repaired).toMatchObject({ quarantine: file('exec.jsonl.torn') });
    expect(readFileSync(file('exec.jsonl'), 'utf8')).toBe(whole);
    expect(await verifyLedgers(dataDir, { full: true })).toMatchObject({ problems: [], torn: [] });
  });

  it('never calls a changed line inside the file torn, and survives a megabyte-long cut line', async () => {
    const whole = readFileSync(file('exec.jsonl'), 'utf8');
    const lines = whole.split('\n');
    lines[2] = lines[2]!.slice(0, 40);
    writeFileSync(file('exec.jsonl'), lines.join('\n'));
    const report = await verifyLedgers(dataDir, { full: true });
    expect(report.torn).toEqual([]);
    expect(report.problems[0]).toMatchObject({ file: file('exec.jsonl'), line: 3, code: 'UNPARSEABLE' });

    // What a crash can leave on some file systems: a tail of NULs, here a megabyte of them with no line break.
    writeFileSync(file('exec.jsonl'), whole + '\u0000'.repeat(1024 * 1024));
    const nul = await verifyLedgers(dataDir, { full: true });
    expect(nul.problems).toEqual([]);
    expect(nul.torn).toEqual([expect.objectContaining({ file: file('exec.jsonl'), line: 6, offset: Buffer.byteLength(whole) })]);
  });
});
