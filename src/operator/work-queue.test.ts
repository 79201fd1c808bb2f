import { describe, expect, it } from 'vitest';
import { WorkQueue } from './work-queue.js';

describe('WorkQueue', () => {
  it('holds a key once however often it is added, in FIFO order', async () => {
    const queue = new WorkQueue();
    for (const key of ['a', 'b', 'a', 'c', 'b']) queue.add(key);
    expect(queue.length).toBe(3);
    expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(['a', 'b', 'c']);
  });

  it('does not hand out a key being processed; re-adds it when done', async () => {
    const queue = new WorkQueue();
    queue.add('a');
    const key = await queue.get();
    queue.add('a');
    expect(queue.length).toBe(0);
    queue.done(key!);
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('a');
  });

  it('wakes a waiting get() on add', async () => {
    const queue = new WorkQueue();
    const next = queue.get();
    queue.add('x');
    expect(await next).toBe('x');
  });

  it('backs off exponentially per key up to the cap, and forget() resets it', () => {
    const queue = new WorkQueue({ baseDelayMs: 10, maxDelayMs: 50 });
    expect([1, 2, 3, 4].map(() => queue.addRateLimited('a'))).toEqual([10, 20, 40, 50]);
    expect(queue.addRateLimited('b')).toBe(10);
    queue.forget('a');
    expect(queue.addRateLimited('a')).toBe(10);
    queue.shutDown();
  });

  it('delivers a rate-limited key after its delay', async () => {
    const queue = new WorkQueue({ baseDelayMs: 5 });
    const started = Date.now();
    queue.addRateLimited('a');
    expect(queue.length).toBe(0);
    expect(await queue.get()).toBe('a');
    expect(Date.now() - started).toBeGreaterThanOrEqual(4);
  });

  it('resolves pending get() with undefined on shutdown and ignores later adds', async () => {
    const queue = new WorkQueue();
    const pending = queue.get();
    queue.shutDown();
    expect(await pending).toBeUndefined();
    queue.add('a');
    expect(await queue.get()).toBeUndefined();
  });
});
