import { describe, expect, it } from 'vitest';
import type { FunctionRef } from './function-ref.js';
import type { FunctionStore, FunctionVersion, RefChangeListener, RefWatch } from './function-store.js';
import { MemoryFunctionStore } from './memory-function-store.js';
import { RefCachingFunctionStore } from './ref-caching-function-store.js';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const PROD: FunctionRef = { alias: 'prod' };

/**
 * A memory store whose reads are counted and can be held, and whose watch is
 * driven by the test: what the cache does when a change or a broken feed
 * arrives in the middle of a read.
 */
class ObservedStore extends MemoryFunctionStore {
  reads = 0;
  watcher: RefChangeListener | undefined;
  /** While set, resolve() waits for it before answering. */
  hold: Promise<void> | undefined;
  /** Whether watchRefs reports the watch live at once (the memory store's own behaviour). */
  liveAtOnce = true;

  override async resolve(tenant: string, namespace: string, fn: string, ref: FunctionRef): Promise<FunctionVersion | undefined> {
    this.reads += 1;
    const answer = await super.resolve(tenant, namespace, fn, ref);
    if (this.hold !== undefined) await this.hold;
    return answer;
  }

  /** The store's own announcements reach the listener through `watcher`, which a test may unset to lose them. */
  override watchRefs(listener: RefChangeListener): RefWatch {
    this.watcher = listener;
    const own = super.watchRefs({ changed: (change) => this.watcher?.changed(change), live: () => {} });
    if (this.liveAtOnce) listener.live(true);
    return {
      close: async () => {
        this.watcher = undefined;
        await own.close();
      },
    };
  }
}

async function published(store: FunctionStore, ...shas: string[]): Promise<void> {
  for (const sha of shas) {
    await store.putBundle('shop', sha, Buffer.from(sha));
    await store.publishVersion('shop', 'p', 'f', sha);
  }
}

function clock(): { now: () => number; advance(ms: number): void } {
  let at = 1_000_000;
  return { now: () => at, advance: (ms) => void (at += ms) };
}

