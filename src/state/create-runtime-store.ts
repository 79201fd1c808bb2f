/**
 * Picks the runtime store for `--state`: `memory` (the embedded default) or a
 * `redis://` / `rediss://` / `redis+sentinel://` URL. With Redis, it waits for the first connection so
 * that a wrong URL fails at start-up, not at the first request.
 */
import { UhlpError } from '../shared/errors.js';
import { isRedisUrl } from './redis-url.js';
import { MemoryRuntimeStore } from './memory-runtime-store.js';
import { RedisRuntimeStore, type RedisRuntimeStoreOptions } from './redis-runtime-store.js';
import type { RuntimeStore } from './runtime-store.js';

export interface CreateRuntimeStoreOptions extends Omit<RedisRuntimeStoreOptions, 'url'> {
  /** `memory`, or the Redis URL. @defaultValue `memory` */
  state?: string;
  /** How long to wait for the first Redis connection. @defaultValue 5000 */
  connectWaitMs?: number;
}

export async function createRuntimeStore(options: CreateRuntimeStoreOptions = {}): Promise<RuntimeStore> {
  const { state = 'memory', connectWaitMs = 5000, ...redisOptions } = options;
  if (state === 'memory') return new MemoryRuntimeStore();
  if (isRedisUrl(state)) return RedisRuntimeStore.connect({ ...redisOptions, url: state, timeoutMs: connectWaitMs });
  throw new UhlpError('UHLP_CONFIG_INVALID', `--state must be "memory" or a redis://, rediss:// or redis+sentinel:// URL, got "${state}"`, { field: 'state' });
}
