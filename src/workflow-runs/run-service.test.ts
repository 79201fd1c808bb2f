import { describe, expect, it } from 'vitest';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import type { RunStore, StoredRun } from '../state/run-store.js';
import type { SimulationStep } from '../contract/workflow/run-view.js';
import { MAX_TRACE_STEPS } from './run-record.js';
import { RunService } from './run-service.js';
import { newRunFixture } from '../../test/helpers/new-run.js';

/** A run store that counts its reads, over the memory one. */
function countingStore(): { store: RunStore; reads: () => number } {
  const inner = new MemoryRuntimeStore().runs;
  let reads = 0;
  const store: RunStore = {
    createRun: (...args) => inner.createRun(...args),
    getRun: (id): Promise<StoredRun | undefined> => {
      reads++;
      return inner.getRun(id);
    },
    updateRun: (...args) => inner.updateRun(...args),
    listActiveRuns: (limit) => inner.listActiveRuns(limit),
    markRunCancel: (id, ttlMs) => inner.markRunCancel(id, ttlMs),
    runCancelMarked: (id) => inner.runCancelMarked(id),
    joinSessionQueue: (...args) => inner.joinSessionQueue(...args),
    sessionQueueHead: (...args) => inner.sessionQueueHead(...args),
    leaveSessionQueue: (...args) => inner.leaveSessionQueue(...args),
  };
  return { store, reads: () => reads };
}

const RUN = newRunFixture('RUN-1');

function step(index: number, node: string): SimulationStep {
  return { index, at: '2026-01-01T00:00:00.000Z', workflowId: 'flow', stepId: node, node, type: 'jit', status: 'completed', thought: '', action: {}, observation: null, snapshot: { index }, durationMs: 1 };
}

function stateAfter(nodesRun: number, frontier: string[]): { position: { frontier: string[]; arrived: Record<string, string[]> }; blackboard: Record<string, unknown>; retries: Record<string, number>; loops: Record<string, number>; feedback: Record<string, string>; nodesRun: number } {
  return { position: { frontier, arrived: {} }, blackboard: { input: { n: 1 }, done: nodesRun }, retries: {}, loops: {}, feedback: {}, nodesRun };
}

/** Two cores' run services over one store, the run created and claimed by exec-1 through the first. */
async function twoCores(run = RUN): Promise<{ here: RunService; elsewhere: RunService }> {
  const { store } = countingStore();
  const here = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
  const elsewhere = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
  await here.create(run);
  await here.claim(run.id, 'exec-1');
  return { here, elsewhere };
}

