/**
 * A core's Redis client follows a failover when asking the sentinels is slow
 * (cluster DNS, loaded sentinels): the client reaches the sentinels through
 * proxies that hold back each of their replies by 400 ms, and the master is
 * killed. While the client's reconnect loop is asking the sentinels (they still
 * name the dead master), `+switch-master` arrives; the client must not end for
 * good then, but be ready on the new master and take writes. Real redis-server
 * and sentinels (test/helpers/redis-sentinel-topology.ts); fails, never skips,
 * without them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, duplicateClient } from '../../src/state/redis-connection.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import type { Redis } from 'ioredis';
import { RedisSentinelTopology, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel-topology.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { SlowTcpProxy } from '../helpers/slow-tcp-proxy.js';
import { waitFor } from '../helpers/wait-for.js';

/** How long each sentinel reply is held back, ms. */
const SENTINEL_REPLY_DELAY_MS = 400;

/** From the new master being named to a write acknowledged by it, at most, ms. */
const READY_AFTER_SWITCH_MS = 10_000;

// A topology per describe: a failover leaves it without a replica to promote for a while.
let topology: RedisSentinelTopology;
const proxies: SlowTcpProxy[] = [];

async function startTopology(): Promise<void> {
  topology = await RedisSentinelTopology.start();
}

async function stopTopology(): Promise<void> {
  for (const proxy of proxies.splice(0)) await proxy.stop();
  await topology?.stop();
}

describe('a Sentinel client whose sentinels answer slowly', () => {
  beforeAll(async () => {
    await startTopology();
    for (const port of topology.sentinelPorts) proxies.push(await SlowTcpProxy.start(port, SENTINEL_REPLY_DELAY_MS));
  }, 60_000);
  afterAll(stopTopology);

  it('is ready on the new master after the master is killed, and takes writes', async () => {
    const keyPrefix = uniqueKeyPrefix('sentinel-slow');
    const hosts = proxies.map((proxy) => `127.0.0.1:${proxy.port}`).join(',');
    const store = await RedisRuntimeStore.connect({ url: `redis+sentinel://${hosts}/${SENTINEL_MASTER_NAME}`, keyPrefix, timeoutMs: 20_000 });
    try {
      await store.kv.kvSet('before', '1');
      const killed = Date.now();
      const master = await topology.killMaster();
      const named = Date.now();
      await waitFor(
        async () => {
          await store.kv.kvSet('after', String(master));
          return (await store.kv.kvGet('after')) === String(master);
        },
        { timeoutMs: READY_AFTER_SWITCH_MS, intervalMs: 100, what: 'a write acknowledged by the new master' },
      );
      const wrote = Date.now();
      const node = topology.client(master);
      try {
        await node.connect();
        expect(((await node.call('ROLE')) as string[])[0]).toBe('master');
        expect(await node.keys(`${keyPrefix}*`)).toHaveLength(2);
      } finally {
        node.disconnect();
      }
      console.log(`killed→named ${named - killed} ms, named→written ${wrote - named} ms`);
    } finally {
      await store.deleteAllKeys().catch(() => {});
      await store.close();
    }
  }, 90_000);
});

/** The connections the sentinels hold for switch watches (named `uhlp-switch-watch`), summed over the sentinels. */
async function watchConnections(): Promise<number> {
  let count = 0;
  for (const port of topology.sentinelPorts) {
    const sentinel = topology.client(port);
    try {
      await sentinel.connect();
      const list = (await sentinel.call('CLIENT', 'LIST')) as string;
      count += list.split('\n').filter((line) => / name=uhlp-switch-watch /.test(line)).length;
    } finally {
      sentinel.disconnect();
    }
  }
  return count;
}

describe('the switch watch of a Sentinel client', () => {
  beforeAll(startTopology, 60_000);
  afterAll(stopTopology);

  it('moves a ready client that sends nothing to the new master, a pub/sub copy too, and closes with them', async () => {
    const options = { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => 100 };
    const client = createRedisClient(topology.url, { ...options, connectionName: 'switch-test' }) as Redis;
    client.on('error', () => {});
    const copy = duplicateClient(client, { autoResubscribe: false, connectionName: 'switch-test-copy' }) as Redis;
    copy.on('error', () => {});
    try {
      await client.connect();
      await copy.connect();
      await copy.subscribe('uhlp-switch-test');
      // One subscriber per configured sentinel for each client.
      await waitFor(async () => (await watchConnections()) === 6, { timeoutMs: 5000, intervalMs: 100, what: 'six watch connections' });
      const master = await topology.failover();
      const named = Date.now();
      // No command is sent: only the watch can move the clients.
      await waitFor(
        async () => {
          const node = topology.client(master);
          try {
            await node.connect();
            const list = (await node.call('CLIENT', 'LIST')) as string;
            return / name=switch-test /.test(list) && / name=switch-test-copy /.test(list) && client.status === 'ready' && copy.status === 'ready';
          } finally {
            node.disconnect();
          }
        },
        { timeoutMs: 5000, intervalMs: 50, what: 'both clients on the new master' },
      );
      console.log(`named→both clients on the new master ${Date.now() - named} ms`);
      // The new master takes writes once a replica has caught up with it (min-replicas-to-write 1).
      await waitFor(async () => (await client.set('uhlp-switch-test', '1')) === 'OK', { timeoutMs: 15_000, intervalMs: 100, what: 'a write on the new master' });
    } finally {
      await client.quit().catch(() => {});
      copy.disconnect();
    }
    // QUIT answers before the socket closes: the client ends (and its watch with it) just after.
    await waitFor(() => client.status === 'end', { what: 'the client ended' });
    await waitFor(async () => (await watchConnections()) === 0, { timeoutMs: 5000, intervalMs: 100, what: 'no watch connection left' });
  }, 60_000);

  it('closes its watch when the client is closed between two reconnect attempts (no "end" then)', async () => {
    const client = createRedisClient(topology.url, { lazyConnect: true, retryStrategy: () => 60_000 }) as Redis;
    client.on('error', () => {});
    await client.connect();
    await waitFor(async () => (await watchConnections()) === 3, { timeoutMs: 5000, intervalMs: 100, what: 'three watch connections' });
    // Dropped from our side: the client now waits a minute before its next attempt.
    client.disconnect(true);
    await waitFor(() => client.status === 'reconnecting', { what: 'a reconnecting client' });
    client.disconnect();
    await waitFor(async () => (await watchConnections()) === 0, { timeoutMs: 5000, intervalMs: 100, what: 'no watch connection left' });
  }, 30_000);
});
