import { describe, expect, it } from 'vitest';
import { describeRuntimeStore } from '../../test/state/describe-runtime-store.js';
import { MemoryRuntimeStore } from './memory-runtime-store.js';

describeRuntimeStore('memory', async () => {
  const store = new MemoryRuntimeStore();
  return { store, cleanup: () => store.close() };
});

describe('MemoryRuntimeStore with a driven clock', () => {
  it('expires entries exactly at their TTL', async () => {
    let now = 1_000_000;
    const store = new MemoryRuntimeStore({ now: () => now });
    await store.kv.kvSet('k', 'v', { ttlMs: 100 });
    now += 99;
    expect(await store.kv.kvGet('k')).toBe('v');
    now += 1;
    expect(await store.kv.kvGet('k')).toBeUndefined();
    await store.close();
  });

  it('refuses calls after close with UHLP_STATE_UNAVAILABLE', async () => {
    const store = new MemoryRuntimeStore();
    await store.close();
    await expect(store.kv.kvGet('k')).rejects.toMatchObject({ code: 'UHLP_STATE_UNAVAILABLE' });
  });
});
