/**
 * Three cores on Redis Sentinel (one master, two replicas, three sentinels)
 * through `SENTINEL FAILOVER`, a core killed mid-turn and the new master
 * killed, under HTTP, queue, cron and workflow load; the counts are checked
 * exactly (test/helpers/core-fleet-suite.ts). Both replicas acknowledge each
 * kept write (`UHLP_STATE_REPLICA_ACKS=2`), what a planned failover needs
 * (docs/runtime-state.md#sentinel); the killed master comes back as a replica,
 * as its pod would.
 */
import { Redis } from 'ioredis';
import { describeFleet } from '../helpers/core-fleet-suite.js';
import { RedisSentinelTopology, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel-topology.js';

describeFleet('Redis Sentinel', {
  async start() {
    const topology = await RedisSentinelTopology.start();
    return {
      url: topology.url,
      env: { UHLP_STATE_REPLICA_ACKS: '2' },
      client: () => {
        const client = new Redis({ sentinels: topology.sentinelPorts.map((port) => ({ host: '127.0.0.1', port })), name: SENTINEL_MASTER_NAME, maxRetriesPerRequest: 3 });
        client.on('error', () => {});
        return client;
      },
      stop: () => topology.stop(),
      topology,
    };
  },
  async chaos(chaos, fleet) {
    const topology = (fleet as unknown as { topology: RedisSentinelTopology }).topology;
    await chaos.sleep(2_000);
    let close = chaos.disrupt('SENTINEL FAILOVER');
    await topology.failover();
    await chaos.writable();
    close();
    await chaos.sleep(1_000);
    await chaos.killCore();
    await chaos.sleep(2_000);
    close = chaos.disrupt('master killed');
    const old = await topology.masterPort();
    await topology.killMaster();
    await topology.restartAsReplica(old);
    await chaos.writable();
    close();
  },
});
