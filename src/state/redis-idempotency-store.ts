/**
 * Idempotency records on Redis: one hash per (app, key) holding its state, the
 * request's fingerprint and the stored answer (idempotency-begin-1,
 * idempotency-complete-1, idempotency-abandon-1; idempotency-begin-many-n claims a
 * delivery read's records in one step).
 */
import type { BeginIdempotentOptions, IdempotencyBegin, IdempotencyRecord, IdempotencyStore, IdempotentClaim, StoredResponse } from './idempotency-store.js';
import type { RedisStoreClient } from './redis-calls.js';
import { isCluster } from './redis-connection.js';
import { hashTag } from './runtime-keys.js';

export class RedisIdempotencyStore implements IdempotencyStore {
  constructor(private readonly client: RedisStoreClient) {}

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    return toBegin((await this.client.kept(() => this.client.script('idempotencyBegin', [this.client.keys.idempotency(appId, key)], [options.fingerprint ?? '', options.inFlightTtlMs]))) as string[]);
  }

  async beginIdempotentMany(appId: string, claims: readonly IdempotentClaim[]): Promise<IdempotencyBegin[]> {
    if (claims.length === 0) return [];
    const keys = claims.map((claim) => this.client.keys.idempotency(appId, claim.key));
    // One script per slot: a delivery read's records share their route's (runtime-keys.ts), so that is one call; on a
    // Cluster, keys of other slots (Idempotency-Keys claimed together) go in calls of their own. Each claim stands alone.
    const groups = new Map<string, number[]>();
    keys.forEach((key, i) => {
      const group = isCluster(this.client.redis) ? hashTag(key) : '';
      groups.set(group, [...(groups.get(group) ?? []), i]);
    });
    const begun: IdempotencyBegin[] = new Array<IdempotencyBegin>(claims.length);
    await this.client.kept(() =>
      Promise.all(
        [...groups.values()].map(async (indexes) => {
          const args = indexes.flatMap((i) => [claims[i]!.fingerprint ?? '', claims[i]!.inFlightTtlMs]);
          const replies = (await this.client.script('idempotencyBeginMany', indexes.map((i) => keys[i]!), args)) as string[][];
          indexes.forEach((index, j) => (begun[index] = toBegin(replies[j]!)));
        }),
      ),
    );
    return begun;
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    await this.client.kept(() => this.client.script('idempotencyComplete', [this.client.keys.idempotency(appId, key)], [JSON.stringify(response), ttlMs]));
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

/** One claim's reply of idempotency-begin-1 or idempotency-begin-many-n. */
function toBegin(reply: string[]): IdempotencyBegin {
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
