/**
 * The runtime and delivery stores on Redis Sentinel (one master, two replicas,
 * three sentinels: test/helpers/redis-sentinel-topology.ts), reached with a
 * `redis+sentinel://` state URL: the shared suites, then failovers under load.
 * Needs redis-server; fails, never skips, without it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryMessage, StreamAddress } from '../../src/state/delivery-store.js';
import type { KeptAnswer } from '../../src/state/idempotency-store.js';
import type { ReplicaAcks } from '../../src/state/replica-acks.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { guaranteeFindings } from '../../src/state/redis-guarantees.js';
import { RedisSentinelTopology } from '../helpers/redis-sentinel-topology.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { waitFor } from '../helpers/wait-for.js';
import { describeRedisStoreSuites } from './describe-redis-store-suites.js';

let topology: RedisSentinelTopology;

beforeAll(async () => {
  topology = await RedisSentinelTopology.start();
}, 60_000);

afterAll(async () => {
  await topology?.stop();
});

describe('a redis+sentinel:// state URL', () => {
  it('reaches the master the sentinels name', async () => {
    const keyPrefix = uniqueKeyPrefix('sentinel-ping');
    const store = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
    const master = topology.client(await topology.masterPort());
    try {
      await store.kv.kvSet('where', 'master');
      await master.connect();
      expect(((await master.call('ROLE')) as string[])[0]).toBe('master');
      expect(await master.keys(`${keyPrefix}*`)).toHaveLength(1);
    } finally {
      master.disconnect();
      await store.deleteAllKeys();
      await store.close();
    }
  });

  it("reads the master's settings the guarantees need, and finds nothing to warn about with replica acks on", async () => {
    const store = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix: uniqueKeyPrefix('sentinel-settings'), timeoutMs: 10_000 });
    try {
      const settings = await store.guaranteeSettings();
      expect(settings).toEqual({ appendonly: 'yes', appendfsync: 'always', minReplicasToWrite: 1, connectedReplicas: 2 });
      expect(guaranteeFindings(settings, { sentinel: true, replicaAcks: { replicas: 1 } })).toEqual([]);
      expect(guaranteeFindings(settings, { sentinel: true, replicaAcks: { replicas: 0 } }).map((finding) => finding.code)).toEqual(['UHLP_STATE_REPLICA_ACKS_OFF']);
    } finally {
      await store.close();
    }
  });
});

describeRedisStoreSuites('redis sentinel', 'sentinel', () => topology.url);

const orders: StreamAddress = { kind: 'queue', app: 'shop', name: 'orders' };

/** What a workload through the stores saw: its counts, checked exactly after it. */
interface Tally {
  /** Publishes the store acknowledged (returned an entry id). */
  readonly published: Set<string>;
  /** Publishes that failed: they may or may not be in the stream. */
  readonly unconfirmed: Set<string>;
  /** Per invocation id, how often a delivery got `new` from its once-only claim (a run). */
  readonly runs: Map<string, number>;
  /** Per invocation id, runs whose acknowledgement failed: the message stays pending and may run again after its claim lapses. */
  readonly unsettled: Map<string, number>;
  /** Per once-only request key, how often `new` was answered. */
  readonly answers: Map<string, number>;
  /** Once-only requests that got their answer and kept it. */
  readonly requests: Set<string>;
  /** Times of successful publishes, epoch ms. */
  readonly writes: number[];
  /** From the start of the disruption to the first publish acknowledged after the new master was named, ms. */
  resumedMs: number;
}

/** The route's lease in these tests: how long a claim and a pending delivery are held before another take-over. */
const LEASE_MS = 1000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const increment = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
const keptAnswer = (key: string): KeptAnswer => ({ appId: 'shop', key, response: { statusCode: 200, headers: {}, body: key }, ttlMs: 600_000 });

/**
 * Runs queue publishes, consumption (once-only claim, then an acknowledgement that keeps the answer) and once-only
 * requests through the stores while `disrupt` runs, then drains the queue. Failed calls are what a core sees in an
 * outage: a publish is not retried (so it counts as unconfirmed), a delivery whose claim or ack failed stays pending
 * and is reclaimed, a request is retried with its key until it is answered.
 */
