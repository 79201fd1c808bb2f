import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { deadlineSignal, drain, nextEvent, withDeadline } from './deadline.js';

const never = (): Promise<never> => new Promise<never>(() => {});
const later = <T>(ms: number, value: T): Promise<T> => new Promise((resolve) => setTimeout(() => resolve(value), ms));

describe('withDeadline', () => {
  it.each([
    { name: 'the work answers first: its value', work: () => later(5, 'done'), ms: 1000, outcome: { value: 'done' } },
    { name: 'the work fails first: its error', work: () => Promise.reject(new Error('broke')), ms: 1000, outcome: { error: 'broke' } },
    { name: 'the deadline passes first: the timeout error', work: never, ms: 10, outcome: { error: 'too late' } },
    { name: 'a deadline of 0 still lets settled work answer', work: () => Promise.resolve('now'), ms: 0, outcome: { value: 'now' } },
  ])('$name', async ({ work, ms, outcome }) => {
    const result = withDeadline(work(), ms, () => new Error('too late'));
    if ('value' in outcome) await expect(result).resolves.toBe(outcome.value);
    else await expect(result).rejects.toThrow(outcome.error);
  });

  it('aborts the signal it gave the work at the deadline, after the timeout error', async () => {
    let seen: AbortSignal | undefined;
    const result = withDeadline(
      (signal) => {
        seen = signal;
        return never();
      },
      10,
      () => new Error('too late'),
    );
    await expect(result).rejects.toThrow('too late');
    expect(seen?.aborted).toBe(true);
  });

  it('leaves the signal alone when the work answers in time', async () => {
    let seen: AbortSignal | undefined;
    await withDeadline(
      async (signal) => {
        seen = signal;
        return 1;
      },
      1000,
      () => new Error('too late'),
    );
    expect(seen?.aborted).toBe(false);
  });

  it('rejects with what the work throws synchronously', async () => {
    const result = withDeadline(
      () => {
        throw new Error('at once');
      },
      1000,
      () => new Error('too late'),
    );
    await expect(result).rejects.toThrow('at once');
  });
});

describe('drain', () => {
  it.each([
    { name: 'everything settles in time', work: () => [later(5, 1), Promise.reject(new Error('x')).catch(() => 0)], ms: 1000, settled: true },
    { name: 'a failure counts as settled', work: () => [Promise.reject(new Error('x'))], ms: 1000, settled: true },
    { name: 'nothing to wait for', work: () => [], ms: 1000, settled: true },
    { name: 'one promise, in time', work: () => later(5, 1), ms: 1000, settled: true },
    { name: 'one promise that fails', work: () => Promise.reject(new Error('x')), ms: 1000, settled: true },
    { name: 'something still runs at the bound', work: () => [later(5, 1), never()], ms: 20, settled: false },
  ])('$name', async ({ work, ms, settled }) => {
    await expect(drain(work(), ms)).resolves.toBe(settled);
  });
});

describe('nextEvent', () => {
  it("answers the event's arguments, and an error event is no failure", async () => {
    const emitter = new EventEmitter();
    emitter.on('error', () => undefined);
    const next = nextEvent(emitter, 'ready', new AbortController().signal);
    emitter.emit('error', new Error('reconnecting'));
    emitter.emit('ready', 1, 2);
    await expect(next).resolves.toEqual([1, 2]);
    expect(emitter.listenerCount('ready')).toBe(0);
  });

  it('takes its listener away at the deadline', async () => {
    const emitter = new EventEmitter();
    await expect(withDeadline((signal) => nextEvent(emitter, 'ready', signal), 10, () => new Error('not ready'))).rejects.toThrow('not ready');
    expect(emitter.listenerCount('ready')).toBe(0);
  });

  it('rejects at once on an aborted signal', async () => {
    const emitter = new EventEmitter();
    await expect(nextEvent(emitter, 'ready', AbortSignal.abort(new Error('gone')))).rejects.toThrow('gone');
    expect(emitter.listenerCount('ready')).toBe(0);
  });
});

describe('deadlineSignal', () => {
  it('aborts with a TimeoutError after the time', async () => {
    const signal = deadlineSignal(10);
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    expect((signal.reason as Error).name).toBe('TimeoutError');
  });

  it("aborts with the caller's reason when the caller aborts first", () => {
    const caller = new AbortController();
    const signal = deadlineSignal(60_000, caller.signal);
    caller.abort(new Error('client gone'));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('client gone');
  });
});
