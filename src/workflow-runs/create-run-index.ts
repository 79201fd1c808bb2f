/**
 * Picks the run index beside the runtime state: in memory with `memory`
 * state, on the same Redis (under the same key prefix) with a Redis URL (`redis://`, `redis+sentinel://`),
 * connected before the core takes its first request.
 */
import type { Logger } from '../logger.js';
import { isRedisUrl } from '../state/redis-url.js';
import type { RedisObserver } from '../state/redis-observer.js';
import { MemoryRunIndex } from './memory-run-index.js';
import { RedisRunIndex } from './redis-run-index.js';
import type { RunIndex } from './run-index.js';

export interface CreateRunIndexOptions {
  /** `memory`, or the Redis URL. */
  readonly state: string;
  readonly keyPrefix?: string;
  /** How long a run is listed after its last change, ms (the run records' TTL). */
  readonly ttlMs: number;
  readonly logger: Logger;
  /** Told each command's time and failure, reconnects and failovers (state/redis-observer.ts). @defaultValue none */
  readonly observer?: RedisObserver;
}

export async function createRunIndex(options: CreateRunIndexOptions): Promise<RunIndex> {
  if (isRedisUrl(options.state)) {
    return RedisRunIndex.connect({ url: options.state, ttlMs: options.ttlMs, logger: options.logger, ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix } : {}),
      ...(options.observer !== undefined ? { observer: options.observer } : {}),
    });
  }
  return new MemoryRunIndex({ ttlMs: options.ttlMs });
}