async function underLoad(runtime: RedisRuntimeStore, delivery: RedisDeliveryStore, disrupt: () => Promise<void>): Promise<Tally> {
  const tally: Tally = { published: new Set(), unconfirmed: new Set(), runs: new Map(), unsettled: new Map(), answers: new Map(), requests: new Set(), writes: [], resumedMs: 0 };
  let producing = true;
  let consuming = true;
  const producer = (async () => {
    for (let i = 0; producing; i += 1) {
      const id = `m-${i}`;
      try {
        await delivery.publish(orders, { payload: String(i), invocationId: id });
        tally.published.add(id);
        tally.writes.push(Date.now());
      } catch {
        tally.unconfirmed.add(id);
        await sleep(20);
      }
    }
  })();
  const reader = delivery.reader();
  // As the core's consumer: a claim lasts the route's lease; a delivery that finds it in flight stays pending and is
  // taken over once it lapsed (delivery-consumer.ts).
  const settle = async (messages: DeliveryMessage[]): Promise<void> => {
    for (const message of messages) {
      let claim: Awaited<ReturnType<typeof runtime.idempotency.beginIdempotent>>;
      try {
        claim = await runtime.idempotency.beginIdempotent('shop', message.invocationId, { inFlightTtlMs: LEASE_MS });
      } catch {
        continue;
      }
      if (claim !== 'new' && claim.state === 'in-flight') continue;
      if (claim === 'new') increment(tally.runs, message.invocationId);
      try {
        await delivery.ack(orders, [message.id], claim === 'new' ? [keptAnswer(message.invocationId)] : []);
      } catch {
        if (claim === 'new') increment(tally.unsettled, message.invocationId);
      }
    }
  };
  const consumer = (async () => {
    let lastReclaim = 0;
    while (consuming) {
      try {
        await settle(await reader.read(orders, 'c1', 50, 100));
        if (Date.now() - lastReclaim > 500) {
          lastReclaim = Date.now();
          await settle(await delivery.reclaim(orders, 'c1', LEASE_MS, 100));
        }
      } catch {
        await sleep(20);
      }
    }
  })();
  const requester = (async () => {
    for (let j = 0; producing; j += 1) {
      const key = `r-${j}`;
      for (;;) {
        try {
          const claim = await runtime.idempotency.beginIdempotent('shop', key, { inFlightTtlMs: 600_000 });
          if (claim === 'new') increment(tally.answers, key);
          else if (typeof claim !== 'object' || claim.state !== 'in-flight') throw new Error(`request ${key} found ${JSON.stringify(claim)}`);
          break;
        } catch (error) {
          if (error instanceof Error && error.message.startsWith('request ')) throw error;
          await sleep(20);
        }
      }
      for (;;) {
        try {
          await runtime.idempotency.completeIdempotent('shop', key, keptAnswer(key).response, 600_000);
          tally.requests.add(key);
          break;
        } catch {
          await sleep(20);
        }
      }
    }
  })();
  try {
    await sleep(500);
    const disrupted = Date.now();
    await disrupt();
    const switched = Date.now();
    // Load goes on until a publish is acknowledged on the new master, then a little longer.
    await waitFor(() => tally.writes.some((at) => at > switched), { timeoutMs: 30_000, intervalMs: 20, what: 'a publish acknowledged after the failover' });
    tally.resumedMs = tally.writes.find((at) => at > switched)! - disrupted;
    await sleep(1000);
    // Enough work to count on a slow machine, whether the failover was short or long.
    await waitFor(() => tally.published.size > 50 && tally.requests.size > 50, { timeoutMs: 30_000, intervalMs: 20, what: 'more than 50 publishes and once-only requests' });
  } finally {
    producing = false;
    await producer;
    await requester;
    // Drain: every acknowledged publish runs, including those whose acknowledgement failed (after a reclaim).
    await waitFor(() => [...tally.published].every((id) => tally.runs.has(id)), { timeoutMs: 30_000, what: 'every acknowledged message run' }).catch(() => {});
    await waitFor(async () => (await delivery.stats(orders, Date.now()).catch(() => undefined))?.depth === 0, { timeoutMs: 30_000, what: 'an empty stream' }).catch(() => {});
    consuming = false;
    await reader.close();
    await consumer;
  }
  return tally;
}