describe('RefCachingFunctionStore', () => {
  it('answers a ref it read from memory, whichever way it is named', async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    await inner.setAlias('shop', 'p', 'f', 'prod', 1);
    const cache = new RefCachingFunctionStore(inner);
    for (const [ref, sha] of [[PROD, A], [{ latest: true }, B], [{ version: 2 }, B]] as const) {
      const before = inner.reads;
      expect((await cache.resolve('shop', 'p', 'f', ref))?.sha256).toBe(sha);
      expect((await cache.resolve('shop', 'p', 'f', ref))?.sha256).toBe(sha);
      expect(inner.reads - before).toBe(1);
    }
    expect(cache.size).toBe(3);
  });

  it("sees another writer's alias move and publish on the next read, as the store announces them", async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    await inner.setAlias('shop', 'p', 'f', 'prod', 1);
    const cache = new RefCachingFunctionStore(inner);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(1);
    expect((await cache.resolve('shop', 'p', 'f', { latest: true }))?.version).toBe(2);
    // Written past the cache, as another core or `uhlp fn alias set` writes.
    await inner.setAlias('shop', 'p', 'f', 'prod', 2);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(2);
    await inner.putBundle('shop', A, Buffer.from(A));
    await inner.publishVersion('shop', 'p', 'f', A);
    expect((await cache.resolve('shop', 'p', 'f', { latest: true }))?.version).toBe(3);
  });

  it('forgets a function it wrote itself before the write answers, and only that function', async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    await inner.setAlias('shop', 'p', 'f', 'prod', 1);
    await inner.putBundle('shop', A, Buffer.from(A));
    await inner.publishVersion('shop', 'p', 'g', A);
    const cache = new RefCachingFunctionStore(inner);
    await cache.resolve('shop', 'p', 'f', PROD);
    await cache.resolve('shop', 'p', 'g', { latest: true });
    // The announcement too is silenced: the cache's own forgetting is what is checked.
    inner.watcher = undefined;
    await cache.setAlias('shop', 'p', 'f', 'prod', 2);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(2);
    const reads = inner.reads;
    await cache.resolve('shop', 'p', 'g', { latest: true });
    expect(inner.reads).toBe(reads);
  });

  it('reads the store again once an entry is ttlMs old: the bound when an announcement is lost', async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    await inner.setAlias('shop', 'p', 'f', 'prod', 1);
    const time = clock();
    const cache = new RefCachingFunctionStore(inner, { ttlMs: 1000, now: time.now });
    await cache.resolve('shop', 'p', 'f', PROD);
    // A change whose announcement never arrives.
    const watcher = inner.watcher;
    inner.watcher = undefined;
    await inner.setAlias('shop', 'p', 'f', 'prod', 2);
    inner.watcher = watcher;
    time.advance(999);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(1);
    time.advance(1);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(2);
  });

  it('keeps nothing until the watch is live, forgets everything when it breaks, and keeps again once it is back', async () => {
    const inner = new ObservedStore();
    inner.liveAtOnce = false;
    await published(inner, A);
    const cache = new RefCachingFunctionStore(inner);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(0);
    inner.watcher!.live(true);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(1);
    inner.watcher!.live(false);
    expect(cache.size).toBe(0);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(0);
    inner.watcher!.live(true);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(1);
  });

  it('uses an answer whose read overlapped a change for that read only', async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    await inner.setAlias('shop', 'p', 'f', 'prod', 1);
    const cache = new RefCachingFunctionStore(inner);
    let release!: () => void;
    inner.hold = new Promise((resolve) => (release = resolve));
    const reading = cache.resolve('shop', 'p', 'f', PROD);
    // The read has its answer (version 1) but has not returned; the alias moves meanwhile.
    await new Promise((resolve) => setImmediate(resolve));
    await inner.setAlias('shop', 'p', 'f', 'prod', 2);
    inner.hold = undefined;
    release();
    expect((await reading)?.version).toBe(1);
    expect(cache.size).toBe(0);
    expect((await cache.resolve('shop', 'p', 'f', PROD))?.version).toBe(2);
  });

  it('does not keep a ref that names nothing, and keeps tenants apart', async () => {
    const inner = new ObservedStore();
    await published(inner, A);
    const cache = new RefCachingFunctionStore(inner);
    expect(await cache.resolve('shop', 'p', 'f', PROD)).toBeUndefined();
    expect(cache.size).toBe(0);
    expect((await cache.resolve('shop', 'p', 'f', { latest: true }))?.sha256).toBe(A);
    expect(await cache.resolve('blog', 'p', 'f', { latest: true })).toBeUndefined();
    // Names that would run together if joined by a separator stay apart.
    expect(await cache.resolve('shop', 'p', 'f\u0000', { latest: true })).toBeUndefined();
  });

  it('holds at most maxEntries refs, dropping the one read longest ago', async () => {
    const inner = new ObservedStore();
    await published(inner, A, B);
    const cache = new RefCachingFunctionStore(inner, { maxEntries: 2 });
    await cache.resolve('shop', 'p', 'f', { version: 1 });
    await cache.resolve('shop', 'p', 'f', { version: 2 });
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(2);
    const reads = inner.reads;
    await cache.resolve('shop', 'p', 'f', { latest: true });
    await cache.resolve('shop', 'p', 'f', { version: 2 });
    expect(inner.reads).toBe(reads);
    await cache.resolve('shop', 'p', 'f', { version: 1 });
    expect(inner.reads).toBe(reads + 1);
  });

  it('stops watching and keeps nothing once closed', async () => {
    const inner = new ObservedStore();
    await published(inner, A);
    const cache = new RefCachingFunctionStore(inner);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    await cache.close();
    expect(inner.watcher).toBeUndefined();
    expect(cache.size).toBe(0);
    await cache.resolve('shop', 'p', 'f', { latest: true });
    expect(cache.size).toBe(0);
  });
});
