import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeDriver, FakeWarmClaimDriver } from '../../test/helpers/fake-sandbox-driver.js';
import { poolSpec } from '../../test/helpers/pool-spec.js';
import { recordRunnerConnections, type RunnerConnections } from '../../test/helpers/runner-connections.js';
import { waitFor } from '../../test/helpers/wait-for.js';
import { silentLogger } from '../logger.js';
import { ClaimReserve, isWarmClaimSource, type ClaimReserveOptions } from './claim-reserve.js';
import { SandboxClient } from './sandbox-client.js';
import type { SandboxSpec } from './sandbox-driver.js';

const spec: SandboxSpec = { appId: 'shop', pool: poolSpec({ name: 'node', minWarm: 4, maxSize: 8 }), definitionsRoot: '/nonexistent', labels: {} };

describe('ClaimReserve', () => {
  const reserves: ClaimReserve[] = [];

  afterEach(async () => {
    await Promise.all(reserves.splice(0).map((reserve) => reserve.close()));
  });

  function makeReserve(
    source: FakeWarmClaimDriver,
    size = 2,
    room = (): number => 8,
    idle = (): number => 0,
    more: Pick<ClaimReserveOptions, 'connect' | 'now'> = {},
  ): ClaimReserve {
    const reserve = new ClaimReserve({ source, spec, size, room, idle, logger: silentLogger(), maintenanceIntervalMs: 20, ...more });
    reserves.push(reserve);
    return reserve;
  }

  it('tells a driver that can claim ahead from one that cannot', () => {
    expect(isWarmClaimSource(new FakeWarmClaimDriver(0, 0))).toBe(true);
    expect(isWarmClaimSource(new FakeDriver())).toBe(false);
  });

  it('claims up to its size and no more, however many pods are warm', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 2);
    // Ticks pass: still two, and no further claims.
    const claims = source.claims;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reserve.size).toBe(2);
    expect(source.claims).toBe(claims);
    expect(source.warm).toBe(8);
  });

  it('is bounded by the pool\'s replicas and by the room maxSize leaves', async () => {
    const source = new FakeWarmClaimDriver(10, 1);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 1);
    expect(reserve.limit()).toBe(1);

    const unknown = makeReserve(new FakeWarmClaimDriver(10, undefined), 2);
    unknown.start();
    expect(unknown.limit()).toBe(0);

    let room = 8;
    const roomy = makeReserve(new FakeWarmClaimDriver(10, 10), 2, () => room);
    expect(roomy.limit()).toBe(2);
    room = 1;
    expect(roomy.limit()).toBe(1);
    room = 0;
    expect(roomy.limit()).toBe(0);
  });

  it('hands out a claimed pod at once and claims another in the background', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 2);
    const taken = reserve.take();
    expect(taken).toBeDefined();
    expect(reserve.size).toBe(1);
    await waitFor(() => reserve.size === 2);
    expect(source.claims).toBe(3);
    // A taken pod is the caller's: never handed out twice.
    const next = [reserve.take(), reserve.take()];
    expect(next.map((reserved) => reserved?.handle)).not.toContain(taken!.handle);
    expect(new Set(next.map((reserved) => reserved?.handle.id)).size).toBe(2);
  });

  it('counts the pool\'s idle claimed pods (used ones, adopted ones) as filled: a request takes those first', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    let idle = 2;
    const reserve = makeReserve(source, 2, () => 8, () => idle);
    reserve.start();
    // Ticks pass with two idle: nothing claimed.
    await waitFor(() => source.claims === 0 && reserve.limit() === 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(source.claims).toBe(0);
    idle = 1;
    await waitFor(() => reserve.size === 1);
    idle = 0;
    await waitFor(() => reserve.size === 2);
    // More idle later never trims the reserve: only its bound does.
    idle = 5;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(reserve.size).toBe(2);
  });

  it('answers undefined when nothing is warm, and claims once pods are warm again', async () => {
    const source = new FakeWarmClaimDriver(0, 2);
    const reserve = makeReserve(source, 2);
    reserve.start();
    expect(reserve.take()).toBeUndefined();
    source.warm = 3;
    await waitFor(() => reserve.size === 2);
  });

  it('skips a reserved pod that died, or is being deleted, and replaces it', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 2);
    const [first, second] = [...source.live.keys()];
    source.kill(first!);
    source.retire(second!);
    await waitFor(() => source.destroyed.some((d) => d.id === second && d.cause === 'recycled'));
    await waitFor(() => reserve.size === 2);
    const taken = [reserve.take()!.handle.id, reserve.take()!.handle.id];
    expect(taken).not.toContain(first);
    expect(taken).not.toContain(second);
  });

  it('hands out no reserved pod that stopped being Ready: it goes (unhealthy), and the next one comes', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 2);
    const [first, second] = [...source.live.keys()];
    source.unhealthy.add(first!);
    expect(reserve.take()?.handle.id).toBe(second);
    await waitFor(() => source.destroyed.some((d) => d.id === first && d.cause === 'unhealthy'));
    await waitFor(() => reserve.size === 2);
  });

  it('gives back what it holds beyond a lowered bound (a scale-down), and everything on close', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => reserve.size === 2);
    source.replicas = 1;
    await waitFor(() => reserve.size === 1);
    source.replicas = 0;
    await waitFor(() => reserve.size === 0);
    expect(source.destroyed.map((d) => d.cause)).toEqual(['shutdown', 'shutdown']);
    expect(source.warm).toBe(10);

    source.replicas = 2;
    await waitFor(() => reserve.size === 2);
    await reserve.close();
    expect(source.live.size).toBe(0);
    expect(source.warm).toBe(10);
    // Closed: it claims nothing more, and hands nothing out.
    expect(reserve.take()).toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(source.live.size).toBe(0);
  });

  it('gives back a pod claimed while it was closing', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const claimWarm = source.claimWarm.bind(source);
    source.claimWarm = async (given) => {
      await gate;
      return claimWarm(given);
    };
    const reserve = makeReserve(source, 2);
    reserve.start();
    const closing = reserve.close();
    open();
    await closing;
    expect(source.live.size).toBe(0);
    expect(source.warm).toBe(10);
  });

  it('survives failed claims and tries again on the next tick', async () => {
    const source = new FakeWarmClaimDriver(10, 10);
    source.failClaims = true;
    const reserve = makeReserve(source, 2);
    reserve.start();
    await waitFor(() => source.claims >= 4);
    expect(reserve.size).toBe(0);
    source.failClaims = false;
    await waitFor(() => reserve.size === 2);
  });

  describe('the connection to each reserved pod', () => {
    let dir: string;
    let runner: RunnerConnections;
    let clock = 0;

    afterEach(async () => {
      await Promise.all(reserves.splice(0).map((reserve) => reserve.close()));
      await runner.close();
      rmSync(dir, { recursive: true, force: true });
    });

    async function reserveWithConnections(source: FakeWarmClaimDriver): Promise<{ reserve: ClaimReserve; clients: SandboxClient[] }> {
      dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-reserve-'));
      runner = await recordRunnerConnections(dir, 'runner');
      clock = 0;
      const clients: SandboxClient[] = [];
      const reserve = makeReserve(source, 2, () => 8, () => 0, {
        connect: () => {
          const client = new SandboxClient(runner.endpoint);
          clients.push(client);
          return client;
        },
        now: () => clock,
      });
      return { reserve, clients };
    }

    it('is opened with a probe as the pod is claimed, and handed out with it: the request sends on it', async () => {
      const { reserve } = await reserveWithConnections(new FakeWarmClaimDriver(10, 10));
      reserve.start();
      await waitFor(() => reserve.size === 2 && runner.connections.filter((c) => c.requests.length === 1).length === 2);
      expect(runner.connections.map((c) => c.requests)).toEqual([['GET /healthz'], ['GET /healthz']]);

      const taken = reserve.take()!;
      expect(taken.client).toBeDefined();
      const answer = await taken.client!.execute('{}', 'r1', 2_000);
      expect(answer.status).toBe(200);
      // The execution went on a connection the reserve had already opened and proven.
      const carried = runner.connections.find((c) => c.requests.includes('POST /execute'));
      expect(carried?.requests).toEqual(['GET /healthz', 'POST /execute']);
      taken.client!.close();
    });

    it('is closed with every pod the reserve gives back or loses, and never with one it handed out', async () => {
      const source = new FakeWarmClaimDriver(10, 10);
      const { reserve, clients } = await reserveWithConnections(source);
      reserve.start();
      await waitFor(() => reserve.size === 2 && runner.connections.length === 2 && runner.connections.every((c) => c.requests.length === 1));
      const taken = reserve.take()!;
      await waitFor(() => reserve.size === 2 && runner.connections.length === 3);

      // Lost: the pod died while held.
      const held = [...source.live.keys()].filter((id) => id !== taken.handle.id);
      source.kill(held[0]!);
      await waitFor(() => runner.connections.filter((c) => !c.open).length === 1);
      // Given back: a scale to 0, then the close.
      source.replicas = 0;
      await waitFor(() => reserve.size === 0);
      await reserve.close();
      await waitFor(() => runner.connections.filter((c) => c.open).length === 1);
      // The one left open is the taken pod's: its request is the pool's to finish.
      const takenIndex = clients.indexOf(taken.client!);
      expect(runner.connections[takenIndex]?.open).toBe(true);
      taken.client!.close();
    });

    it('is proven again while the pod is held, so the one handed out is still within its reuse time', async () => {
      const { reserve } = await reserveWithConnections(new FakeWarmClaimDriver(10, 10));
      reserve.start();
      await waitFor(() => reserve.size === 2 && runner.connections.every((c) => c.requests.length === 1) && runner.connections.length === 2);
      // Ticks pass inside the probe interval: no second probe.
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(runner.connections.map((c) => c.requests.length)).toEqual([1, 1]);
      clock += 10_000;
      await waitFor(() => runner.connections.every((c) => c.requests.length === 2));
      // On the same connections: proven, not replaced.
      expect(runner.connections).toHaveLength(2);
      expect(runner.connections.every((c) => c.open)).toBe(true);
    });

    it('a pod whose probe fails stays held (its Ready condition says whether it serves); the request then connects itself', async () => {
      const source = new FakeWarmClaimDriver(10, 10);
      const { reserve } = await reserveWithConnections(source);
      await runner.close();
      reserve.start();
      await waitFor(() => reserve.size === 2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(reserve.size).toBe(2);
      expect(source.destroyed).toEqual([]);
      // The taken client opens a new connection for its request: here it has nothing to reach.
      const taken = reserve.take()!;
      await expect(taken.client!.execute('{}', 'r1', 1_000)).rejects.toMatchObject({ failure: 'connect' });
      taken.client!.close();
    });
  });
});
