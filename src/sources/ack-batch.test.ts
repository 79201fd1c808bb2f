import { describe, expect, it } from 'vitest';
import type { KeptAnswer } from '../state/idempotency-store.js';
import { AckBatch } from './ack-batch.js';

/** A settle function that records its batches and answers when told. */
function recorder(): { batches: string[][]; answer: () => void; settle: (ids: readonly string[]) => Promise<void> } {
  const batches: string[][] = [];
  const waiting: Array<() => void> = [];
  return {
    batches,
    answer: () => waiting.shift()?.(),
    settle: (ids) => {
      batches.push([...ids]);
      return new Promise<void>((resolve) => waiting.push(resolve));
    },
  };
}

describe('AckBatch', () => {
  it('settles the successes of one turn of the event loop in one step', async () => {
    const { batches, answer, settle } = recorder();
    const acks = new AckBatch(settle, () => {});
    acks.add('1-0');
    acks.add('2-0');
    acks.add('3-0');
    expect(batches).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['1-0', '2-0', '3-0']]);
    answer();
    await acks.settled();
    expect(batches).toHaveLength(1);
  });

  it('gathers the successes that come while a batch is answered into the next one', async () => {
    const { batches, answer, settle } = recorder();
    const acks = new AckBatch(settle, () => {});
    acks.add('1-0');
    await new Promise((resolve) => setImmediate(resolve));
    acks.add('2-0');
    acks.add('3-0');
    expect(batches).toEqual([['1-0']]);
    answer();
    await new Promise((resolve) => setImmediate(resolve));
    expect(batches).toEqual([['1-0'], ['2-0', '3-0']]);
    answer();
    await acks.settled();
  });

  it('holds a batch back to leave no sooner than its spacing after the one before; after a quiet spell one leaves at once', async () => {
    const left: Array<{ ids: string[]; at: number }> = [];
    const acks = new AckBatch(
      async (ids) => void left.push({ ids: [...ids], at: performance.now() }),
      () => {},
      20,
    );
    acks.add('1-0');
    await new Promise((resolve) => setImmediate(resolve));
    expect(left.map((batch) => batch.ids)).toEqual([['1-0']]);
    // Answered at once: the next successes gather until 20 ms after the first batch left.
    acks.add('2-0');
    await new Promise((resolve) => setTimeout(resolve, 5));
    acks.add('3-0');
    await acks.settled();
    expect(left.map((batch) => batch.ids)).toEqual([['1-0'], ['2-0', '3-0']]);
    expect(left[1]!.at - left[0]!.at).toBeGreaterThanOrEqual(19);
    await new Promise((resolve) => setTimeout(resolve, 25));
    const quiet = performance.now();
    acks.add('4-0');
    await acks.settled();
    expect(left[2]!.at - quiet).toBeLessThan(15);
  });

  it('reports a failed batch and goes on with the next', async () => {
    const errors: unknown[] = [];
    const batches: string[][] = [];
    const acks = new AckBatch(
      async (ids) => {
        batches.push([...ids]);
        if (batches.length === 1) throw new Error('store down');
      },
      (error) => errors.push(error),
    );
    acks.add('1-0');
    await acks.settled();
    acks.add('2-0');
    await acks.settled();
    expect(batches).toEqual([['1-0'], ['2-0']]);
    expect(errors.map((e) => (e as Error).message)).toEqual(['store down']);
  });

  it('bounds one step on a long backlog', async () => {
    const batches: number[] = [];
    const acks = new AckBatch(
      async (ids) => void batches.push(ids.length),
      () => {},
    );
    for (let i = 0; i < 1200; i++) acks.add(`${i}-0`);
    await acks.settled();
    expect(batches).toEqual([512, 512, 176]);
  });

  it('carries each kept answer in the batch of its id, also where a long backlog is split', async () => {
    const batches: Array<{ ids: readonly string[]; keys: string[] }> = [];
    const acks = new AckBatch(
      async (ids, answers) => void batches.push({ ids: [...ids], keys: answers.map((a) => a.key) }),
      () => {},
    );
    const answer = (i: number): KeptAnswer => ({ appId: 'a', key: `k-${i}`, response: { statusCode: 200, headers: {}, body: '' }, ttlMs: 1000 });
    // Every third message replayed a kept answer: its id is settled with none.
    for (let i = 0; i < 600; i++) acks.add(`${i}-0`, i % 3 === 0 ? undefined : answer(i));
    await acks.settled();
    expect(batches.map((b) => b.ids.length)).toEqual([512, 88]);
    for (const { ids, keys } of batches) expect(keys).toEqual(ids.map((id) => Number(id.split('-')[0])).filter((i) => i % 3 !== 0).map((i) => `k-${i}`));
  });

  it('reports a failed batch with its answers, and keeps the next batch\'s answers apart', async () => {
    const errors: unknown[] = [];
    const seen: string[][] = [];
    const acks = new AckBatch(
      async (_ids, answers) => {
        seen.push(answers.map((a) => a.key));
        if (seen.length === 1) throw new Error('store down');
      },
      (error) => errors.push(error),
    );
    acks.add('1-0', { appId: 'a', key: 'first', response: { statusCode: 200, headers: {}, body: '' }, ttlMs: 1000 });
    await acks.settled();
    acks.add('2-0', { appId: 'a', key: 'second', response: { statusCode: 200, headers: {}, body: '' }, ttlMs: 1000 });
    await acks.settled();
    expect(seen).toEqual([['first'], ['second']]);
    expect(errors).toHaveLength(1);
  });
});
