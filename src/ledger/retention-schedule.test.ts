import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { silentLogger } from '../logger.js';
import { createSessionIdGenerator } from '../state/session-id.js';
import { verifyLedgers } from './ledger-verify.js';
import { scheduleRetention } from './retention-schedule.js';
import { TurnLedgerThread } from './turn-ledger-thread.js';

const newId = createSessionIdGenerator();

describe('the core\'s retention schedule on the ledger thread', () => {
  let dataDir: string;
  let thread: TurnLedgerThread;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-retention-'));
    thread = new TurnLedgerThread({ dataDir, logger: silentLogger(), durability: 'sync', segmentBytes: 2000 });
  });
  afterEach(async () => {
    await thread.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('prunes old segments of a session being written, keeps writing it, and what remains verifies with the gap reported', async () => {
    const sid = newId();
    const dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    await thread.startSession('production', sid, { appId: 'shop', ambient: true });
    let turn = 0;
    const write = async (count: number): Promise<void> => {
      for (let i = 0; i < count; i++) {
        turn += 1;
        await thread.record({ tier: 'production', sessionId: sid, turnNumber: turn, queryJson: `{"n":${turn}}`, status: 'ok', requestId: `req-${turn}` });
      }
    };
    await write(40);
    const before = readdirSync(dir).filter((n) => n.startsWith('exec')).length;
    expect(before).toBeGreaterThan(4);

    const info = vi.fn();
    const logger = Object.assign(silentLogger(), { info });
    const schedule = scheduleRetention({ ledger: thread, policy: () => ({ planes: { '*': { maxBytes: 6000 } }, apps: {} }), sessionTtlMs: 3600_000, intervalMs: 20, logger });
    try {
      await vi.waitFor(() => expect(existsSync(path.join(dir, 'anchor.json'))).toBe(true), { timeout: 10_000 });
      // Turns go on being written while retention runs, and after it.
      await write(10);
      const report = await schedule.runNow();
      expect(report?.errors).toEqual([]);
    } finally {
      await schedule.stop();
    }
    expect(info).toHaveBeenCalledWith(expect.objectContaining({ segments: expect.any(Number) }), 'ledger retention removed old segments');
    expect(readdirSync(dir)).not.toContain('exec.jsonl');
    const verified = await verifyLedgers(dataDir, { full: true });
    expect(verified.problems).toEqual([]);
    expect(verified.gaps).toEqual([expect.objectContaining({ where: dir })]);
    expect(verified.torn).toEqual([]);
  });
});
