/**
 * The one place a Redis client of the core is made, from the state URL
 * (redis-url.ts): a node, the master that the sentinels name, or a Redis
 * Cluster.
 *
 * The caller's options (no offline queue, timeouts, reconnect backoff) apply to
 * the master connection either way; the sentinel connection gets its own
 * backoff that never gives up, as the master connection's does. A Cluster
 * client applies them to each node's connection and keeps the same promise:
 * a command whose connection dropped is never resent (it may have applied),
 * while one a node refused without applying it (MOVED, ASK, TRYAGAIN during a
 * slot migration, CLUSTERDOWN) is sent again, a bounded number of times.
 */
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { backoffDelay } from '../shared/backoff.js';
import { nextEvent, withDeadline } from '../shared/deadline.js';
import { UhlpError } from '../shared/errors.js';
import { parseRedisUrl, type RedisTarget } from './redis-url.js';
import { isSentinelClient, watchSentinelSwitches } from './sentinel-switch-watch.js';

/** A client of the runtime state: one node (directly or through Sentinel) or a Cluster. Both speak the same commands. */
export type RedisClient = Redis | Cluster;

/** Redirections (MOVED, ASK) and refusals (TRYAGAIN, CLUSTERDOWN) one command may see before it fails. */
export const CLUSTER_MAX_REDIRECTIONS = 16;

/** Wait before resending a command a node answered TRYAGAIN (its keys half moved) or CLUSTERDOWN, ms. */
export const CLUSTER_RETRY_DELAY_MS = 100;

/**
 * A Redis client for the state URL, connecting to the node, to the master the
 * sentinels name, or to the Cluster. `options` are the caller's (lazyConnect,
 * timeouts, retryStrategy…).
 */
export function createRedisClient(url: string, options: RedisOptions): RedisClient {
  const target = parseRedisUrl(url);
  if (target.kind === 'node') return new Redis(target.url, options);
  if (target.kind === 'cluster') {
    const cluster = new Cluster(target.nodes.map(({ host, port }) => ({ host, port })), clusterOptions(target, options));
    // Without an offline queue, ioredis refuses a command for a node whose connection is still being made ("Connection
    // is closed"): connect each node as soon as the slot map names it, not at its first command.
    cluster.on('+node', (node: Redis) => {
      if (node.status === 'wait') node.connect().catch(() => {});
    });
    return cluster;
  }
  const client = new Redis({ ...options, ...sentinelOptions(target) });
  watchSentinelSwitches(client);
  return client;
}

/**
 * Resolves once `client` serves commands: ready (connected, data loaded) and, on
 * a Cluster, connected to every master, since a command for a master whose
 * connection is still being made fails at once without an offline queue.
 * UHLP_STATE_UNAVAILABLE after `timeoutMs`, naming `what`.
 */
export async function waitUntilServing(client: RedisClient, timeoutMs: number, what = 'Redis'): Promise<void> {
  const timeout = (): UhlpError => new UhlpError('UHLP_STATE_UNAVAILABLE', `${what} did not become ready within ${timeoutMs} ms`);
  const started = Date.now();
  // 'end': the client was closed for good, nothing to wait for.
  if (client.status !== 'ready') await withDeadline((signal) => Promise.race([nextEvent(client, 'ready', signal), nextEvent(client, 'end', signal)]), timeoutMs, timeout);
  if (!isCluster(client)) return;
  for (;;) {
    if (client.status === 'end') throw timeout();
    const masters = client.nodes('master');
    if (masters.length > 0 && masters.every((node) => node.status === 'ready')) return;
    if (Date.now() - started > timeoutMs) throw timeout();
    for (const node of masters) if (node.status === 'wait') node.connect().catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Whether `client` talks to a Redis Cluster (SCAN, DEL of many keys and pub/sub need each node then). */
export function isCluster(client: RedisClient): client is Cluster {
  return client instanceof Cluster;
}

/**
 * A second client on the same target with `options` added (a pub/sub
 * subscriber). On a Cluster, classic pub/sub reaches every node, so the
 * subscriber may listen on any of them; ioredis picks one and moves when it goes.
 */
export function duplicateClient(client: RedisClient, options: Pick<RedisOptions, 'autoResubscribe' | 'connectionName'>): RedisClient {
  if (!isCluster(client)) {
    const duplicate = client.duplicate(options);
    // The copy has the sentinels in its options, not the watch that moves it on a failover.
    if (isSentinelClient(duplicate)) watchSentinelSwitches(duplicate);
    return duplicate;
  }
  return client.duplicate(undefined, { redisOptions: { ...client.options.redisOptions, ...options } });
}

/** The ioredis options of a Cluster client, from the target and the caller's node options. */
export function clusterOptions(target: Extract<RedisTarget, { kind: 'cluster' }>, options: RedisOptions): ClusterOptions {
  const { lazyConnect, enableOfflineQueue, retryStrategy, ...nodeOptions } = options;
  return {
    ...(lazyConnect !== undefined ? { lazyConnect } : {}),
    ...(enableOfflineQueue !== undefined ? { enableOfflineQueue } : {}),
    // The whole cluster unreachable: try again, capped, forever (as the node client's retryStrategy does).
    clusterRetryStrategy: retryStrategy ?? ((attempt: number) => backoffDelay(attempt - 1, { initialMs: 100, maxMs: 2000 })),
    redisOptions: {
      ...nodeOptions,
      ...(target.username !== undefined ? { username: target.username } : {}),
      ...(target.password !== undefined ? { password: target.password } : {}),
      ...(target.tls ? { tls: tlsOptions(target) } : {}),
    },
    // Writes go to masters, and so do reads: a replica may lag behind a write the core just made.
    scaleReads: 'master',
    maxRedirections: CLUSTER_MAX_REDIRECTIONS,
    retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
    // A command whose connection closed may have been applied: fail it (UHLP_STATE_UNAVAILABLE) rather than resend it.
    retryDelayOnFailover: 0,
    slotsRefreshTimeout: 2000,
    // With TLS, a node's certificate names its host, not the IP the cluster announces: resolve names to themselves.
    ...(target.tls ? { dnsLookup: (address: string, callback: (error: null, address: string) => void) => callback(null, address) } : {}),
  };
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
    // TLS to the sentinels, and to the master and replicas they name (ioredis uses `tls` for those only with enableTLSForSentinelMode).
    ...(target.tls ? { sentinelTLS: tlsOptions(target), tls: tlsOptions(target), enableTLSForSentinelMode: true } : {}),
    // Learn sentinels added later from the ones configured.
    updateSentinels: true,
    // +switch-master is heard by our own watch (sentinel-switch-watch.ts): ioredis's detector can end the client for good.
    failoverDetector: false,
    // A demoted master answers writes with READONLY until the sentinels have told clients to move:
    // reconnect (asking the sentinels again) and fail that command rather than resend it.
    reconnectOnError: (error: Error) => error.message.startsWith('READONLY'),
  };
}

/**
 * The TLS options of a target: the server name checked on every certificate
 * when it is not the host dialled, and the CAs from `caFile` instead of the
 * system's. Read at each client's creation, so a CA rotated in its file (a
 * Secret remounted) is used from the next client on.
 */
function tlsOptions(target: { readonly servername?: string; readonly caFile?: string }): ConnectionOptions {
  return {
    ...(target.servername !== undefined ? { servername: target.servername } : {}),
    ...(target.caFile !== undefined ? { ca: readFileSync(target.caFile) } : {}),
  };
}
