import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { AppLedgerSpec } from '../apps/schema/app-definition-schema.js';
import { newTurnEvidence } from '../ledger/turn-evidence.js';
import { TurnLedgerThread, type LedgerDurability } from '../ledger/turn-ledger-thread.js';
import { silentLogger } from '../logger.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { TurnKeeper, type Turn } from './turn-keeper.js';

type Entry = Record<string, unknown>;

describe('TurnKeeper with the ledger thread', () => {
  let dataDir: string;
  let thread: TurnLedgerThread;
  let store: MemoryRuntimeStore;

  const keeper = (durability: LedgerDurability): TurnKeeper => {
    thread = new TurnLedgerThread({ dataDir, logger: silentLogger(), durability });
    return new TurnKeeper({ store: store.sessions, sessionTtlMs: 3600_000, ledger: thread });
  };
  /** The exec entries written so far, of every session. */
  const execEntries = (): Entry[] => {
    const sessions = path.join(dataDir, 'planes', 'production', 'sessions');
    if (!existsSync(sessions)) return [];
    return readdirSync(sessions).flatMap((sid) => {
      const file = path.join(sessions, sid, 'ledger', 'exec.jsonl');
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Entry) : [];
    });
  };
  const begin = async (on: TurnKeeper, requestId: string, policy?: AppLedgerSpec, session?: 'new'): Promise<Turn> =>
    on.begin('shop', 'production', session === 'new' ? { open: true } : undefined, { requestId, ...(policy ? { policy } : {}) });
  const ok = { status: 'ok', answerJson: '{"resultType":"ok"}', evidence: undefined };

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-keeper-'));
    store = new MemoryRuntimeStore();
  });
  afterEach(async () => {
    await thread?.close();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it.each(['sync', 'fsync'] as const)('%s: record() resolves only once the turn is in the file, for every turn of a burst (group commit)', async (durability) => {
    const turns = keeper(durability);
    const begun = await Promise.all(Array.from({ length: 50 }, (_, i) => begin(turns, `req-${i}`)));
    const written = begun.map((turn, i) => turns.record(turn, `{"i":${i}}`, ok));
    for (const [i, promise] of written.entries()) {
      expect(promise).toBeInstanceOf(Promise);
      await promise;
      // Read at once, synchronously: the entry is there when the answer may leave.
      expect(execEntries().map((e) => e.request_id)).toContain(`req-${i}`);
    }
    expect(execEntries()).toHaveLength(50);
  });

  it('async: record() returns nothing and the entry follows', async () => {
    const turns = keeper('async');
    const turn = await begin(turns, 'req-a');
    expect(turns.record(turn, '{}', ok)).toBeUndefined();
    await vi.waitFor(() => expect(execEntries().map((e) => e.request_id)).toEqual(['req-a']), { timeout: 5000 });
  });

  it('ambient off keeps no ordinary turn but every refusal; sampled keeps one turn in 1/rate; stored sessions stay full', async () => {
    const turns = keeper('sync');
    const off: AppLedgerSpec = { ambient: 'off', sampleRate: 0.01 };
    const plain = await begin(turns, 'off-ok', off);
    expect(turns.record(plain, '{}', ok)).toBeUndefined();
    const violated = newTurnEvidence();
    violated.capabilityViolations.push({ operation: 'write output/x', capability: 'capabilities.write', timestamp: new Date().toISOString() });
    await turns.record(await begin(turns, 'off-violation', off), '{}', { status: 'ok', answerJson: '{}', evidence: violated });
    await turns.record(await begin(turns, 'off-denied', off), '{}', { status: 'UHLP_CAPABILITY_DENIED', answerJson: undefined, evidence: newTurnEvidence() });
    await turns.record(await begin(turns, 'off-surface', off), '{}', { status: 'UHLP_WRITE_SURFACE_MISMATCH', answerJson: undefined, evidence: newTurnEvidence() });
    expect(turns.record(await begin(turns, 'off-timeout', off), '{}', { status: 'UHLP_TIMEOUT', answerJson: undefined, evidence: newTurnEvidence() })).toBeUndefined();

    const sampled: AppLedgerSpec = { ambient: 'sampled', sampleRate: 0.25 };
    for (let i = 0; i < 12; i++) await turns.record(await begin(turns, `sampled-${i}`, sampled), '{}', ok);
    // A stored session of the same app: always in full.
    for (let i = 0; i < 3; i++) await turns.record(await begin(turns, `stored-${i}`, off, 'new'), '{}', ok);

    const ids = execEntries().map((e) => e.request_id as string);
    expect(ids.filter((id) => id.startsWith('off-')).sort()).toEqual(['off-denied', 'off-surface', 'off-violation']);
    // Turns 5 to 16 of the ambient session (1-4 went above): one in four, by turn number.
    const kept = execEntries().filter((e) => String(e.request_id).startsWith('sampled-'));
    expect(kept.map((e) => e.turn_number)).toEqual([8, 12, 16]);
    expect(ids.filter((id) => id.startsWith('stored-'))).toHaveLength(3);
  });
});

describe('TurnKeeper with the ledger thread, async, through a small ring', () => {
  let dataDir: string;
  let thread: TurnLedgerThread;
  let store: MemoryRuntimeStore;

  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-keeper-ring-'));
    store = new MemoryRuntimeStore();
  });
  afterEach(async () => {
    await thread?.close();
    await store.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  const execEntries = (): Entry[] => {
    const sessions = path.join(dataDir, 'planes', 'production', 'sessions');
    if (!existsSync(sessions)) return [];
    return readdirSync(sessions).flatMap((sid) => {
      const file = path.join(sessions, sid, 'ledger', 'exec.jsonl');
      return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l) as Entry) : [];
    });
  };

  it('a burst larger than the ring, turns larger than it among them: every turn written, in order, by close()', async () => {
    thread = new TurnLedgerThread({ dataDir, logger: silentLogger(), durability: 'async', ringBytes: 1024 });
    const turns = new TurnKeeper({ store: store.sessions, sessionTtlMs: 3600_000, ledger: thread });
    for (let i = 0; i < 300; i++) {
      const turn = await turns.begin('shop', 'production', undefined, { requestId: `req-${i}` });
      const big = i % 50 === 7 ? 'x'.repeat(5000) : '';
      expect(turns.record(turn, `{"i":${i},"pad":"${big}"}`, { status: 'ok', answerJson: `{"resultType":"generic","data":{"i":${i}}}`, evidence: undefined })).toBeUndefined();
    }
    await thread.close();
    const entries = execEntries();
    expect(entries.map((e) => e.request_id)).toEqual(Array.from({ length: 300 }, (_, i) => `req-${i}`));
    expect(entries.map((e) => e.turn_number)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
  });

  it('a thread asleep on an empty ring is woken by the next turn: written with nothing else happening', async () => {
    thread = new TurnLedgerThread({ dataDir, logger: silentLogger(), durability: 'async' });
    const turns = new TurnKeeper({ store: store.sessions, sessionTtlMs: 3600_000, ledger: thread });
    for (const requestId of ['first', 'second']) {
      turns.record(await turns.begin('shop', 'production', undefined, { requestId }), '{}', { status: 'ok', answerJson: '{"resultType":"generic"}', evidence: undefined });
      await vi.waitFor(() => expect(execEntries().map((e) => e.request_id)).toContain(requestId), { timeout: 2000, interval: 5 });
      // Longer than the batch delay twice: the thread found the ring empty and sleeps.
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(execEntries().map((e) => e.request_id)).toEqual(['first', 'second']);
  });
});
