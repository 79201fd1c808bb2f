/**
 * The one suite every FunctionStore passes (the memory store's and the Redis
 * store's): bundles written once by address, monotonic versions, republishing
 * the newest bundle, aliases, refs, tenants kept apart, activation logs, and
 * ref changes announced to watchers whoever wrote them.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RefChange, RefChangeListener } from '../../src/functions/function-store.js';
import type { RuntimeStore } from '../../src/state/runtime-store.js';
import { waitFor } from '../helpers/wait-for.js';

export interface FunctionStoreFixture {
  store: RuntimeStore;
  /** Another writer of the same data, as another core or `uhlp fn` is (the store itself where there can be no other). */
  peer: RuntimeStore;
  cleanup: () => Promise<void>;
}

/** A watcher that writes down what it hears. */
export function recordingWatcher(): RefChangeListener & { changes: RefChange[]; states: boolean[] } {
  const changes: RefChange[] = [];
  const states: boolean[] = [];
  return { changes, states, changed: (change) => void changes.push(change), live: (live) => void states.push(live) };
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

    it("announces another writer's publishes and alias sets to ref watchers, and nothing once the watch is closed", async () => {
      const heard = recordingWatcher();
      const watch = store.functions.watchRefs(heard);
      try {
        await waitFor(() => heard.states.at(-1) === true, { what: 'the watch live' });
        await fixture.peer.functions.putBundle('shop', A, Buffer.from('a'));
        expect(heard.changes).toEqual([]);
        await fixture.peer.functions.publishVersion('shop', 'p', 'f', A);
        await waitFor(() => heard.changes.length === 1, { what: 'the publish announced' });
        expect(heard.changes[0]).toEqual({ tenant: 'shop', namespace: 'p', function: 'f' });
        await fixture.peer.functions.setAlias('shop', 'p', 'f', 'prod', 1);
        await waitFor(() => heard.changes.length === 2, { what: 'the alias announced' });
        expect(heard.changes[1]).toEqual({ tenant: 'shop', namespace: 'p', function: 'f' });
      } finally {
        await watch.close();
      }
      const before = heard.changes.length;
      await fixture.peer.functions.setAlias('shop', 'p', 'f', 'canary', 1);
      // A watch opened after that change hears the next one: by then the closed watch would have heard the first.
      const after = recordingWatcher();
      const probe = store.functions.watchRefs(after);
      try {
        await waitFor(() => after.states.at(-1) === true, { what: 'the probe live' });
        await fixture.peer.functions.setAlias('shop', 'p', 'f', 'canary', 1);
        await waitFor(() => after.changes.length === 1, { what: 'the probe hearing' });
      } finally {
        await probe.close();
      }
      expect(heard.changes.length).toBe(before);
    });
  });
}
