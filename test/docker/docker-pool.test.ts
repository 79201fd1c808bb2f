/**
 * The warm pool on real containers: a container killed under load is replaced and
 * requests keep succeeding; a pool of a restarted core adopts its containers
 * instead of starting new ones, unless their image was rebuilt under the same tag;
 * closing leaves none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { createMetrics } from '../../src/metrics.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import type { SandboxDriver, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { WarmPool } from '../../src/sandbox/warm-pool.js';
import { waitFor } from '../helpers/wait-for.js';
import { executeBody, makeSuiteDefinitions, suitePool } from '../sandbox/driver-suite.js';
import { containersOf, docker, sweep, testImages, uniqueInstanceId } from './docker-env.js';

describe('warm pool on the docker driver', () => {
  const instanceId = uniqueInstanceId('pool');
  let image: string;
  let sandboxSpec: SandboxSpec;
  const pool = suitePool({ name: 'warm', minWarm: 2, maxSize: 4, acquireTimeoutMs: 20_000 });

  const makePool = (driver: SandboxDriver, metrics = createMetrics({ defaultMetrics: false })): WarmPool =>
    new WarmPool({ appId: 'suite', pool, driver, sandboxSpec, metrics, logger: silentLogger(), maintenanceIntervalMs: 100 });

  beforeAll(async () => {
    image = (await testImages()).jitRunner.reference;
    sandboxSpec = {
      appId: 'suite',
      pool,
      definitionsRoot: makeSuiteDefinitions(),
      labels: { 'uhlp.dev/app': 'suite', 'uhlp.dev/pool': pool.name, 'uhlp.dev/instance': instanceId },
    };
  });
  afterAll(() => sweep(instanceId));

  it('replaces a container killed under load while requests keep succeeding', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    const driver = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } });
    const warm = makePool(driver, metrics);
    await warm.start();
    await warm.whenReady();

    let answered = 0;
    let retried = 0;
    // One request as the core's router makes it: a sandbox that dies mid-request
    // is released as crashed and the request retried once on a fresh one.
    const request = async (n: number): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        const lease = await warm.acquire();
        try {
          const response = await lease.sandbox.client.execute(executeBody(`q-${n}`, 'hello', `n${n}`), `q-${n}`, 5000);
          expect(response.status).toBe(200);
          warm.release(lease, 'ok');
          answered += 1;
          return;
        } catch (error) {
          warm.release(lease, 'crash');
          if (attempt > 0) throw error;
          retried += 1;
        }
      }
    };
    const workers = Array.from({ length: 3 }, async (_, worker) => {
      for (let i = 0; i < 15; i++) await request(worker * 100 + i);
    });
    // Kill one container once the load is running.
    await waitFor(() => answered >= 5, { timeoutMs: 20_000, what: 'first answers' });
    // The oldest running container is one of the warm ones the load is using.
    const [victim] = (await containersOf(instanceId)).filter((c) => c.State === 'running').sort((a, b) => a.Created - b.Created);
    await docker.getContainer(victim!.Id).kill();
    await Promise.all(workers);

    expect(answered).toBe(45);
    expect(retried).toBeLessThanOrEqual(1);
    await waitFor(async () => !(await containersOf(instanceId)).some((c) => c.Id === victim!.Id), { timeoutMs: 10_000, what: 'killed container removed' });
    // Counted with the cause the driver read from the exit, once it has read it.
    const crashes = async (): Promise<number> =>
      (await metrics.sandboxDestroyed.get()).values.filter((v) => v.labels.cause === 'crash').reduce((sum, v) => sum + v.value, 0);
    await waitFor(async () => (await crashes()) >= 1, { timeoutMs: 10_000, what: 'the crash counted' });
    await waitFor(() => warm.stats().idle >= pool.minWarm, { timeoutMs: 20_000, what: 'refill to minWarm' });

    // A clean stop as the core makes it: pools first, then the driver.
    await warm.close();
    await driver.close();
    expect(await containersOf(instanceId)).toEqual([]);
  });

  it('adopts the containers of the same instance after a restart instead of starting new ones', async () => {
    const dead = frozenAfterWarmUp(new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } }));
    const first = makePool(dead.driver);
    await first.start();
    await first.whenReady();
    await waitFor(async () => (await containersOf(instanceId)).length === pool.minWarm, { timeoutMs: 10_000, what: 'minWarm containers' });
    const before = (await containersOf(instanceId)).map((c) => c.Id).sort();
    // The first core dies without closing its pool: from here on it does nothing.
    dead.freeze();

    const secondDriver = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } });
    const second = makePool(secondDriver);
    await second.start();
    expect(second.stats().idle).toBe(pool.minWarm);
    expect(second.stats().starting).toBe(0);
    expect((await containersOf(instanceId)).map((c) => c.Id).sort()).toEqual(before);

    const lease = await second.acquire();
    const response = await lease.sandbox.client.execute(executeBody('adopted', 'hello', 'again'), 'adopted', 5000);
    expect(JSON.parse(response.body.toString()).data).toMatchObject({ hello: 'again' });
    second.release(lease, 'ok');

    await second.close();
    await secondDriver.close();
    expect(await containersOf(instanceId)).toEqual([]);
  });

  it('removes, rather than adopts, containers of an image since rebuilt under the same tag', async () => {
    const images = await testImages();
    const repo = 'uhlp-test-adopt';
    const tag = instanceId;
    const reference = `${repo}:${tag}`;
    await docker.getImage(images.jitRunner.reference).tag({ repo, tag });
    try {
      const first = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: reference } });
      const handle = await first.create(sandboxSpec);
      expect((await containersOf(instanceId)).map((c) => c.Id)).toContain(handle.id);
      // A rebuild moves the tag to another image (here: the node base the runner is built on).
      await docker.getImage(images.nodeBase.reference).tag({ repo, tag });

      const second = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: reference } });
      expect(await second.adopt('suite', pool.name, sandboxSpec)).toEqual([]);
      await waitFor(async () => !(await containersOf(instanceId)).some((c) => c.Id === handle.id), { timeoutMs: 10_000, what: 'outdated container removed' });
      await first.close();
      await second.close();
    } finally {
      await docker.getImage(reference).remove().catch(() => undefined);
    }
  });
});

/**
 * A driver that stops acting when frozen: creations never finish and destroys do
 * nothing, as if its core had been killed, while its pool object lives on in
 * this test process.
 */
function frozenAfterWarmUp(inner: SandboxDriver): { driver: SandboxDriver; freeze(): void } {
  let frozen = false;
  const driver: SandboxDriver = {
    name: inner.name,
    isolation: inner.isolation,
    create: (spec, signal) => (frozen ? new Promise(() => undefined) : inner.create(spec, signal)),
    destroy: async (handle, cause) => (frozen ? undefined : inner.destroy(handle, cause)),
    adopt: (appId, poolName) => inner.adopt!(appId, poolName),
    close: async () => (frozen ? undefined : inner.close()),
  };
  return { driver, freeze: () => (frozen = true) };
}
