/**
 * Picks the delivery store for `--state`, as createRuntimeStore picks the
 * runtime store: in this process for `memory`, Redis Streams for a Redis URL.
 */
import type { DeliveryStore } from './delivery-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import { MemoryDeliveryStore } from './memory-delivery-store.js';
import { RedisDeliveryStore } from './redis-delivery-store.js';
import type { ReplicaAcks } from './replica-acks.js';
import type { RedisObserver } from './redis-observer.js';

export interface CreateDeliveryStoreOptions {
  /** `memory`, or the Redis URL. @defaultValue `memory` */
  readonly state?: string;
  /** Put in front of every key. @defaultValue `uhlp:` */
  readonly keyPrefix?: string;
  readonly onConnectionError?: (error: Error) => void;
  /** Replicas to wait for after the writes behind the delivery guarantees (replica-acks.ts). @defaultValue none */
  readonly replicaAcks?: ReplicaAcks;
  /** Told each command's time and failure, reconnects and failovers (redis-observer.ts). @defaultValue none */
  readonly observer?: RedisObserver;
  /**
   * The runtime store's once-only records, where a memory store keeps the answers
   * settled with their acknowledgement (a Redis store completes them in the same
   * script, under the same `keyPrefix`). @defaultValue none
   */
  readonly idempotency?: Pick<IdempotencyStore, 'completeIdempotent'>;
}

export async function createDeliveryStore(options: CreateDeliveryStoreOptions = {}): Promise<DeliveryStore> {
  const { state = 'memory' } = options;
  if (state === 'memory') return new MemoryDeliveryStore(options.idempotency !== undefined ? { idempotency: options.idempotency } : {});
  return RedisDeliveryStore.connect({
    url: state,
    ...(options.keyPrefix !== undefined ? { keyPrefix: options.keyPrefix } : {}),
    ...(options.onConnectionError !== undefined ? { onConnectionError: options.onConnectionError } : {}),
    ...(options.replicaAcks !== undefined ? { replicaAcks: options.replicaAcks } : {}),
    ...(options.observer !== undefined ? { observer: options.observer } : {}),
  });
}
