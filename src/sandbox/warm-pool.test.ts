import { afterEach, describe, expect, it } from 'vitest';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { FakeDriver, makeGate } from '../../test/helpers/fake-sandbox-driver.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import { UhlpError } from '../shared/errors.js';
import { silentLogger } from '../logger.js';
import { createMetrics } from '../metrics.js';
import type { Lease } from './pool-strategy.js';
import { WarmPool } from './warm-pool.js';

const basePool: PoolSpec = poolSpec({ name: 'node', acquireTimeoutMs: 2000 });

const pools: WarmPool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close({ force: true })));
});

function makePool(overrides: Partial<PoolSpec> = {}, clock?: { now: number }): { pool: WarmPool; driver: FakeDriver } {
  const driver = new FakeDriver();
  const spec = { ...basePool, ...overrides };
  const pool = new WarmPool({
    appId: 'shop',
    pool: spec,
    driver,
    sandboxSpec: { appId: 'shop', pool: spec, definitionsRoot: '/defs', labels: {} },
    metrics: createMetrics({ defaultMetrics: false }),
    logger: silentLogger(),
    maintenanceIntervalMs: 5,
    probeAfterIdleMs: 1e9,
    now: clock ? () => clock.now : undefined,
  });
  pools.push(pool);
  return { pool, driver };
}

