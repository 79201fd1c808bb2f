/**
 * The runtime and delivery stores on a Redis Cluster (three masters, three
 * replicas: test/helpers/redis-cluster-topology.ts), reached with a
 * `redis+cluster://` state URL: the shared suites, the key layout checked by the
 * cluster itself, and a slot moved under load. Needs redis-server and redis-cli;
 * fails, never skips, without them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DeliveryMessage, StreamAddress } from '../../src/state/delivery-store.js';
import type { KeptAnswer } from '../../src/state/idempotency-store.js';
import { RedisDeliveryStore } from '../../src/state/redis-delivery-store.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { deliveryOnceKey, RuntimeKeys } from '../../src/state/runtime-keys.js';
import { RedisClusterTopology } from '../helpers/redis-cluster-topology.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { waitFor } from '../helpers/wait-for.js';
import { describeRedisStoreSuites } from './describe-redis-store-suites.js';

let topology: RedisClusterTopology;

beforeAll(async () => {
  topology = await RedisClusterTopology.start();
}, 90_000);

afterAll(async () => {
  await topology?.stop();
});

describe('a redis+cluster:// state URL', () => {
  it("spreads the state over the masters, and keeps each script's keys in one slot as the cluster computes it", async () => {
    const keyPrefix = uniqueKeyPrefix('cluster-spread');
    const store = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
    try {
      for (let i = 0; i < 60; i += 1) await store.kv.kvSet(`k-${i}`, String(i));
      const holding = new Set<number>();
      for (const master of await topology.masters()) {
        const node = topology.client(master.port);
        await node.connect();
        if ((await node.keys(`${keyPrefix}*`)).length > 0) holding.add(master.port);
        node.disconnect();
      }
      expect(holding.size).toBe(3);
      expect((await store.kv.kvScan('k-')).length).toBe(60);
      // The cluster's own CLUSTER KEYSLOT agrees with the layout: a queue's stream, retries, dead letters and records share one slot.
      const keys = new RuntimeKeys(keyPrefix);
      const family = [
        keys.deliveryStream('queue', 'shop', 'orders'),
        keys.deliveryRetries('queue', 'shop', 'orders'),
        keys.deliveryDead('queue', 'shop', 'orders'),
        keys.idempotency('shop', deliveryOnceKey('queue', 'orders', 'inv-1')),
      ];
      const slots = new Set(await Promise.all(family.map((key) => topology.keySlot(key))));
      expect(slots.size).toBe(1);
      expect(await store.deleteAllKeys()).toBe(60);
    } finally {
      await store.close();
    }
  });
});

describeRedisStoreSuites('redis cluster', 'cluster', () => topology.url);

const orders: StreamAddress = { kind: 'queue', app: 'shop', name: 'orders' };
const LEASE_MS = 1000;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const increment = (map: Map<string, number>, key: string): void => void map.set(key, (map.get(key) ?? 0) + 1);
const answer = (key: string): KeptAnswer => ({ appId: 'shop', key, response: { statusCode: 200, headers: {}, body: key }, ttlMs: 600_000 });
const sum = (map: Map<string, number>): number => [...map.values()].reduce((a, b) => a + b, 0);

describe('a slot moved under load', () => {
  it("moves the slot of a queue's keys while messages are published, consumed with once-only claims and settled, and once-only requests answered: nothing lost, nothing twice", async () => {
    const keyPrefix = uniqueKeyPrefix('cluster-reshard');
    const runtime = await RedisRuntimeStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
    const delivery = await RedisDeliveryStore.connect({ url: topology.url, keyPrefix, timeoutMs: 10_000 });
    const keys = new RuntimeKeys(keyPrefix);
    const published = new Set<string>();
    const unconfirmed = new Set<string>();
    const runs = new Map<string, number>();
    const unsettled = new Map<string, number>();
    const answers = new Map<string, number>();
    const requests = new Set<string>();
    let failures = 0;
    let producing = true;
    let consuming = true;
    try {
      await delivery.ensureGroup(orders);
      const slot = await topology.keySlot(keys.deliveryStream('queue', 'shop', 'orders'));
      const before = await topology.ownerOf(slot);
      const producer = (async () => {
        for (let i = 0; producing; i += 1) {
          const id = `m-${i}`;
          try {
            await delivery.publish(orders, { payload: String(i), invocationId: id });
            published.add(id);
          } catch {
            unconfirmed.add(id);
            failures += 1;
          }
        }
      })();
      const reader = delivery.reader();
      // As the core's consumer (delivery-consumer.ts): the records of one read claimed in one step, in the queue's slot,
      // then completed in the script that acknowledges the messages.
      const settle = async (messages: DeliveryMessage[]): Promise<void> => {
        if (messages.length === 0) return;
        let begun;
        try {
          begun = await runtime.idempotency.beginIdempotentMany('shop', messages.map((message) => ({ key: deliveryOnceKey('queue', 'orders', message.invocationId), inFlightTtlMs: LEASE_MS })));
        } catch {
          failures += 1;
          return;
        }
        const ran = messages.filter((_, i) => begun[i] === 'new');
        const done = messages.filter((_, i) => begun[i] === 'new' || (typeof begun[i] === 'object' && (begun[i] as { state: string }).state === 'completed'));
        for (const message of ran) increment(runs, message.invocationId);
        try {
          await delivery.ack(orders, done.map((message) => message.id), ran.map((message) => answer(deliveryOnceKey('queue', 'orders', message.invocationId))));
        } catch {
          failures += 1;
          for (const message of ran) increment(unsettled, message.invocationId);
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
            failures += 1;
            await sleep(20);
          }
        }
      })();
      // Once-only requests (an Idempotency-Key each), spread over every slot, some of them in the moving one.
      const requester = (async () => {
        for (let j = 0; producing; j += 1) {
          const key = `r-${j}`;
          for (;;) {
            try {
              const claim = await runtime.idempotency.beginIdempotent('shop', key, { inFlightTtlMs: 600_000 });
              if (claim === 'new') increment(answers, key);
              else if (typeof claim !== 'object' || claim.state !== 'in-flight') throw new Error(`request ${key} found ${JSON.stringify(claim)}`);
              break;
            } catch (error) {
              if (error instanceof Error && error.message.startsWith('request ')) throw error;
              failures += 1;
              await sleep(20);
            }
          }
          for (;;) {
            try {
              await runtime.idempotency.completeIdempotent('shop', key, answer(key).response, 600_000);
              requests.add(key);
              break;
            } catch {
              failures += 1;
              await sleep(20);
            }
          }
        }
      })();
      let move: { keys: number; to: number };
      let moveMs: number;
      try {
        await waitFor(() => published.size > 200 && runs.size > 100, { timeoutMs: 20_000, what: 'traffic before the move' });
        const started = Date.now();
        // Five keys per MIGRATE with a pause: the queue's stream, retries, dead letters and records leave a few at a time.
        move = await topology.moveSlot(slot, { batch: 5, pauseMs: 100 });
        moveMs = Date.now() - started;
        const afterMove = published.size;
        await waitFor(() => published.size > afterMove + 200, { timeoutMs: 20_000, what: 'publishes after the move' });
      } finally {
        producing = false;
        await producer;
        await requester;
        await waitFor(() => [...published].every((id) => runs.has(id)), { timeoutMs: 30_000, what: 'every acknowledged message run' }).catch(() => {});
        await waitFor(async () => (await delivery.stats(orders, Date.now()).catch(() => undefined))?.depth === 0, { timeoutMs: 30_000, what: 'an empty stream' }).catch(() => {});
        consuming = false;
        await reader.close();
        await consumer;
      }
      expect(move.to).not.toBe(before.port);
      expect((await topology.ownerOf(slot)).port).toBe(move.to);
      for (const id of published) expect(runs.get(id) ?? 0, id).toBeGreaterThanOrEqual(1);
      for (const [id, count] of runs) {
        expect(count, id).toBeLessThanOrEqual(1 + (unsettled.get(id) ?? 0));
        expect(published.has(id) || unconfirmed.has(id), id).toBe(true);
      }
      expect(await delivery.stats(orders, Date.now())).toMatchObject({ depth: 0, pending: 0 });
      for (const [key, count] of answers) expect(count, key).toBe(1);
      for (const key of requests) expect(await runtime.idempotency.getIdempotent('shop', key), key).toEqual({ state: 'completed', response: answer(key).response });
      console.info(
        `slot ${slot} moved ${before.port} -> ${move.to} with ${move.keys} keys in ${moveMs} ms; published ${published.size}, unconfirmed ${unconfirmed.size}, runs ${sum(runs)} of ${runs.size} messages, failed acks ${sum(unsettled)}, requests ${requests.size}, failed calls ${failures}`,
      );
      expect(move.keys).toBeGreaterThanOrEqual(3);
    } finally {
      producing = false;
      consuming = false;
      await runtime.deleteAllKeys().catch(() => {});
      await runtime.close();
      await delivery.close();
    }
  }, 180_000);
});
