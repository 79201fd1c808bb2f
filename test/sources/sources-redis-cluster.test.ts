/**
 * The delivery sources suite through `uhlp dev` on a Redis Cluster (three
 * masters, three replicas: test/helpers/redis-cluster-topology.ts), reached with
 * `--state redis+cluster://`: HTTP, queue, cron, callback and trigger traffic of
 * one core whose state is spread over the masters. Needs redis-server and
 * redis-cli; fails, never skips, without them.
 */
import { afterAll, beforeAll } from 'vitest';
import { describeSources } from '../helpers/sources-suite.js';
import { RedisClusterTopology } from '../helpers/redis-cluster-topology.js';

let topology: RedisClusterTopology | undefined;
// Filled before the suite's own beforeAll reads it: the cluster's ports are known once it runs.
const args: string[] = [];

beforeAll(async () => {
  topology = await RedisClusterTopology.start();
  args.push('--state', topology.url);
}, 90_000);

afterAll(async () => {
  await topology?.stop();
});

describeSources('Redis Cluster (--state redis+cluster://)', { args, env: {} });