describe('WarmPool', () => {
  it('holds minWarm idle sandboxes before the first request', async () => {
    const { pool, driver } = makePool({ minWarm: 3 });
    expect(pool.ready).toBe(false);
    await pool.start();
    await pool.whenReady();
    expect(pool.stats()).toMatchObject({ idle: 3, busy: 0, starting: 0 });
    expect(driver.created).toBe(3);
    const lease = await pool.acquire();
    expect(lease.hit).toBe(true);
  });

  it('never exceeds maxSize and serves queued requests in order as sandboxes free up', async () => {
    const { pool, driver } = makePool({ minWarm: 0, maxSize: 2 });
    await pool.start();
    const order: number[] = [];
    const leases = await Promise.all([pool.acquire(), pool.acquire()]);
    const queued = [1, 2, 3].map((n) => pool.acquire().then((lease) => (order.push(n), lease)));
    await waitFor(() => pool.stats().waiting === 3);
    expect(driver.maxLive).toBe(2);
    pool.release(leases[0]!, 'ok');
    pool.release(leases[1]!, 'ok');
    const [first, second] = await Promise.all([queued[0]!, queued[1]!]);
    expect(first.hit).toBe(false);
    pool.release(first, 'ok');
    pool.release(second, 'ok');
    await queued[2];
    expect(order).toEqual([1, 2, 3]);
    expect(driver.maxLive).toBe(2);
  });

  it('fails a request that waited past acquireTimeoutMs with UHLP_POOL_EXHAUSTED', async () => {
    const { pool } = makePool({ minWarm: 0, maxSize: 1, acquireTimeoutMs: 50 });
    await pool.start();
    await pool.acquire();
    await expect(pool.acquire()).rejects.toMatchObject({ code: 'UHLP_POOL_EXHAUSTED', statusCode: 503 });
    expect(pool.stats().waiting).toBe(0);
  });

  it('refuses at once when the wait queue is full', async () => {
    const { pool } = makePool({ minWarm: 0, maxSize: 1, maxQueue: 1 });
    await pool.start();
    await pool.acquire();
    const waiting = pool.acquire().catch((e: unknown) => e);
    await expect(pool.acquire()).rejects.toMatchObject({ code: 'UHLP_POOL_QUEUE_FULL' });
    await pool.close({ force: true });
    await expect(waiting).resolves.toMatchObject({ code: 'UHLP_SHUTTING_DOWN' });
  });

  it('recycles a sandbox after maxUses', async () => {
    const { pool, driver } = makePool({ minWarm: 1, maxSize: 1, maxUses: 2 });
    await pool.start();
    await pool.whenReady();
    for (let i = 0; i < 2; i++) pool.release(await pool.acquire(), 'ok');
    await waitFor(() => driver.destroyed.length === 1);
    expect(driver.destroyed[0]).toEqual({ id: 'fake-1', cause: 'recycled' });
    const lease = await pool.acquire();
    expect(lease.sandbox.handle.id).toBe('fake-2');
  });

  it('runs up to concurrency executions on a sandbox, spreading them over idle sandboxes first', async () => {
    const { pool, driver } = makePool({ minWarm: 2, maxSize: 2, concurrency: 3 });
    await pool.start();
    await pool.whenReady();
    const leases = await Promise.all(Array.from({ length: 6 }, () => pool.acquire()));
    const perSandbox = (list: Lease[]) => list.reduce((m, l) => m.set(l.sandbox.handle.id, (m.get(l.sandbox.handle.id) ?? 0) + 1), new Map<string, number>());
    expect([...perSandbox(leases).values()]).toEqual([3, 3]);
    expect(leases.every((l) => l.hit)).toBe(true);
    expect(pool.stats()).toMatchObject({ idle: 0, busy: 2 });
    // The seventh waits for a free slot, and gets the one released first.
    const seventh = pool.acquire();
    await waitFor(() => pool.stats().waiting === 1);
    pool.release(leases[4]!, 'ok');
    expect((await seventh).sandbox).toBe(leases[4]!.sandbox);
    expect(driver.created).toBe(2);
  });

  it('starts one sandbox for as many waiters as it can serve at once', async () => {
    const { pool, driver } = makePool({ minWarm: 0, maxSize: 4, concurrency: 4 });
    await pool.start();
    const leases = await Promise.all(Array.from({ length: 5 }, () => pool.acquire()));
    expect(driver.created).toBe(2);
    expect(new Set(leases.map((l) => l.sandbox.handle.id)).size).toBe(2);
  });

  it('destroys a shared sandbox when one of its executions fails, and recycles it only when drained', async () => {
    const { pool, driver } = makePool({ minWarm: 1, maxSize: 1, concurrency: 2, maxUses: 2 });
    await pool.start();
    await pool.whenReady();
    const [a, b] = await Promise.all([pool.acquire(), pool.acquire()]);
    expect(a!.sandbox).toBe(b!.sandbox);
    // Two uses are taken: the sandbox retires, and is destroyed once both are back.
    pool.release(a!, 'ok');
    expect(driver.destroyed).toEqual([]);
    pool.release(b!, 'ok');
    await waitFor(() => driver.destroyed.length === 1);
    expect(driver.destroyed[0]).toEqual({ id: 'fake-1', cause: 'recycled' });
    const [c, d] = await Promise.all([pool.acquire(), pool.acquire()]);
    pool.release(c!, 'timeout');
    await waitFor(() => driver.destroyed.length === 2);
    expect(driver.destroyed[1]).toEqual({ id: 'fake-2', cause: 'timeout' });
    // The other execution's release, after the destroy, changes nothing.
    pool.release(d!, 'crash');
    pool.release(d!, 'ok');
    await waitFor(() => pool.stats().idle === 1);
    expect(driver.destroyed).toHaveLength(2);
  });

  it('counts a sandbox that dropped its connection with the cause its driver read from the exit', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const driver = new FakeDriver();
    const spec = { ...basePool, minWarm: 1, maxSize: 1 };
    const pool = new WarmPool({ appId: 'shop', pool: spec, driver, sandboxSpec: { appId: 'shop', pool: spec, definitionsRoot: '/defs', labels: {} }, metrics, logger: silentLogger() });
    pools.push(pool);
    await pool.start();
    await pool.whenReady();
    const lease = await pool.acquire();
    // The kernel killed it for memory; the core only saw the connection drop.
    driver.live.get(lease.sandbox.handle.id)!.exit('oom');
    pool.release(lease, 'crash');
    const causes = async (): Promise<Record<string, number>> =>
      Object.fromEntries((await metrics.sandboxDestroyed.get()).values.map((v) => [String(v.labels.cause), v.value]));
    await waitFor(async () => (await causes())['oom'] === 1);
    expect((await causes())['crash']).toBeUndefined();
  });

  it('reaps idle sandboxes past idleTtlSeconds down to minWarm, oldest first', async () => {
    const clock = { now: 0 };
    const { pool, driver } = makePool({ minWarm: 1, maxSize: 4, idleTtlSeconds: 10 }, clock);
    await pool.start();
    await pool.whenReady();
    const leases: Lease[] = await Promise.all([pool.acquire(), pool.acquire(), pool.acquire()]);
    await waitFor(() => pool.stats().idle === 1 && pool.stats().starting === 0);
    for (const lease of leases) pool.release(lease, 'ok');
    expect(pool.stats().idle).toBe(4);
    clock.now = 9_000;
    await new Promise((r) => setTimeout(r, 30));
    expect(pool.stats().idle).toBe(4);
    clock.now = 10_001;
    await waitFor(() => pool.stats().idle === 1, { what: 'reap to minWarm' });
    expect(driver.destroyed.every((d) => d.cause === 'idle')).toBe(true);
    expect(driver.destroyed).toHaveLength(3);
  });

  it('replaces a sandbox that dies while idle', async () => {
    const { pool, driver } = makePool({ minWarm: 2 });
    await pool.start();
    await pool.whenReady();
    driver.kill('fake-1');
    await waitFor(() => driver.created === 3 && pool.stats().idle === 2, { what: 'replacement' });
    const ids = [(await pool.acquire()).sandbox.handle.id, (await pool.acquire()).sandbox.handle.id];
    expect(ids).not.toContain('fake-1');
  });

  it('gives a retiring sandbox no new work, lets its execution finish, and destroys it once released', async () => {
    const { pool, driver } = makePool({ minWarm: 2, maxSize: 3 });
    await pool.start();
    await pool.whenReady();
    const busy = await pool.acquire();
    const busyId = busy.sandbox.handle.id;
    const idleId = busyId === 'fake-1' ? 'fake-2' : 'fake-1';
    driver.retire(busyId);
    driver.retire(idleId);
    // The idle one goes at once; the busy one stays until its execution releases it.
    await waitFor(() => driver.destroyed.some((d) => d.id === idleId), { what: 'idle retiring sandbox destroyed' });
    expect(driver.destroyed.find((d) => d.id === idleId)?.cause).toBe('recycled');
    expect(driver.live.has(busyId)).toBe(true);
    const next = await pool.acquire();
    expect([busyId, idleId]).not.toContain(next.sandbox.handle.id);
    pool.release(busy, 'ok');
    await waitFor(() => driver.destroyed.some((d) => d.id === busyId), { what: 'busy retiring sandbox destroyed once released' });
    expect(driver.destroyed.find((d) => d.id === busyId)?.cause).toBe('recycled');
    pool.release(next, 'ok');
  });

  it('destroys a sandbox released as broken and starts a fresh one', async () => {
    const { pool, driver } = makePool({ minWarm: 1, maxSize: 1 });
    await pool.start();
    await pool.whenReady();
    const lease = await pool.acquire();
    pool.release(lease, 'timeout');
    await waitFor(() => driver.destroyed.length === 1);
    expect(driver.destroyed[0]!.cause).toBe('timeout');
    expect((await pool.acquire()).sandbox.handle.id).toBe('fake-2');
  });

  it('a waiter gets the sandbox that is being started for it (a miss)', async () => {
    const { pool, driver } = makePool({ minWarm: 0, maxSize: 2 });
    driver.gate = makeGate();
    await pool.start();
    const pending = pool.acquire();
    await waitFor(() => pool.stats().starting === 1);
    driver.gate.release();
    const lease = await pending;
    expect(lease.hit).toBe(false);
  });

  it('fails waiters with UHLP_SANDBOX_UNAVAILABLE when no sandbox can start', async () => {
    const { pool, driver } = makePool({ minWarm: 0 });
    driver.failStarts = true;
    await pool.start();
    const error = await pool.acquire().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UhlpError);
    expect(error).toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE', statusCode: 503 });
    expect(pool.stats().lastStartError).toBe('cannot start');
  });

  it('a wait given up with its signal leaves the queue, and the sandbox goes to the next', async () => {
    const { pool } = makePool({ minWarm: 1, maxSize: 1 });
    await pool.start();
    await pool.whenReady();
    const held = await pool.acquire();
    const giveUp = new AbortController();
    const abandoned = pool.acquire(giveUp.signal).catch((e: unknown) => e);
    const next = pool.acquire();
    expect(pool.stats().waiting).toBe(2);
    giveUp.abort(new Error('client went away'));
    expect(await abandoned).toMatchObject({ message: 'client went away' });
    expect(pool.stats().waiting).toBe(1);
    pool.release(held, 'ok');
    expect((await next).sandbox).toBe(held.sandbox);
    await expect(pool.acquire(AbortSignal.abort(new Error('already gone')))).rejects.toMatchObject({ message: 'already gone' });
  });

  it('hands the /execute body on as it is: its sandboxes read the app from their own mount', async () => {
    const { pool } = makePool({ minWarm: 1 });
    await pool.start();
    const lease = await pool.acquire();
    const body = '{"requestId":"r1"}';
    expect(pool.prepareRequest(lease, body)).toBe(body);
  });

  it('close() destroys everything and refuses new requests', async () => {
    const { pool, driver } = makePool({ minWarm: 2 });
    await pool.start();
    await pool.whenReady();
    const lease = await pool.acquire();
    await pool.close({ force: true });
    expect(driver.live.size).toBe(0);
    pool.release(lease, 'ok');
    await expect(pool.acquire()).rejects.toMatchObject({ code: 'UHLP_SHUTTING_DOWN' });
  });
});
