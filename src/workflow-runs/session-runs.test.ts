import { afterEach, describe, expect, it } from 'vitest';
import { isUhlpError } from '../shared/errors.js';
import { createLogger } from '../logger.js';
import { MemoryRuntimeStore } from '../state/memory-runtime-store.js';
import { newRunFixture } from '../../test/helpers/new-run.js';
import type { RunCancels } from './run-cancels.js';
import { RunService } from './run-service.js';
import { SessionRuns, slotOf } from './session-runs.js';

const stores: MemoryRuntimeStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** Two cores' session runs over one store; cancels are not reached by reject and enqueue. */
function twoCores(): { here: SessionRuns; elsewhere: SessionRuns; runs: RunService; store: MemoryRuntimeStore } {
  const store = new MemoryRuntimeStore();
  stores.push(store);
  const runs = new RunService({ store: store.runs, ttlMs: 60_000, maxBytes: 1024 * 1024 });
  const logger = createLogger('silent');
  const cancels = {} as RunCancels;
  return {
    here: new SessionRuns({ runs, leases: store.leases, cancels, logger }),
    elsewhere: new SessionRuns({ runs: new RunService({ store: store.runs, ttlMs: 60_000, maxBytes: 1024 * 1024 }), leases: store.leases, cancels, logger }),
    runs,
    store,
  };
}

async function refusal(promise: Promise<unknown>): Promise<{ code: string; status: number; details: unknown }> {
  const error = await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  if (!isUhlpError(error)) throw new Error(`expected a refusal, got ${String(error)}`);
  return { code: error.code, status: error.statusCode, details: error.details };
}

describe('SessionRuns', () => {
  it('rejects a second run of a session while the first is active, on any core, and frees a slot whose run ended elsewhere', async () => {
    const { here, elsewhere, runs, store } = twoCores();
    await runs.create(newRunFixture('RUN-1'));
    expect(await here.admit('SES-a', 'RUN-1', 'reject', 1000)).toEqual({});
    const refused = await refusal(elsewhere.admit('SES-a', 'RUN-2', 'reject', 1000));
    expect(refused).toEqual({ code: 'UHLP_WORKFLOW_SESSION_BUSY', status: 409, details: { sessionId: 'SES-a', runId: 'RUN-1', status: 'running', doubleTexting: 'reject' } });
    // Another session is not held up.
    expect(await elsewhere.admit('SES-b', 'RUN-3', 'reject', 1000)).toEqual({});
    // RUN-1 ends where nobody frees its slot: the next request finds it stale and takes it.
    await runs.finish('RUN-1', 'failed', { code: 'UHLP_INTERNAL', status: 500, message: 'gone' });
    expect(await elsewhere.admit('SES-a', 'RUN-2', 'reject', 1000)).toEqual({});
    expect((await store.leases.getLease(slotOf('SES-a')))?.owner).toBe('RUN-2');
  });

  it('starts enqueued requests one at a time, in arrival order, across cores', async () => {
    const { here, elsewhere, runs } = twoCores();
    await runs.create(newRunFixture('RUN-1'));
    await here.admit('SES-q', 'RUN-1', 'reject', 1000);
    const started: string[] = [];
    const waiting: Array<Promise<void>> = [];
    for (const [i, sessions] of [here, elsewhere, here].entries()) {
      const id = `RUN-w${i}`;
      await runs.create(newRunFixture(id));
      waiting.push(sessions.admit('SES-q', id, 'enqueue', 10_000).then(() => void started.push(id)));
      // Arrival order is the order the store queued them in.
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(started).toEqual([]);
    for (const id of ['RUN-1', 'RUN-w0', 'RUN-w1']) {
      await here.release('SES-q', id);
      await waitUntil(() => started.length === ['RUN-1', 'RUN-w0', 'RUN-w1'].indexOf(id) + 1);
    }
    await Promise.all(waiting);
    expect(started).toEqual(['RUN-w0', 'RUN-w1', 'RUN-w2']);
  });

  it('bounds the queue and the wait', async () => {
    const { here, runs } = twoCores();
    await runs.create(newRunFixture('RUN-1'));
    await here.admit('SES-f', 'RUN-1', 'reject', 1000);
    const waits = Array.from({ length: 16 }, (_, i) => here.admit('SES-f', `RUN-${i + 2}`, 'enqueue', 600).catch((error: unknown) => error));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await refusal(here.admit('SES-f', 'RUN-x', 'enqueue', 600))).toMatchObject({ code: 'UHLP_WORKFLOW_SESSION_QUEUE_FULL', status: 429 });
    const timedOut = (await Promise.all(waits))[0];
    expect(isUhlpError(timedOut) && [timedOut.code, (timedOut.details as { runId: string }).runId]).toEqual(['UHLP_WORKFLOW_SESSION_BUSY', 'RUN-1']);
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
