import { afterEach, describe, expect, it } from 'vitest';
import { createRuntimeStore } from '../state/create-runtime-store.js';
import type { StoredResponse } from '../state/idempotency-store.js';
import type { RuntimeStore } from '../state/runtime-store.js';
import { runIdempotent, type IdempotencyOptions } from './idempotency.js';

describe('runIdempotent with an answer its caller keeps (complete)', () => {
  const stores: RuntimeStore[] = [];
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });

  async function optionsOf(extra: Partial<IdempotencyOptions>): Promise<IdempotencyOptions> {
    const store = await createRuntimeStore();
    stores.push(store);
    return { store: store.idempotency, appId: 'a', key: 'k', fingerprint: 'f', ttlMs: 60_000, inFlightTtlMs: 60_000, waitMs: 50, successOnly: true, ...extra };
  }

  it('hands the answer and its ttl over instead of storing it, and leaves the record in flight for the caller to complete', async () => {
    const kept: Array<[StoredResponse, number]> = [];
    const options = await optionsOf({ complete: (response, ttlMs) => void kept.push([response, ttlMs]) });
    const outcome = await runIdempotent(options, async () => ({ status: 201, headers: { 'x-a': ['1', '2'] }, body: 'done' }));
    expect(outcome).toEqual({ response: { status: 201, headers: { 'x-a': ['1', '2'] }, body: 'done' }, replayed: false });
    expect(kept).toEqual([[{ statusCode: 201, headers: { 'x-a': '1, 2' }, body: Buffer.from('done').toString('base64') }, 60_000]]);
    expect(await options.store.getIdempotent('a', 'k')).toEqual({ state: 'in-flight' });
    // Completed by the caller as the store would have: a repeat then replays it.
    await options.store.completeIdempotent('a', 'k', kept[0]![0], kept[0]![1]);
    const repeat = await runIdempotent(options, async () => {
      throw new Error('a repeat must not run');
    });
    expect(repeat.replayed).toBe(true);
    expect(repeat.response.body.toString()).toBe('done');
  });

  it('hands nothing over for a failure it does not keep: the key is freed for the next attempt', async () => {
    const kept: StoredResponse[] = [];
    const options = await optionsOf({ complete: (response) => void kept.push(response) });
    const outcome = await runIdempotent(options, async () => ({ status: 503, headers: {}, body: '' }));
    expect(outcome.response.status).toBe(503);
    expect(kept).toEqual([]);
    expect(await options.store.getIdempotent('a', 'k')).toBeUndefined();
  });

  it('takes a claim its caller made already as the first answer, and claims again itself only when that claim is gone', async () => {
    const options = await optionsOf({});
    expect(await options.store.beginIdempotent('a', 'k', { inFlightTtlMs: 60_000, fingerprint: 'f' })).toBe('new');
    let ran = 0;
    const outcome = await runIdempotent({ ...options, begun: 'new' }, async () => {
      ran += 1;
      return { status: 200, headers: {}, body: 'once' };
    });
    expect([ran, outcome.replayed]).toEqual([1, false]);
    expect((await options.store.getIdempotent('a', 'k'))?.state).toBe('completed');
    // A claim that found the record completed replays without asking the store again.
    const replay = await runIdempotent({ ...options, begun: { state: 'completed', response: { statusCode: 200, headers: {}, body: Buffer.from('kept').toString('base64') } } }, async () => {
      throw new Error('a replay must not run');
    });
    expect([replay.replayed, replay.response.body.toString()]).toEqual([true, 'kept']);
    // A claim that found it in flight waits for it; here it is gone by then (abandoned), so the key is claimed again and run.
    const other = { ...options, key: 'k2' };
    const afterGone = await runIdempotent({ ...other, begun: { state: 'in-flight' } }, async () => ({ status: 200, headers: {}, body: 'second' }));
    expect([afterGone.replayed, afterGone.response.body]).toEqual([false, 'second']);
  });
});
