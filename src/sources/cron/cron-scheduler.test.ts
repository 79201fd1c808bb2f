import { afterEach, describe, expect, it } from 'vitest';
import type { ComponentSpec, PoolSpec, RouteSpec } from '../../apps/schema/app-definition-schema.js';
import { createLogger } from '../../logger.js';
import { createMetrics } from '../../metrics.js';
import { MemoryDeliveryStore } from '../../state/memory-delivery-store.js';
import { indexSourceRoutes, type CronRoute } from '../source-routes.js';
import { CronScheduler } from './cron-scheduler.js';

const pool = { name: 'main', acquireTimeoutMs: 1000, limits: { timeoutMs: 1000 } } as PoolSpec;
const component = { id: 'job', pool: 'main' } as ComponentSpec;

function cronRoute(schedule: string, missed: 'skip' | 'run-once'): CronRoute {
  const spec = {
    cron: { schedule, timezone: 'UTC', jobId: 'nightly', missed, concurrency: 1, maxAttempts: 1, backoff: { initialMs: 1, maxMs: 1 }, deadLetter: true },
    component: 'job',
  } as RouteSpec;
  return indexSourceRoutes('shop', [spec], new Map([['job', component]]), new Map([['main', pool]])).crons[0]!;
}

/** What the route's stream holds, as invocation ids. */
async function published(store: MemoryDeliveryStore, route: CronRoute): Promise<string[]> {
  const reader = store.reader();
  try {
    return (await reader.read(route.address, 'test', 100, 1)).map((m) => m.invocationId);
  } finally {
    await reader.close();
  }
}

describe('CronScheduler after downtime', () => {
  const stores: MemoryDeliveryStore[] = [];
  const schedulers: CronScheduler[] = [];
  afterEach(async () => {
    for (const scheduler of schedulers.splice(0)) await scheduler.stop();
    for (const store of stores.splice(0)) await store.close();
  });

  /** A store whose job last fired three hours ago, at a whole hour. */
  async function storeLastFired(route: CronRoute): Promise<{ store: MemoryDeliveryStore; last: number }> {
    const store = new MemoryDeliveryStore();
    stores.push(store);
    const last = Math.floor(Date.now() / 3600_000) * 3600_000 - 3 * 3600_000;
    await store.fireCronSlot(route.address, last, 'old-core', 60_000, { payload: '{}', invocationId: 'old' });
    const reader = store.reader();
    await reader.read(route.address, 'drain', 10, 1);
    await reader.close();
    return { store, last };
  }

  async function run(route: CronRoute, store: MemoryDeliveryStore): Promise<void> {
    const scheduler = new CronScheduler(route, { store, metrics: createMetrics({ defaultMetrics: false }), logger: createLogger('silent'), claimant: 'me' });
    schedulers.push(scheduler);
    scheduler.start();
    // stop() waits for the catch-up that start() began.
    await scheduler.stop();
  }

  it('run-once: fires the latest missed slot, once', async () => {
    const route = cronRoute('0 * * * *', 'run-once');
    const { store } = await storeLastFired(route);
    await run(route, store);
    const latest = new Date(Math.floor(Date.now() / 3600_000) * 3600_000).toISOString();
    expect(await published(store, route)).toEqual([`nightly@${latest}`]);
    expect(await store.lastCronSlot('shop', 'nightly')).toBe(Date.parse(latest));
  });

  it('skip: fires nothing for the slots missed', async () => {
    const route = cronRoute('0 * * * *', 'skip');
    const { store, last } = await storeLastFired(route);
    await run(route, store);
    expect(await published(store, route)).toEqual([]);
    expect(await store.lastCronSlot('shop', 'nightly')).toBe(last);
  });

  it('run-once: a job that never fired has missed nothing', async () => {
    const route = cronRoute('0 * * * *', 'run-once');
    const store = new MemoryDeliveryStore();
    stores.push(store);
    await run(route, store);
    expect(await published(store, route)).toEqual([]);
  });

  it('run-once: finds the latest slot of a dense schedule after a long downtime without walking every slot', async () => {
    const route = cronRoute('* * * * * *', 'run-once');
    const { store } = await storeLastFired(route);
    const started = Date.now();
    await run(route, store);
    const [fired] = await published(store, route);
    expect(Date.parse(fired!.split('@')[1]!)).toBeGreaterThan(started - 3000);
  });
});
