import { describe, expect, it } from 'vitest';
import { KeyedSemaphore } from './keyed-semaphore.js';

type Release = () => void;

/** A task that runs until `finish` is called, recording when it starts and ends. */
function gate(log: string[], name: string): { task: () => Promise<string>; finish: () => void } {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return {
    task: async () => {
      log.push(`${name} start`);
      await done;
      log.push(`${name} end`);
      return name;
    },
    finish: () => finish(),
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('KeyedSemaphore.acquire', () => {
  it('hands out up to `limit` slots of a key at once, and more as they are released', async () => {
    const semaphore = new KeyedSemaphore();
    const first = semaphore.acquire('k', 2, 1000) as Release;
    const second = semaphore.acquire('k', 2, 1000) as Release;
    expect(typeof first).toBe('function');
    expect(typeof second).toBe('function');
    expect(semaphore.held('k')).toBe(2);
    const third = semaphore.acquire('k', 2, 1000);
    expect(third).toBeInstanceOf(Promise);
    first();
    const granted = await third;
    expect(typeof granted).toBe('function');
    expect(semaphore.held('k')).toBe(2);
    second();
    granted!();
    expect(semaphore.held('k')).toBe(0);
  });

  it('keeps keys apart', () => {
    const semaphore = new KeyedSemaphore();
    const a = semaphore.acquire('a', 1, 1000);
    const b = semaphore.acquire('b', 1, 1000);
    expect(typeof a).toBe('function');
    expect(typeof b).toBe('function');
  });

  it('answers undefined to a waiter whose wait passes, and serves the next one', async () => {
    const semaphore = new KeyedSemaphore();
    const held = semaphore.acquire('k', 1, 1000) as Release;
    await expect(semaphore.acquire('k', 1, 10)).resolves.toBeUndefined();
    const next = semaphore.acquire('k', 1, 1000);
    held();
    expect(typeof (await next)).toBe('function');
  });

  it('skips a waiter that gave up in the middle of the line, and forgets the key once the line is done', async () => {
    const semaphore = new KeyedSemaphore();
    const held = semaphore.acquire('k', 1, 1000) as Release;
    const first = semaphore.acquire('k', 1, 1000);
    const quitter = semaphore.acquire('k', 1, 5);
    const last = semaphore.acquire('k', 1, 1000);
    await expect(quitter).resolves.toBeUndefined();
    held();
    const firstRelease = (await first)!;
    expect(semaphore.held('k')).toBe(1);
    firstRelease();
    const lastRelease = (await last)!;
    lastRelease();
    expect(semaphore.held('k')).toBe(0);
    expect(typeof semaphore.acquire('k', 1, 0)).toBe('function');
  });

  it('counts a second call of a release once', () => {
    const semaphore = new KeyedSemaphore();
    const release = semaphore.acquire('k', 2, 1000) as Release;
    semaphore.acquire('k', 2, 1000);
    release();
    release();
    expect(semaphore.held('k')).toBe(1);
  });
});

describe('KeyedSemaphore.run', () => {
  it('runs the tasks of one key one after another, in the order they came', async () => {
    const semaphore = new KeyedSemaphore();
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const c = gate(log, 'c');
    const results = [semaphore.run('k', a.task), semaphore.run('k', b.task), semaphore.run('k', c.task)];
    await tick();
    expect(log).toEqual(['a start']);
    c.finish();
    b.finish();
    a.finish();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c']);
    expect(log).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end']);
    expect(semaphore.held('k')).toBe(0);
  });

  it('serves a long line in order', async () => {
    const semaphore = new KeyedSemaphore();
    const order: number[] = [];
    const count = 20_000;
    await Promise.all(Array.from({ length: count }, (_, i) => semaphore.run('k', () => void order.push(i))));
    expect(order).toEqual(Array.from({ length: count }, (_, i) => i));
    expect(semaphore.held('k')).toBe(0);
  });

  it('runs tasks of different keys side by side', async () => {
    const semaphore = new KeyedSemaphore();
    const log: string[] = [];
    const a = gate(log, 'a');
    const b = gate(log, 'b');
    const both = Promise.all([semaphore.run('one', a.task), semaphore.run('two', b.task)]);
    await tick();
    expect(log).toEqual(['a start', 'b start']);
    a.finish();
    b.finish();
    await both;
  });

  it('lets `limit` tasks of a key run at once', async () => {
    const semaphore = new KeyedSemaphore();
    const log: string[] = [];
    const gates = ['a', 'b', 'c'].map((name) => gate(log, name));
    const all = Promise.all(gates.map((g) => semaphore.run('k', g.task, 2)));
    await tick();
    expect(log).toEqual(['a start', 'b start']);
    gates[0]!.finish();
    await tick();
    expect(log).toContain('c start');
    for (const g of gates) g.finish();
    await all;
  });

  it("answers a task's failure, and the next task of the key still runs", async () => {
    const semaphore = new KeyedSemaphore();
    const failed = semaphore.run('k', async () => {
      throw new Error('broke');
    });
    const next = semaphore.run('k', () => 'ran');
    await expect(failed).rejects.toThrow('broke');
    await expect(next).resolves.toBe('ran');
    expect(semaphore.held('k')).toBe(0);
  });

  it('starts a task asynchronously even when its key is free', async () => {
    const semaphore = new KeyedSemaphore();
    let started = false;
    const running = semaphore.run('k', () => {
      started = true;
    });
    expect(started).toBe(false);
    await running;
    expect(started).toBe(true);
  });
});
