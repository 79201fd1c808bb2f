/**
 * Three cores on Redis Cluster (three masters, three replicas) through a
 * core killed mid-turn, a master killed (its replica promoted) and the slot
 * of the queue's keys moved to another master, under HTTP, queue, cron and
 * workflow load; the counts are checked exactly
 * (test/helpers/core-fleet-suite.ts).
 */
import { Cluster } from 'ioredis';
import { describeFleet, FLEET_PREFIX } from '../helpers/core-fleet-suite.js';
import { RedisClusterTopology } from '../helpers/redis-cluster-topology.js';

describeFleet('Redis Cluster', {
  async start() {
    const topology = await RedisClusterTopology.start();
    return {
      url: topology.url,
      env: {},
      client: () => {
        const client = new Cluster(topology.ports.map((port) => ({ host: '127.0.0.1', port })), { redisOptions: { maxRetriesPerRequest: 3 } });
        client.on('error', () => {});
        return client;
      },
      stop: () => topology.stop(),
      topology,
    };
  },
  async chaos(chaos, fleet) {
    const topology = (fleet as unknown as { topology: RedisClusterTopology }).topology;
    await chaos.sleep(2_000);
    await chaos.killCore();
    await chaos.sleep(2_000);
    // A master that does not serve the queue's slot dies; then the queue's slot moves while the load runs.
    const queueSlot = await topology.keySlot(`${FLEET_PREFIX}queue:fleet:jobs`);
    const queueOwner = await topology.ownerOf(queueSlot);
    const victim = (await topology.masters()).find((master) => master.id !== queueOwner.id)!;
    let close = chaos.disrupt(`master ${victim.port} killed`);
    await topology.killMaster(victim.port);
    await chaos.writable();
    close();
    await chaos.sleep(1_000);
    close = chaos.disrupt(`slot ${queueSlot} moved`);
    const moved = await topology.moveSlot(queueSlot, { batch: 5, pauseMs: 100 });
    close();
    console.info(`cluster: slot ${queueSlot} (the queue's) moved to ${moved.to} with ${moved.keys} keys`);
  },
});
