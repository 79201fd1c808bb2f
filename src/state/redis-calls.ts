/**
 * How the Redis stores call Redis: a failure becomes the core's error, so that a
 * command Redis refused (a bug of ours) is a 500 and an outage is a 503 that
 * callers and /readyz can tell apart; Lua scripts run by the name they were
 * loaded under (lua-scripts.ts).
 */
import { isUhlpError, UhlpError } from '../shared/errors.js';
import { loadLuaScripts } from './lua-scripts.js';
import { isCluster, type RedisClient } from './redis-connection.js';
import { awaitReplicas, type ReplicaAcks } from './replica-acks.js';
import type { RuntimeKeys } from './runtime-keys.js';

type ScriptRunner = (...args: (string | number)[]) => Promise<unknown>;

/** Reply errors that mean "Redis is there but cannot serve now", not a bug of ours. */
const UNAVAILABLE_REPLIES = /^(LOADING|BUSY|MASTERDOWN|READONLY|TRYAGAIN|CLUSTERDOWN|NOREPLICAS)\b/;

/** The error a Redis failure is to the core; `what` names the commands in the message (`a delivery command`). */
export function toStateError(redis: RedisClient, error: unknown, what: string): UhlpError {
  if (isUhlpError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof Error && error.name === 'ReplyError' && !UNAVAILABLE_REPLIES.test(message)) {
    return new UhlpError('UHLP_INTERNAL', `Redis refused ${what}: ${message}`, undefined, { cause: error });
  }
  return new UhlpError('UHLP_STATE_UNAVAILABLE', `the runtime state store (Redis) is unavailable: ${message}`, { status: redis.status }, { cause: error });
}

/** Runs `operation`, turning its failure into the core's error. */
export async function callRedis<T>(redis: RedisClient, what: string, operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    throw toStateError(redis, error, what);
  }
}

/** Runs the loaded Lua script `name`; a `-n` script (lua-scripts.ts) gets the key count first. */
export function runScript(redis: RedisClient, what: string, name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
  const run = (redis as unknown as Record<string, ScriptRunner>)[name];
  if (!run) throw new UhlpError('UHLP_INTERNAL', `Redis script ${name} is not loaded`);
  if (loadLuaScripts().get(name)?.numberOfKeys === undefined) return callRedis(redis, what, () => run.call(redis, keys.length, ...keys, ...args));
  return callRedis(redis, what, () => run.call(redis, ...keys, ...args));
}

/** What the runtime stores' commands are called in error messages. */
const RUNTIME_STATE_COMMAND = 'a runtime-state command';

/**
 * The one connection every Redis store of a RedisRuntimeStore shares, with the
 * key builder they all use and the calls above bound to it.
 */
export class RedisStoreClient {
  constructor(
    readonly redis: RedisClient,
    readonly keys: RuntimeKeys,
    /** Replicas to wait for after a kept write (replica-acks.ts). @defaultValue none */
    private readonly replicaAcks?: ReplicaAcks,
  ) {}

  /** Runs a write behind a guarantee, then waits for the replicas `replicaAcks` asks for. */
  async kept<T>(operation: () => Promise<T>): Promise<T> {
    const result = await operation();
    await awaitReplicas(this.replicaAcks, RUNTIME_STATE_COMMAND, (replicas, timeoutMs) => this.call(() => this.redis.wait(replicas, timeoutMs)));
    return result;
  }

  call<T>(operation: () => Promise<T>): Promise<T> {
    return callRedis(this.redis, RUNTIME_STATE_COMMAND, operation);
  }

  script(name: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    return runScript(this.redis, RUNTIME_STATE_COMMAND, name, keys, args);
  }

  /** The core's error for a failure seen outside `call` (a failed command inside a MULTI's replies). */
  error(error: unknown): UhlpError {
    return toStateError(this.redis, error, RUNTIME_STATE_COMMAND);
  }

  /** Every key matching a SCAN MATCH pattern: O(keys in the database), for kv scans and cleanup. */
  async scanAll(match: string): Promise<string[]> {
    const found = new Set<string>();
    // A Cluster's keys are spread over its masters: each is scanned in turn.
    const nodes = isCluster(this.redis) ? this.redis.nodes('master') : [this.redis];
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, batch] = await this.call(() => node.scan(cursor, 'MATCH', match, 'COUNT', 1000));
        cursor = next;
        for (const key of batch) found.add(key);
      } while (cursor !== '0');
    }
    return [...found];
  }

  /** The values of `keys` in order (null when missing): one MGET on a single Redis, a GET each on a Cluster, where they lie in many slots. */
  async getMany(keys: readonly string[]): Promise<Array<string | null>> {
    if (!isCluster(this.redis)) return this.call(() => this.redis.mget(...keys));
    return Promise.all(keys.map((key) => this.call(() => this.redis.get(key))));
  }

  /** Unlinks `keys`, in as many commands as their slots need (one on a single Redis). */
  async unlinkAll(keys: readonly string[]): Promise<number> {
    let deleted = 0;
    if (!isCluster(this.redis)) {
      for (let i = 0; i < keys.length; i += 500) {
        const slice = keys.slice(i, i + 500);
        deleted += await this.call(() => this.redis.unlink(...slice));
      }
      return deleted;
    }
    for (let i = 0; i < keys.length; i += 100) {
      const counts = await Promise.all(keys.slice(i, i + 100).map((key) => this.call(() => this.redis.unlink(key))));
      deleted += counts.reduce((sum, count) => sum + count, 0);
    }
    return deleted;
  }
}
