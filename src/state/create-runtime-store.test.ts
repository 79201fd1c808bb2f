import { describe, expect, it } from 'vitest';
import { createRuntimeStore } from './create-runtime-store.js';

describe('createRuntimeStore', () => {
  it('makes the memory store by default', async () => {
    const store = await createRuntimeStore();
    expect(store.kind).toBe('memory');
    await store.close();
  });

  it.each(['localhost:6379', 'http://127.0.0.1:6379', ''])('refuses --state %j naming the flag', async (state) => {
    await expect(createRuntimeStore({ state })).rejects.toMatchObject({ code: 'UHLP_CONFIG_INVALID', details: { field: 'state' } });
  });
});
