/**
 * What a core sees of its Redis connections, for its metrics: each command's
 * time and failures, connections made again after a drop, and failovers (the
 * connection came back to another address: the master the sentinels name
 * moved, or the node's name resolved elsewhere).
 *
 * Every command of an ioredis client, pipelines and Lua scripts included, goes
 * through `sendCommand`: wrapping it once per client sees them all without a
 * change to the stores.
 */
import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from './redis-connection.js';

/** The core's Redis clients, a bounded label. */
export type RedisClientName = 'runtime' | 'delivery' | 'delivery-reader' | 'run-index';

export const REDIS_CLIENT_NAMES: readonly RedisClientName[] = ['runtime', 'delivery', 'delivery-reader', 'run-index'];

/**
 * Why a command failed: `reply` (Redis refused it: a bug of ours), `unavailable` (a reply that says
 * Redis cannot serve now: READONLY, LOADING, NOREPLICAS…), `timeout` (no answer within the command
 * timeout), `connection` (no connection to send it on, or it dropped in flight).
 */
export type RedisCommandFailure = 'reply' | 'unavailable' | 'timeout' | 'connection';

export const REDIS_COMMAND_FAILURES: readonly RedisCommandFailure[] = ['reply', 'unavailable', 'timeout', 'connection'];

export interface RedisObserver {
  /** A command answered after `seconds` (not observed for blocking reads, whose time is the wait). */
  commandAnswered(client: RedisClientName, seconds: number): void;
  commandFailed(client: RedisClientName, failure: RedisCommandFailure): void;
  /** The connection is ready again after it was ready before. */
  reconnected(client: RedisClientName): void;
  /** Ready again at another address than before. */
  failedOver(client: RedisClientName): void;
}

export interface ObserveOptions {
  /** Time each command (off for a connection that blocks on reads). @defaultValue true */
  readonly timeCommands?: boolean;
}

/** Reply errors that mean "Redis cannot serve now" (as redis-calls.ts treats them). */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;

export function commandFailure(error: unknown): RedisCommandFailure {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof Error && error.name === 'ReplyError') return UNAVAILABLE_REPLIES.test(message) ? 'unavailable' : 'reply';
  return /timed out/i.test(message) ? 'timeout' : 'connection';
}

interface SentCommand {
  readonly name: string;
  readonly promise: Promise<unknown>;
}

/** Reports what `redis` does to `observer` under `client`. */
export function observeRedisClient(redis: RedisClient, client: RedisClientName, observer: RedisObserver, options: ObserveOptions = {}): void {
  const timeCommands = options.timeCommands ?? true;
  const send = redis.sendCommand.bind(redis) as (command: SentCommand, ...rest: unknown[]) => unknown;
  (redis as unknown as { sendCommand: (command: SentCommand, ...rest: unknown[]) => unknown }).sendCommand = (command, ...rest) => {
    const started = timeCommands ? performance.now() : 0;
    const result = send(command, ...rest);
    command.promise.then(
      () => {
        if (timeCommands) observer.commandAnswered(client, (performance.now() - started) / 1000);
      },
      (error: unknown) => {
        // ioredis sends a script by its SHA first and loads it on NOSCRIPT: not a failure anyone sees.
        if (command.name === 'evalsha' && error instanceof Error && error.message.startsWith('NOSCRIPT')) return;
        // Nor is the CLIENT SETINFO ioredis sends on each connect, which Redis before 7.2 refuses and ioredis ignores.
        if (command.name === 'client') return;
        // A MULTI whose queued commands were refused (READONLY in a failover) ends in EXECABORT: those were counted.
        if (command.name === 'exec' && error instanceof Error && error.message.startsWith('EXECABORT')) return;
        observer.commandFailed(client, commandFailure(error));
      },
    );
    return result;
  };
  // A Cluster client is many connections, one per node, each at a fixed address: a node's reconnect is
  // seen, a replica promoted in a failover is a new node of the routing table, not a changed address.
  if (redis instanceof Cluster) redis.on('+node', (node: Redis) => watchConnection(node, client, observer, false));
  else watchConnection(redis, client, observer, true);
}

/** Counts the connection's reconnects and, when `followsMaster` (a Sentinel client), its moves to another address. */
function watchConnection(redis: Redis, client: RedisClientName, observer: RedisObserver, followsMaster: boolean): void {
  let address: string | undefined;
  redis.on('ready', () => {
    const stream = (redis as unknown as { stream?: { remoteAddress?: string; remotePort?: number } }).stream;
    const now = `${stream?.remoteAddress ?? '?'}:${stream?.remotePort ?? '?'}`;
    if (address !== undefined) {
      observer.reconnected(client);
      if (followsMaster && now !== address) observer.failedOver(client);
    }
    address = now;
  });
}
