/**
 * The core's Redis observer: what its Redis clients see (state/redis-observer.ts),
 * counted in the core's metrics. Every client and failure starts at zero, so that a
 * dashboard shows "no failover" as 0 rather than as no data.
 */
import type { Metrics } from '../metrics.js';
import { REDIS_CLIENT_NAMES, REDIS_COMMAND_FAILURES, type RedisClientName, type RedisObserver } from '../state/redis-observer.js';

export function redisMetricsObserver(metrics: Metrics): RedisObserver {
  for (const client of REDIS_CLIENT_NAMES) {
    metrics.redisReconnects.labels(client).inc(0);
    metrics.redisFailovers.labels(client).inc(0);
    for (const failure of REDIS_COMMAND_FAILURES) metrics.redisCommandErrors.labels(client, failure).inc(0);
  }
  // One resolved child per client: the histogram is observed on every command.
  const seconds = new Map(REDIS_CLIENT_NAMES.map((client) => [client, metrics.redisCommandSeconds.labels(client)] as const));
  return {
    commandAnswered: (client: RedisClientName, value: number) => seconds.get(client)!.observe(value),
    commandFailed: (client, failure) => metrics.redisCommandErrors.labels(client, failure).inc(),
    reconnected: (client) => metrics.redisReconnects.labels(client).inc(),
    failedOver: (client) => metrics.redisFailovers.labels(client).inc(),
  };
}
