import { describe, expect, it } from 'vitest';
import { Controller, objectKey, splitKey } from './controller.js';

/** Resolves once `predicate` holds, checking after every reconcile; fails after a deadline. */
function until(predicate: () => boolean, timeoutMs = 2000): Promise<void> {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutMs;
    const check = (): void => {
      if (predicate()) return resolve();
      if (Date.now() > deadline) return reject(new Error('condition not met before the deadline'));
      setImmediate(check);
    };
    check();
  });
}

describe('Controller', () => {
  it('retries a failing key with backoff until it succeeds, reporting each outcome', async () => {
    const attempts: number[] = [];
    const outcomes: string[] = [];
    const errors: string[] = [];
    const controller = new Controller(
      async (key) => {
        attempts.push(Date.now());
        if (attempts.length < 3) throw new Error(`boom ${key}`);
      },
      {
        name: 'test',
        baseDelayMs: 20,
        onError: (_name, key, error) => errors.push(`${key}: ${(error as Error).message}`),
        onReconciled: (_name, outcome) => outcomes.push(outcome),
      },
    );
    controller.start();
    controller.queue.add('ns/a');
    await until(() => outcomes.length === 3);
    await controller.stop();
    expect(outcomes).toEqual(['error', 'error', 'ok']);
    expect(errors).toEqual(['ns/a: boom ns/a', 'ns/a: boom ns/a']);
    // Backoff: 20 ms after the first failure, 40 ms after the second.
    expect(attempts[1]! - attempts[0]!).toBeGreaterThanOrEqual(18);
    expect(attempts[2]! - attempts[1]!).toBeGreaterThanOrEqual(38);
  });

  it('requeues a key after the delay a successful reconcile asks for', async () => {
    let calls = 0;
    const controller = new Controller(async () => {
      calls += 1;
      return calls === 1 ? { requeueAfterMs: 10 } : undefined;
    }, { name: 'test' });
    controller.start();
    controller.queue.add('ns/a');
    await until(() => calls === 2);
    await controller.stop();
  });

  it('never reconciles one key twice at once', async () => {
    let running = 0;
    let maxRunning = 0;
    let calls = 0;
    const controller = new Controller(
      async () => {
        running += 1;
        maxRunning = Math.max(maxRunning, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running -= 1;
        calls += 1;
      },
      { name: 'test', workers: 4 },
    );
    controller.start();
    controller.queue.add('ns/a');
    await until(() => running === 1);
    controller.queue.add('ns/a');
    controller.queue.add('ns/a');
    await until(() => calls === 2);
    await controller.stop();
    expect(maxRunning).toBe(1);
  });
});

describe('object keys', () => {
  it('round-trip namespace/name', () => {
    const key = objectKey({ metadata: { namespace: 'ns', name: 'app' } });
    expect(key).toBe('ns/app');
    expect(splitKey(key)).toEqual({ namespace: 'ns', name: 'app' });
  });
});
