/**
 * The one place a Redis client of the core is made, from the state URL
 * (redis-url.ts): a node, or the master that the sentinels name.
 *
 * The caller's options (no offline queue, timeouts, reconnect backoff) apply to
 * the master connection either way; the sentinel connection gets its own
 * backoff that never gives up, as the master connection's does.
 */
import { Redis, type RedisOptions } from 'ioredis';
import { backoffDelay } from '../shared/backoff.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';

/**
 * A Redis client for the state URL, connecting to the node or to the master the
 * sentinels name. `options` are the caller's (lazyConnect, timeouts, retryStrategy…).
 */
export function createRedisClient(url: string, options: RedisOptions): Redis {
  const target = parseRedisUrl(url);
  if (target.kind === 'node') return new Redis(target.url, options);
  return new Redis({ ...options, ...sentinelOptions(target) });
}

/** The ioredis options that make a client follow the master of a Sentinel target. */
export function sentinelOptions(target: Extract<RedisTarget, { kind: 'sentinel' }>): RedisOptions {
  return {
    sentinels: target.sentinels.map(({ host, port }) => ({ host, port })),
    name: target.masterName,
    // Only the master takes writes; ioredis checks ROLE after connecting and asks the sentinels again if it is not.
    role: 'master',
    db: target.db,
    ...(target.username !== undefined ? { username: target.username } : {}),
    ...(target.password !== undefined ? { password: target.password } : {}),
    ...(target.sentinelUsername !== undefined ? { sentinelUsername: target.sentinelUsername } : {}),
    ...(target.sentinelPassword !== undefined ? { sentinelPassword: target.sentinelPassword } : {}),
    // A round through every sentinel failed: try again, capped, forever (null would end the client for good).
    sentinelRetryStrategy: (attempt: number) => backoffDelay(attempt - 1, { initialMs: 100, maxMs: 2000 }),
    sentinelCommandTimeout: 2000,
    // Learn sentinels added later from the ones configured.
    updateSentinels: true,
    // Hear +switch-master from the sentinels and reconnect at once, rather than at the next failed command.
    failoverDetector: true,
    // A demoted master answers writes with READONLY until the sentinels have told clients to move:
    // reconnect (asking the sentinels again) and fail that command rather than resend it.
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
  };
}