describe('RunService', () => {
  it('keeps the state before each checkpoint for a replay, makes a run from one, and lists it on its parent', async () => {
    const { store } = countingStore();
    const runs = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
    await runs.create(RUN);
    await runs.claim(RUN.id, 'exec-1');
    await runs.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['b']), steps: [step(0, 'a')] });
    // Two steps in one checkpoint: the second has no state of its own.
    await runs.checkpoint(RUN.id, 'exec-1', { state: stateAfter(3, ['d']), steps: [step(1, 'b'), step(2, 'c')], status: 'completed', result: 1 });
    const parent = await runs.get(RUN.id);
    expect(Object.keys(parent.checkpoints ?? {})).toEqual(['0', '1']);
    expect(parent.checkpoints?.['1']).toMatchObject({ state: stateAfter(1, ['b']) });
    const at = '2026-01-01T00:00:00.000Z';
    const child = await runs.create({
      ...RUN,
      id: 'RUN-2',
      origin: { parent: { runId: RUN.id, step: 1, kind: 'replay', by: 'ada', at }, state: stateAfter(1, ['b']), steps: parent.steps.slice(0, 1), droppedSteps: 0, approvals: {}, checkpoints: { '0': parent.checkpoints!['0']! } },
    });
    expect(runs.viewOf(child)).toMatchObject({ nextStep: 1, fresh: false, state: { position: { frontier: ['b'] } } });
    await runs.addChild(RUN.id, { runId: 'RUN-2', step: 1, kind: 'replay', by: 'ada', at });
    const after = await runs.get(RUN.id);
    expect(after.children).toEqual([{ runId: 'RUN-2', step: 1, kind: 'replay', by: 'ada', at }]);
    expect(after.status).toBe('completed');
    expect(after.steps).toEqual(parent.steps);
  });

  it('applies a run owner\'s successive checkpoints from the record it last wrote, reading the store once', async () => {
    const { store, reads } = countingStore();
    const runs = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
    await runs.create(RUN);
    await runs.claim(RUN.id, 'exec-1');
    const readsAfterClaim = reads();
    for (let i = 0; i < 5; i++) await runs.checkpoint(RUN.id, 'exec-1', { state: stateAfter(i + 1, ['a']), steps: [step(i, 'a')] });
    expect(reads()).toBe(readsAfterClaim);
    const stored = JSON.parse((await store.getRun(RUN.id))!.json) as { steps: SimulationStep[]; state: { nodesRun: number }; owner: string };
    expect(stored.steps.map((s) => s.index)).toEqual([0, 1, 2, 3, 4]);
    expect(stored.state.nodesRun).toBe(5);
    expect(stored.owner).toBe('exec-1');
  });

  it('claims a run it created from the record it wrote, with no read; another core claims it from the store', async () => {
    const { store, reads } = countingStore();
    const here = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
    const elsewhere = new RunService({ store, ttlMs: 60_000, maxBytes: 1024 * 1024 });
    await here.create(RUN);
    const claimed = await here.claim(RUN.id, 'exec-1');
    expect(reads()).toBe(0);
    expect(claimed).toMatchObject({ owner: 'exec-1', attempts: 1, status: 'running', state: { blackboard: RUN.blackboard } });
    expect(JSON.parse((await store.getRun(RUN.id))!.json)).toEqual(JSON.parse(JSON.stringify(claimed)));
    // The first core's kept record is stale once another claimed the run: its next change is made on a fresh read.
    await elsewhere.claim(RUN.id, 'exec-2');
    await expect(here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['b']), steps: [step(0, 'a')] })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_RUN_CONFLICT' });
    expect((await here.get(RUN.id)).attempts).toBe(2);
  });

  it('loses nothing another writer wrote in between: the refused write is made again on a fresh read', async () => {
    const { here, elsewhere } = await twoCores();
    await here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['b']), steps: [step(0, 'a')] });
    // Another core changes the run (the same owner's checkpoint through it).
    await elsewhere.checkpoint(RUN.id, 'exec-1', { state: stateAfter(2, ['c']), steps: [step(1, 'b')] });
    await here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(3, ['d']), steps: [step(2, 'c')] });
    const record = await here.get(RUN.id);
    expect(record.steps.map((s) => s.node)).toEqual(['a', 'b', 'c']);
    expect(record.state.nodesRun).toBe(3);
  });

  it('decides on a fresh read, not on what it kept: a run resumed and claimed elsewhere takes its new owner\'s checkpoint, and refuses the old one', async () => {
    const { here, elsewhere } = await twoCores();
    await here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['gate']), steps: [step(0, 'a')], status: 'paused', paused: { node: 'gate', prompt: 'ok?' } });
    await elsewhere.resume(RUN.id, { approved: true }, []);
    await elsewhere.claim(RUN.id, 'exec-2');
    // What this core kept says paused, owned by nobody: the store says running, owned by exec-2.
    await expect(here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(2, ['b']), steps: [] })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_RUN_CONFLICT' });
    const record = await here.checkpoint(RUN.id, 'exec-2', { state: stateAfter(2, ['b']), steps: [step(1, 'gate')] });
    expect(record.status).toBe('running');
    expect(record.steps.map((s) => s.node)).toEqual(['a', 'gate']);
  });

  it('writes every step of a long trace once and whole: the last MAX_TRACE_STEPS kept in order, the rest counted as dropped', async () => {
    const { store } = countingStore();
    const runs = new RunService({ store, ttlMs: 60_000, maxBytes: 8 * 1024 * 1024 });
    await runs.create(RUN);
    await runs.claim(RUN.id, 'exec-1');
    const total = MAX_TRACE_STEPS + 7;
    for (let i = 0; i < total; i++) await runs.checkpoint(RUN.id, 'exec-1', { state: stateAfter(i + 1, ['a']), steps: [step(i, `n${i}`)] });
    const stored = JSON.parse((await store.getRun(RUN.id))!.json) as Record<string, unknown> & { steps: SimulationStep[]; droppedSteps: number };
    expect(stored.droppedSteps).toBe(7);
    expect(stored.steps).toHaveLength(MAX_TRACE_STEPS);
    expect(stored.steps[0]).toEqual(step(7, 'n7'));
    expect(stored.steps.at(-1)).toEqual(step(total - 1, `n${total - 1}`));
    expect(stored).toMatchObject({ id: RUN.id, status: 'running', owner: 'exec-1', attempts: 1, state: { nodesRun: total } });
  });

  it('still fails a run whose record would go over the cap, keeping its last state', async () => {
    const { store } = countingStore();
    const runs = new RunService({ store, ttlMs: 60_000, maxBytes: 4096 });
    await runs.create(RUN);
    await runs.claim(RUN.id, 'exec-1');
    await runs.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['b']), steps: [step(0, 'a')] });
    const big = { ...stateAfter(2, ['c']), blackboard: { text: 'x'.repeat(5000) } };
    await expect(runs.checkpoint(RUN.id, 'exec-1', { state: big, steps: [step(1, 'b')] })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_STATE_TOO_LARGE' });
    const record = await runs.get(RUN.id);
    expect(record.status).toBe('failed');
    expect(record.error?.code).toBe('UHLP_WORKFLOW_STATE_TOO_LARGE');
    expect(record.state.nodesRun).toBe(1);
    expect(record.steps.map((s) => s.node)).toEqual(['a']);
  });

  it('keeps no ended run: finishing one that ended elsewhere changes nothing', async () => {
    const { here, elsewhere } = await twoCores();
    await elsewhere.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, []), steps: [step(0, 'a')], status: 'completed', result: 42 });
    const record = await here.finish(RUN.id, 'failed', { code: 'UHLP_INTERNAL', message: 'x', status: 500 });
    expect(record.status).toBe('completed');
    expect(record.result).toBe(42);
  });

  describe('cancel', () => {
    const who = { by: 'ada', at: '2026-01-01T00:00:00.000Z', via: 'console' as const };

    it('cancels a paused run at once, with who asked and when', async () => {
      const { here } = await twoCores();
      await here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['gate']), steps: [step(0, 'a')], status: 'paused', paused: { node: 'gate', prompt: 'ok?' } });
      const record = await here.requestCancel(RUN.id, who);
      expect(record).toMatchObject({ status: 'cancelled', cancellation: { by: 'ada', at: who.at, via: 'console' }, error: { code: 'UHLP_WORKFLOW_CANCELLED', status: 409, details: { by: 'ada' } } });
      expect(record.paused).toBeUndefined();
      expect(record.steps.map((s) => s.node)).toEqual(['a']);
    });

    it('sets a paused run with an on_cancel node running at that node, and ends it cancelled with what the node answered', async () => {
      const { here } = await twoCores({ ...RUN, onCancel: 'undo' });
      await here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, ['gate']), steps: [step(0, 'a')], status: 'paused', paused: { node: 'gate', prompt: 'ok?' } });
      const leg = await here.requestCancel(RUN.id, who);
      expect(leg).toMatchObject({ status: 'running', state: { position: { frontier: ['undo'] } }, cancellation: { onCancel: 'undo', leg: true } });
      await here.claim(RUN.id, 'exec-2');
      const ended = await here.checkpoint(RUN.id, 'exec-2', { state: stateAfter(2, []), steps: [step(1, 'undo')], status: 'completed', result: { undone: true } });
      expect(ended).toMatchObject({ status: 'cancelled', result: { undone: true }, error: { code: 'UHLP_WORKFLOW_CANCELLED' } });
      expect(ended.steps.map((s) => s.node)).toEqual(['a', 'undo']);
    });

    it('marks a running run, refuses the cut step\'s checkpoints, then runs its on_cancel leg or ends it cancelled', async () => {
      const { here, elsewhere } = await twoCores();
      const marked = await elsewhere.requestCancel(RUN.id, who);
      expect(marked).toMatchObject({ status: 'running', cancellation: { by: 'ada', leg: false } });
      // The step in flight (its checkpoint reaches the core before it is cut) adds nothing.
      await expect(here.checkpoint(RUN.id, 'exec-1', { state: stateAfter(1, []), steps: [step(0, 'a')], status: 'completed', result: 1 })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_RUN_CONFLICT' });
      expect(await here.startCancelLeg(RUN.id)).toBe(false);
      const ended = await here.cancelled(RUN.id);
      expect(ended).toMatchObject({ status: 'cancelled', steps: [] });
      expect(ended.result).toBeUndefined();
      // A second cancel keeps the first's record; a cancel of the ended run is refused with its status.
      await expect(here.requestCancel(RUN.id, { ...who, by: 'bob' })).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_RUN_ENDED', statusCode: 409, details: { status: 'cancelled', cancelledBy: 'ada' } });
    });

    it('refuses to cancel a run that completed, and keeps a running run\'s first cancellation', async () => {
      const { here, elsewhere } = await twoCores({ ...RUN, onCancel: 'undo' });
      await here.requestCancel(RUN.id, who);
      const again = await elsewhere.requestCancel(RUN.id, { ...who, by: 'bob' });
      expect(again.cancellation).toMatchObject({ by: 'ada', leg: false });
      expect(await here.startCancelLeg(RUN.id)).toBe(true);
      expect(await here.startCancelLeg(RUN.id)).toBe(false);
      await here.claim(RUN.id, 'exec-2');
      await here.checkpoint(RUN.id, 'exec-2', { state: stateAfter(1, []), steps: [step(0, 'undo')], status: 'failed', error: { code: 'UHLP_INTERNAL', message: 'x', status: 500 } });
      expect((await here.get(RUN.id)).status).toBe('cancelled');

      const other = newRunFixture('RUN-2');
      await here.create(other);
      await here.claim(other.id, 'exec-3');
      await here.checkpoint(other.id, 'exec-3', { state: stateAfter(1, []), steps: [], status: 'completed', result: 7 });
      await expect(here.requestCancel(other.id, who)).rejects.toMatchObject({ code: 'UHLP_WORKFLOW_RUN_ENDED', details: { status: 'completed' } });
      expect((await here.get(other.id)).result).toBe(7);
    });
  });
});
