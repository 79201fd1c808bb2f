/**
 * The one suite every FunctionStore passes (the memory store's and the Redis
 * store's): bundles written once by address, monotonic versions, republishing
 * the newest bundle, aliases, refs, tenants kept apart, activation logs.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RuntimeStore } from '../../src/state/runtime-store.js';

export interface FunctionStoreFixture {
  store: RuntimeStore;
  cleanup: () => Promise<void>;
}

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);

export function describeFunctionStore(name: string, makeStore: () => Promise<FunctionStoreFixture>): void {
  describe(`FunctionStore contract: ${name}`, () => {
    let fixture: FunctionStoreFixture;
    let store: RuntimeStore;

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });
    afterEach(() => fixture.cleanup());

    it('keeps a bundle byte for byte and never overwrites an address', async () => {
      const bytes = Buffer.from([0, 1, 2, 255, 254]);
      await store.functions.putBundle('shop', A, bytes);
      await store.functions.putBundle('shop', A, Buffer.from('other'));
      expect((await store.functions.getBundle('shop', A))?.equals(bytes)).toBe(true);
      expect(await store.functions.getBundle('shop', B)).toBeUndefined();
    });

    it('keeps tenants apart', async () => {
      await store.functions.putBundle('shop', A, Buffer.from('x'));
      expect(await store.functions.getBundle('blog', A)).toBeUndefined();
      await expect(store.functions.publishVersion('blog', 'p', 'f', A)).rejects.toMatchObject({ code: 'UHLP_FN_NOT_FOUND' });
    });

    it('numbers versions monotonically and answers the newest again when it is republished', async () => {
      await store.functions.putBundle('shop', A, Buffer.from('a'));
      await store.functions.putBundle('shop', B, Buffer.from('b'));
      expect(await store.functions.publishVersion('shop', 'payments', 'reconcile', A)).toMatchObject({ version: 1, sha256: A, created: true });
      expect(await store.functions.publishVersion('shop', 'payments', 'reconcile', A)).toMatchObject({ version: 1, created: false });
      expect(await store.functions.publishVersion('shop', 'payments', 'reconcile', B)).toMatchObject({ version: 2, sha256: B, created: true });
      expect(await store.functions.publishVersion('shop', 'payments', 'reconcile', A)).toMatchObject({ version: 3, sha256: A, created: true });
      expect((await store.functions.listVersions('shop', 'payments', 'reconcile')).map((v) => [v.version, v.sha256])).toEqual([
        [1, A],
        [2, B],
        [3, A],
      ]);
      expect(await store.functions.listVersions('shop', 'payments', 'other')).toEqual([]);
    });

    it('gives concurrent publishers distinct versions', async () => {
      const shas = Array.from({ length: 20 }, (_, i) => i.toString(16).padStart(64, '0'));
      for (const sha of shas) await store.functions.putBundle('shop', sha, Buffer.from(sha));
      const versions = await Promise.all(shas.map((sha) => store.functions.publishVersion('shop', 'n', 'f', sha)));
      expect(new Set(versions.map((v) => v.version)).size).toBe(20);
    });

    it('resolves versions, latest and aliases; refuses an alias to a missing version', async () => {
      await store.functions.putBundle('shop', A, Buffer.from('a'));
      await store.functions.putBundle('shop', B, Buffer.from('b'));
      await store.functions.publishVersion('shop', 'p', 'f', A);
      await store.functions.publishVersion('shop', 'p', 'f', B);
      await store.functions.setAlias('shop', 'p', 'f', 'prod', 1);
      expect((await store.functions.resolve('shop', 'p', 'f', { alias: 'prod' }))?.sha256).toBe(A);
      expect((await store.functions.resolve('shop', 'p', 'f', { latest: true }))?.sha256).toBe(B);
      expect((await store.functions.resolve('shop', 'p', 'f', { version: 2 }))?.sha256).toBe(B);
      expect(await store.functions.resolve('shop', 'p', 'f', { version: 9 })).toBeUndefined();
      expect(await store.functions.resolve('shop', 'p', 'f', { alias: 'canary' })).toBeUndefined();
      expect(await store.functions.resolve('shop', 'p', 'none', { latest: true })).toBeUndefined();
      await expect(store.functions.setAlias('shop', 'p', 'f', 'prod', 7)).rejects.toMatchObject({ code: 'UHLP_FN_NOT_FOUND' });
      await store.functions.setAlias('shop', 'p', 'f', 'prod', 2);
      expect(await store.functions.listAliases('shop', 'p', 'f')).toEqual({ prod: 2 });
    });

    it('keeps activation log chunks in order', async () => {
      expect(await store.functions.readLogs('act-1')).toBeUndefined();
      await store.functions.appendLogs('act-1', '{"n":1}', 60_000);
      await store.functions.appendLogs('act-1', '{"n":2}', 60_000);
      expect(await store.functions.readLogs('act-1')).toEqual(['{"n":1}', '{"n":2}']);
      await expect(store.functions.appendLogs('act-1', 'x', 0)).rejects.toMatchObject({ code: 'UHLP_STATE_INPUT_INVALID' });
    });
  });
}
