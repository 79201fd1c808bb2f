/** Leases on Redis: one string key per resource holding its owner, with the lease's TTL (lease-acquire-1, lease-renew-1, lease-release-1). */
import type { Lease, LeaseStore } from './lease-store.js';
import type { RedisStoreClient } from './redis-calls.js';

export class RedisLeaseStore implements LeaseStore {
  constructor(private readonly client: RedisStoreClient) {}

  async acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    const now = Date.now();
    const taken = await this.client.kept(() => this.client.script('leaseAcquire', [this.client.keys.lease(resource)], [owner, ttlMs]));
    return taken === 1 ? { resource, owner, expiresAt: now + ttlMs } : undefined;
  }

  async renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.client.script('leaseRenew', [this.client.keys.lease(resource)], [owner, ttlMs])) === 1;
  }

  async releaseLease(resource: string, owner: string): Promise<boolean> {
    return (await this.client.script('leaseRelease', [this.client.keys.lease(resource)], [owner])) === 1;
  }

  async getLease(resource: string): Promise<Lease | undefined> {
    const key = this.client.keys.lease(resource);
    const now = Date.now();
    const replies = await this.client.call(() => this.client.redis.multi().get(key).pttl(key).exec());
    const owner = replies?.[0]?.[1] as string | null | undefined;
    const pttl = replies?.[1]?.[1] as number | undefined;
    if (!owner || pttl === undefined || pttl < 0) return undefined;
    return { resource, owner, expiresAt: now + pttl };
  }
}
