import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createSessionIdGenerator } from '../state/session-id.js';
import { FileLedger } from './file-ledger.js';
import { hashPayload } from './ledger-entry.js';
import { segmentFileName } from './ledger-paths.js';
import { createVerifyPool } from './segment-verify-pool.js';
import { verifySegment, type SegmentTask } from './segment-verifier.js';

describe('the segment verification pool', () => {
  let dataDir: string;
  let tasks: SegmentTask[];

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-verify-pool-'));
    const ledger = new FileLedger({ dataDir, tier: 'production', segmentBytes: 2048 });
    const sid = createSessionIdGenerator()();
    await ledger.startSession(sid);
    for (let n = 1; n <= 30; n++) await ledger.recordTurn({ sessionId: sid, turnNumber: n, status: 'ok', queryHash: hashPayload(n), resultHash: null });
    await ledger.close();
    const dir = path.join(dataDir, 'planes', 'production', 'sessions', sid, 'ledger');
    tasks = [1, 2, 3, 4, 5].map((segment) => ({ file: path.join(dir, segmentFileName('exec', segment)), kind: 'exec', segment, mode: 'full' }));
  });
  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('answers each task with its own segment, on a worker and the calling thread', async () => {
    const pool = createVerifyPool({ threads: 2 });
    try {
      const reports = await Promise.all(tasks.map((task) => pool.run(task)));
      expect(reports).toEqual(tasks.map((task) => verifySegment(task)));
      expect(reports.every((report) => report.problem === undefined && report.entriesChecked > 0)).toBe(true);
      expect(pool.pending).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it('fails only the segment a dying worker was on, and verifies the ones it held on the calling thread', async () => {
    const entry = path.join(dataDir, 'dying-worker.mjs');
    writeFileSync(entry, "import { parentPort } from 'node:worker_threads';\nparentPort.on('message', () => { throw new Error('worker died'); });\n");
    const pool = createVerifyPool({ threads: 2, entry });
    try {
      const reports = await Promise.all(tasks.map((task) => pool.run(task)));
      const failed = reports.filter((report) => report.problem !== undefined);
      expect(failed.map((report) => [report.problem!.code, report.problem!.message])).toEqual([['LEDGER_MISSING', 'cannot be read: worker died']]);
      expect(reports.filter((report) => report.problem === undefined)).toHaveLength(tasks.length - 1);
      expect(pool.pending).toBe(0);
    } finally {
      await pool.close();
    }
  });
});
