/**
 * The shared RunIndex suite: the memory index runs it as a unit test, the Redis
 * index against a real Redis. Newest first, filters, cursors across pages, the
 * first page's count, a run's change replacing its summary, expiry.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { RunIndex, RunSummary } from '../../src/workflow-runs/run-index.js';

export interface RunIndexFixture {
  readonly index: RunIndex;
  /** Moves the index's clock (both implementations take `now`). */
  readonly advance: (ms: number) => void;
  readonly cleanup: () => Promise<void>;
}

/** TTL the fixtures give their index. */
export const SUITE_TTL_MS = 60 * 60_000;
const BASE = Date.parse('2026-01-01T00:00:00.000Z');

function summary(i: number, overrides: Partial<RunSummary> = {}): RunSummary {
  const at = new Date(BASE + i * 1000).toISOString();
  return {
    id: `RUN-20260101T000000000Z-${String(i).padStart(20, '0')}`,
    app: i % 2 === 0 ? 'even' : 'odd',
    component: i % 3 === 0 ? 'three' : 'other',
    workflowId: 'flow',
    revision: 'r1',
    status: i % 5 === 0 ? 'paused' : 'completed',
    createdAt: at,
    updatedAt: at,
    steps: i,
    attempts: 1,
    ...overrides,
  };
}

export function describeRunIndex(name: string, make: (now: () => number) => Promise<RunIndexFixture>): void {
  describe(`RunIndex (${name})`, () => {
    let fixture: RunIndexFixture | undefined;
    let clock = BASE + 100_000;
    const start = async (): Promise<RunIndex> => {
      clock = BASE + 100_000;
      fixture = await make(() => clock);
      return fixture.index;
    };
    afterEach(async () => {
      await fixture?.cleanup();
      fixture = undefined;
    });

    it('lists runs newest first, in pages joined by cursors, counted on the first page', async () => {
      const index = await start();
      for (let i = 1; i <= 25; i++) index.put(summary(i));
      await index.flush();
      const first = await index.list({ limit: 10 });
      expect(first.runs.map((run) => run.steps)).toEqual([25, 24, 23, 22, 21, 20, 19, 18, 17, 16]);
      expect(first.total).toBe(25);
      const second = await index.list({ limit: 10, cursor: first.next! });
      expect(second.runs.map((run) => run.steps)).toEqual([15, 14, 13, 12, 11, 10, 9, 8, 7, 6]);
      expect(second.total).toBeUndefined();
      const third = await index.list({ limit: 10, cursor: second.next! });
      expect(third.runs.map((run) => run.steps)).toEqual([5, 4, 3, 2, 1]);
      expect(third.next).toBeUndefined();
    });

    it.each([
      [{ app: 'even' }, [24, 22, 20], 12],
      [{ component: 'three' }, [24, 21, 18], 8],
      [{ status: 'paused' as const }, [25, 20, 15], 5],
      [{ app: 'odd', status: 'paused' as const }, [25, 15, 5], 3],
      [{ since: BASE + 20_000 }, [25, 24, 23], 6],
      [{ until: BASE + 3_000 }, [2, 1], 2],
    ])('filters %j across pages', async (filter, newest, total) => {
      const index = await start();
      for (let i = 1; i <= 25; i++) index.put(summary(i));
      await index.flush();
      const page = await index.list({ limit: 3, ...filter });
      expect(page.runs.map((run) => run.steps)).toEqual(newest);
      expect(page.total).toBe(total);
      let seen = page.runs.length;
      for (let cursor = page.next; cursor !== undefined; ) {
        const next = await index.list({ limit: 3, cursor, ...filter });
        seen += next.runs.length;
        cursor = next.next;
      }
      expect(seen).toBe(total);
    });

    it('replaces a run\'s summary when the run changes, keeping its place', async () => {
      const index = await start();
      for (let i = 1; i <= 3; i++) index.put(summary(i));
      index.put(summary(2, { status: 'completed', steps: 99, updatedAt: new Date(BASE + 50_000).toISOString() }));
      await index.flush();
      const page = await index.list({ limit: 10 });
      expect(page.runs.map((run) => run.steps)).toEqual([3, 99, 1]);
      expect(page.total).toBe(3);
    });

    it('forgets runs unchanged for longer than the record TTL', async () => {
      const index = await start();
      index.put(summary(1));
      index.put(summary(2, { updatedAt: new Date(BASE + SUITE_TTL_MS + 60_000).toISOString() }));
      await index.flush();
      clock = BASE + SUITE_TTL_MS + 90_000;
      fixture!.advance(0);
      // A write starts the prune (at most once a minute); the memory index prunes as it lists.
      index.put(summary(3, { createdAt: new Date(clock).toISOString(), updatedAt: new Date(clock).toISOString() }));
      await index.flush();
      const page = await index.list({ limit: 10 });
      expect(page.runs.map((run) => run.steps)).toEqual([3, 2]);
    });

    it('answers an empty list for a cursor past the end or a filter nothing matches', async () => {
      const index = await start();
      index.put(summary(1));
      await index.flush();
      expect(await index.list({ limit: 5, app: 'none' })).toMatchObject({ runs: [], total: 0 });
    });
  });
}
