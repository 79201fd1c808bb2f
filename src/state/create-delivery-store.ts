/**
 * Picks the delivery store for `--state`, as createRuntimeStore picks the
 * runtime store: in this process for `memory`, Redis Streams for a Redis URL.
 */
import type { DeliveryStore } from './delivery-store.js';
import { MemoryDeliveryStore } from './memory-delivery-store.js';
import { RedisDeliveryStore } from './redis-delivery-store.js';

export interface CreateDeliveryStoreOptions {
  /** `memory`, or the Redis URL. @defaultValue `memory` */
  readonly state?: string;
  /** Put in front of every key. @defaultValue `uhlp:` */
  readonly keyPrefix?: string;
  readonly onConnectionError?: (error: Error) => void;
}

export async function createDeliveryStore(options: CreateDeliveryStoreOptions = {}): Promise<DeliveryStore> {
  const { state = 'memory' } = options;
  if (state === 'memory') return new MemoryDeliveryStore();
  return RedisDeliveryStore.connect({
    url: state,
    ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix } : {}),
    ...(options.onConnectionError !== undefined ? { onConnectionError: options.onConnectionError } : {}),
  });
}