const sum = (map: Map<string, number>): number => [...map.values()].reduce((a, b) => a + b, 0);

async function expectKept(runtime: RedisRuntimeStore, delivery: RedisDeliveryStore, tally: Tally): Promise<void> {
  // Every acknowledged message ran; none ran again unless the acknowledgement of a run failed (at most once more per
  // failed one); nothing ran that was not published.
  for (const id of tally.published) expect(tally.runs.get(id) ?? 0, id).toBeGreaterThanOrEqual(1);
  for (const [id, count] of tally.runs) {
    expect(count, id).toBeLessThanOrEqual(1 + (tally.unsettled.get(id) ?? 0));
    expect(tally.published.has(id) || tally.unconfirmed.has(id), id).toBe(true);
  }
  expect(await delivery.stats(orders, Date.now())).toMatchObject({ depth: 0, pending: 0 });
  // No once-only answer given twice, and every answer kept is there after the failover.
  for (const [key, count] of tally.answers) expect(count, key).toBe(1);
  for (const key of tally.requests) expect(await runtime.idempotency.getIdempotent('shop', key)).toEqual({ state: 'completed', response: keptAnswer(key).response });
  expect(tally.published.size).toBeGreaterThan(50);
  expect(tally.requests.size).toBeGreaterThan(50);
}

/** The stores of one core, waiting for `replicas` replicas after each kept write. */
async function coreStores(replicas: number): Promise<{ runtime: RedisRuntimeStore; delivery: RedisDeliveryStore; close: () => Promise<void> }> {
  const keyPrefix = uniqueKeyPrefix('sentinel-failover');
  const replicaAcks: ReplicaAcks = { replicas, timeoutMs: 1000 };
  const runtime = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000, replicaAcks });
  const delivery = await RedisDeliveryStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000, replicaAcks });
  await delivery.ensureGroup(orders);
  return {
    runtime,
    delivery,
    close: async () => {
      await runtime.deleteAllKeys().catch(() => {});
      await runtime.close();
      await delivery.close();
    },
  };
}

describe('failover under load', () => {
  /** Load through a failover `switchMaster` makes; every guarantee checked after it, and writes back within `boundMs`. */
  async function failsOverKeepingWork(what: string, replicaAcks: number, switchMaster: () => Promise<number>, boundMs: number): Promise<void> {
    const { runtime, delivery, close } = await coreStores(replicaAcks);
    try {
      const before = await topology.masterPort();
      let after = 0;
      let followed = 0;
      const tally = await underLoad(runtime, delivery, async () => {
        const started = Date.now();
        after = await switchMaster();
        followed = Date.now() - started;
      });
      expect(after).not.toBe(before);
      await expectKept(runtime, delivery, tally);
      console.info(`${what}: promoted in ${followed} ms; acknowledged publishes again after ${tally.resumedMs} ms; published ${tally.published.size}, unconfirmed ${tally.unconfirmed.size}, runs ${sum(tally.runs)}, failed acks ${sum(tally.unsettled)}, requests ${tally.requests.size}`);
      expect(tally.resumedMs).toBeLessThan(boundMs);
    } finally {
      await close();
    }
  }

  // A planned switch leaves the old master taking writes until the sentinels demote it, while a replica that is not
  // the promoted one may still follow it: only a write every replica holds is sure to be on the new master. Kept
  // writes wait until the old master follows the new one (the sentinels convert it after about 8 s).
  it('SENTINEL FAILOVER, UHLP_STATE_REPLICA_ACKS=2 (every replica): every acknowledged message runs (again only after a failed ack), no once-only answer twice, writes resume within 30 s', async () => {
    await failsOverKeepingWork('SENTINEL FAILOVER', 2, () => topology.failover(), 30_000);
  }, 120_000);

  // A dead master takes no more writes, and the sentinels promote the replica with the largest offset: it holds
  // every write any replica acknowledged, so one replica's acknowledgement is enough.
  it('a killed master, UHLP_STATE_REPLICA_ACKS=1: every acknowledged message runs (again only after a failed ack), no once-only answer twice, writes resume within 15 s', async () => {
    await failsOverKeepingWork('killed master', 1, () => topology.killMaster(), 15_000);
  }, 120_000);
});
