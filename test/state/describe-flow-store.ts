/**
 * The suite every FlowStore passes, memory and Redis alike: slots up to the
 * limit, the queue's order (priority, then arrival), places kept while asked
 * again, slots and places that lapse (a dead core's), renewals, debounce's
 * latest, and the listing of waiting gates.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { EnterGateOptions, FlowGate, FlowStore } from '../../src/state/flow-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { storeTest, type MakeStore } from './store-fixture.js';

const GATE: FlowGate = { app: 'shop', scope: 'http POST /orders/:id', kind: 'concurrency', key: 'o-1' };
const ONE: EnterGateOptions = { limit: 1, holdMs: 60_000, priority: 0, waitTtlMs: 60_000 };

export function describeFlowStore(name: string, makeStore: MakeStore<FlowStore>): void {
  const it = storeTest(makeStore);
  describe(`FlowStore contract: ${name}`, () => {
    it('grants the limit at once under a burst and queues the rest in arrival order', async ({ store }) => {
      const options = { ...ONE, limit: 2 };
      const entries = [];
      for (let i = 0; i < 5; i++) entries.push(await store.enterGate(GATE, `h${i}`, options));
      expect(entries.map((e) => e.granted)).toEqual([true, true, false, false, false]);
      expect(entries.map((e) => e.position)).toEqual([0, 0, 1, 2, 3]);
      expect(entries[2]!.retryAfterMs).toBeGreaterThan(50_000);
      // Asking again keeps a place; a holder's own slot is still its own.
      expect(await store.enterGate(GATE, 'h3', options)).toMatchObject({ granted: false, position: 2 });
      expect(await store.enterGate(GATE, 'h0', options)).toMatchObject({ granted: true });
      // The first freed slot goes to the head of the queue, not to whoever asks.
      await store.leaveGate(GATE, 'h0');
      expect(await store.enterGate(GATE, 'h4', options)).toMatchObject({ granted: false, position: 3 });
      expect(await store.enterGate(GATE, 'h2', options)).toMatchObject({ granted: true });
      expect(await store.enterGate(GATE, 'h4', options)).toMatchObject({ granted: false, position: 2 });
      // Another key, scope or kind is a gate of its own.
      expect((await store.enterGate({ ...GATE, key: 'o-2' }, 'x', options)).granted).toBe(true);
      expect((await store.enterGate({ ...GATE, kind: 'throttle' }, 'x', options)).granted).toBe(true);
    });

    it('lets never more than the limit hold slots under concurrent asks', async ({ store }) => {
      const entries = await Promise.all(Array.from({ length: 30 }, (_, i) => store.enterGate(GATE, `c${i}`, { ...ONE, limit: 3 })));
      expect(entries.filter((e) => e.granted)).toHaveLength(3);
      expect(entries.filter((e) => !e.granted).map((e) => e.position).sort((a, b) => a - b)).toEqual(Array.from({ length: 27 }, (_, i) => i + 1));
    });

    it('serves higher priorities first, then arrival', async ({ store }) => {
      await store.enterGate(GATE, 'running', ONE);
      await store.enterGate(GATE, 'low', { ...ONE, priority: -5 });
      await store.enterGate(GATE, 'plain', ONE);
      await store.enterGate(GATE, 'high', { ...ONE, priority: 10 });
      await store.enterGate(GATE, 'plain-later', ONE);
      expect(await store.enterGate(GATE, 'high', ONE)).toMatchObject({ granted: false, position: 1 });
      expect(await store.enterGate(GATE, 'low', ONE)).toMatchObject({ granted: false, position: 4 });
      const order: string[] = [];
      let holder = 'running';
      for (let i = 0; i < 4; i++) {
        await store.leaveGate(GATE, holder);
        for (const candidate of ['low', 'plain-later', 'plain', 'high']) {
          if (order.includes(candidate)) continue;
          if ((await store.enterGate(GATE, candidate, ONE)).granted) {
            order.push(candidate);
            holder = candidate;
            break;
          }
        }
      }
      expect(order).toEqual(['high', 'plain', 'plain-later', 'low']);
    });

    it('frees a slot that was not renewed, and keeps one that was', async ({ store }) => {
      const short = { ...ONE, holdMs: 300 };
      expect((await store.enterGate(GATE, 'dead-core', short)).granted).toBe(true);
      expect((await store.enterGate({ ...GATE, key: 'b' }, 'live-core', short)).granted).toBe(true);
      expect((await store.enterGate(GATE, 'next', ONE)).granted).toBe(false);
      const renewing = setInterval(() => void store.renewGate({ ...GATE, key: 'b' }, 'live-core', 300), 60);
      try {
        await waitFor(async () => (await store.enterGate(GATE, 'next', ONE)).granted, { timeoutMs: 3000, intervalMs: 25, what: 'the lapsed slot to free up' });
        expect((await store.enterGate({ ...GATE, key: 'b' }, 'other', ONE)).granted).toBe(false);
      } finally {
        clearInterval(renewing);
      }
      expect(await store.renewGate(GATE, 'nobody', 1000)).toBe(false);
    });

    it("drops a waiting holder that stopped asking (its core died), so the next one moves up", async ({ store }) => {
      await store.enterGate(GATE, 'running', ONE);
      await store.enterGate(GATE, 'gone', { ...ONE, waitTtlMs: 200 });
      expect(await store.enterGate(GATE, 'alive', ONE)).toMatchObject({ position: 2 });
      await waitFor(async () => (await store.enterGate(GATE, 'alive', ONE)).position === 1, { timeoutMs: 3000, intervalMs: 25, what: 'the lapsed waiter to go' });
      await store.leaveGate(GATE, 'running');
      expect((await store.enterGate(GATE, 'alive', ONE)).granted).toBe(true);
    });

    it('forgets a waiting holder that leaves', async ({ store }) => {
      await store.enterGate(GATE, 'running', ONE);
      await store.enterGate(GATE, 'quitter', ONE);
      await store.enterGate(GATE, 'stayer', ONE);
      await store.leaveGate(GATE, 'quitter');
      expect(await store.enterGate(GATE, 'stayer', ONE)).toMatchObject({ position: 1 });
      await store.leaveGate(GATE, 'never-came');
    });

    it('keeps the latest event of a debounce key until it expires', async ({ store }) => {
      const gate: FlowGate = { ...GATE, kind: 'debounce' };
      expect(await store.latest(gate)).toBeUndefined();
      await store.markLatest(gate, 'first', 60_000);
      await store.markLatest(gate, 'second', 200);
      expect(await store.latest(gate)).toBe('second');
      expect(await store.latest({ ...gate, key: 'other' })).toBeUndefined();
      await waitFor(async () => (await store.latest(gate)) === undefined, { timeoutMs: 3000, intervalMs: 25, what: 'the latest mark to expire' });
    });

    it('lists gates with waiting holders, per app', async ({ store }) => {
      await store.enterGate(GATE, 'r', ONE);
      await store.enterGate(GATE, 'w1', ONE);
      await store.enterGate(GATE, 'w2', ONE);
      await store.enterGate({ ...GATE, app: 'crm', key: '' }, 'r', ONE);
      await store.enterGate({ ...GATE, app: 'crm', key: '' }, 'w', ONE);
      await store.enterGate({ ...GATE, key: 'idle' }, 'r', ONE);
      expect(await store.waitingGates()).toEqual([
        { ...GATE, waiting: 2, running: 1 },
        { ...GATE, app: 'crm', key: '', waiting: 1, running: 1 },
      ]);
      expect(await store.waitingGates('crm')).toEqual([{ ...GATE, app: 'crm', key: '', waiting: 1, running: 1 }]);
      await store.leaveGate({ ...GATE, app: 'crm', key: '' }, 'w');
      expect(await store.waitingGates('crm')).toEqual([]);
    });

    it('holds keys with any characters apart', async ({ store }) => {
      const odd = ['a:b', 'a%3Ab', '{tag}', '*', ''];
      for (const key of odd) expect((await store.enterGate({ ...GATE, key }, 'h', ONE)).granted).toBe(true);
      for (const key of odd) expect((await store.enterGate({ ...GATE, key }, 'other', ONE)).granted).toBe(false);
    });
  });
}
