/**
 * The suite every RunStore passes, memory and Redis alike: runs created once,
 * updated by version, listed while active.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { RunStore } from '../../src/state/run-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeRunStore(name: string, makeStore: MakeStore<RunStore>): void {
  const it = storeTest(makeStore);
  describe(`RunStore contract: ${name}`, () => {
    it('creates a run once, reads it back at version 1, and lists it while active', async ({ store }) => {
      expect(await store.createRun('RUN-1', '{"status":"running"}', 60_000, true)).toBe(true);
      expect(await store.createRun('RUN-1', '{"status":"other"}', 60_000, true)).toBe(false);
      expect(await store.getRun('RUN-1')).toEqual({ json: '{"status":"running"}', version: 1 });
      expect(await store.createRun('RUN-2', '{"status":"paused"}', 60_000, false)).toBe(true);
      expect(await store.listActiveRuns()).toEqual(['RUN-1']);
      expect(await store.getRun('RUN-none')).toBeUndefined();
    });

    it('updates only from the version read, and takes a run off the active list', async ({ store }) => {
      await store.createRun('RUN-3', '{"n":0}', 60_000, true);
      const results = await Promise.all([store.updateRun('RUN-3', 1, '{"n":1}', 60_000, true), store.updateRun('RUN-3', 1, '{"n":2}', 60_000, true)]);
      expect(results.filter(Boolean)).toHaveLength(1);
      const read = await store.getRun('RUN-3');
      expect(read?.version).toBe(2);
      expect(await store.updateRun('RUN-3', 2, '{"n":3}', 60_000, false)).toBe(true);
      expect(await store.listActiveRuns()).toEqual([]);
      expect(await store.getRun('RUN-3')).toEqual({ json: '{"n":3}', version: 3 });
      expect(await store.updateRun('RUN-none', 1, '{}', 60_000, false)).toBe(false);
    });

    it("marks a run's cancellation for its driver to poll, until the mark expires", async ({ store }) => {
      await store.createRun('RUN-k', '{}', 60_000, true);
      expect(await store.runCancelMarked('RUN-k')).toBe(false);
      await store.markRunCancel('RUN-k', 60_000);
      expect(await store.runCancelMarked('RUN-k')).toBe(true);
      expect(await store.runCancelMarked('RUN-other')).toBe(false);
      await store.markRunCancel('RUN-short', 150);
      await waitFor(async () => !(await store.runCancelMarked('RUN-short')), { what: 'cancel mark expiry' });
      expect((await codeOf(store.markRunCancel('', 1000))).code).toBe('UHLP_STATE_INPUT_INVALID');
      expect((await codeOf(store.markRunCancel('RUN-k', 0))).code).toBe('UHLP_STATE_INPUT_INVALID');
    });

    it("queues a session's waiting requests in arrival order, bounded, dropping the ones that stop waiting", async ({ store }) => {
      expect(await store.joinSessionQueue('SES-q', 'T-1', 3, 60_000)).toBe(0);
      expect(await store.joinSessionQueue('SES-q', 'T-2', 3, 60_000)).toBe(1);
      expect(await store.joinSessionQueue('SES-q', 'T-3', 3, 150)).toBe(2);
      // Full: a fourth waits nowhere; one already queued keeps its place.
      expect(await store.joinSessionQueue('SES-q', 'T-4', 3, 60_000)).toBe(-1);
      expect(await store.joinSessionQueue('SES-q', 'T-2', 3, 60_000)).toBe(1);
      expect(await store.joinSessionQueue('SES-other', 'T-1', 3, 60_000)).toBe(0);
      expect(await store.sessionQueueHead('SES-q', 'T-1', 60_000)).toBe(true);
      expect(await store.sessionQueueHead('SES-q', 'T-2', 60_000)).toBe(false);
      await store.leaveSessionQueue('SES-q', 'T-1');
      expect(await store.sessionQueueHead('SES-q', 'T-1', 60_000)).toBeUndefined();
      expect(await store.sessionQueueHead('SES-q', 'T-2', 60_000)).toBe(true);
      // T-3 stopped refreshing its ticket: it is dropped, which frees a place.
      await waitFor(async () => (await store.joinSessionQueue('SES-q', 'T-4', 3, 60_000)) === 1, { what: 'ticket expiry' });
      expect(await store.sessionQueueHead('SES-q', 'T-3', 60_000)).toBeUndefined();
      await store.leaveSessionQueue('SES-q', 'T-2');
      expect(await store.sessionQueueHead('SES-q', 'T-4', 60_000)).toBe(true);
      expect((await codeOf(store.joinSessionQueue('', 'T-1', 3, 1000))).code).toBe('UHLP_STATE_INPUT_INVALID');
      expect((await codeOf(store.joinSessionQueue('SES-q', 'T-1', 0, 1000))).code).toBe('UHLP_STATE_INPUT_INVALID');
    });

    it('lists active runs oldest first, drops expired ones, and refuses bad input', async ({ store }) => {
      await store.createRun('RUN-a', '{}', 60_000, true);
      await store.createRun('RUN-b', '{}', 150, true);
      await store.createRun('RUN-c', '{}', 60_000, true);
      expect(await store.listActiveRuns(2)).toEqual(['RUN-a', 'RUN-b']);
      await waitFor(async () => (await store.getRun('RUN-b')) === undefined, { what: 'run expiry' });
      expect(await store.listActiveRuns()).toEqual(['RUN-a', 'RUN-c']);
      expect((await codeOf(store.createRun('', '{}', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
      expect((await codeOf(store.createRun('RUN-x', 'not json', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
      expect((await codeOf(store.updateRun('RUN-a', 0, '{}', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
    });
  });
}
