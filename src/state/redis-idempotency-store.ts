/**
 * Idempotency records on Redis: one hash per (app, key) holding its state, the
 * request's fingerprint and the stored answer (idempotency-begin-1,
 * idempotency-complete-1, idempotency-abandon-1).
 */
import type { BeginIdempotentOptions, IdempotencyBegin, IdempotencyRecord, IdempotencyStore, StoredResponse } from './idempotency-store.js';
import type { RedisStoreClient } from './redis-calls.js';

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(private readonly client: RedisStoreClient) {}

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    const reply = (await this.client.script('idempotencyBegin', [this.client.keys.idempotency(appId, key)], [options.fingerprint ?? '', options.inFlightTtlMs])) as string[];
    switch (reply[0]) {
      case 'new':
        return 'new';
      case 'completed':
        return { state: 'completed', response: JSON.parse(reply[1] ?? 'null') as StoredResponse };
      case 'key-reused':
        return { state: 'key-reused' };
      default:
        return { state: 'in-flight' };
    }
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    await this.client.script('idempotencyComplete', [this.client.keys.idempotency(appId, key)], [JSON.stringify(response), ttlMs]);
  }

  async abandonIdempotent(appId: string, key: string): Promise<void> {
    await this.client.script('idempotencyAbandon', [this.client.keys.idempotency(appId, key)], []);
  }

  async getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined> {
    const [state, response] = await this.client.call(() => this.client.redis.hmget(this.client.keys.idempotency(appId, key), 'state', 'response'));
    if (state === 'completed') return { state: 'completed', response: JSON.parse(response ?? 'null') as StoredResponse };
    if (state === 'in-flight') return { state: 'in-flight' };
    return undefined;
  }
}
