/** Leases in memory: one owner per resource until release or expiry. */
import { ExpiringMap } from './expiring-map.js';
import type { Lease, LeaseStore } from './lease-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';

export class MemoryLeaseStore implements LeaseStore, SweptStore {
  private readonly leases: ExpiringMap<Lease>;

  constructor(private readonly context: MemoryContext) {
    this.leases = new ExpiringMap(context.now);
  }

  async acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined> {
    this.context.assertOpen();
    const held = this.leases.live(resource);
    if (held && held.value.owner !== owner) return undefined;
    const lease: Lease = { resource, owner, expiresAt: this.context.now() + ttlMs };
    this.leases.set(resource, lease, lease.expiresAt);
    return { ...lease };
  }

  async renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean> {
    this.context.assertOpen();
    const held = this.leases.live(resource);
    if (!held || held.value.owner !== owner) return false;
    held.value.expiresAt = this.context.now() + ttlMs;
    held.expiresAt = held.value.expiresAt;
    return true;
  }

  async releaseLease(resource: string, owner: string): Promise<boolean> {
    this.context.assertOpen();
    const held = this.leases.live(resource);
    if (!held || held.value.owner !== owner) return false;
    this.leases.delete(resource);
    return true;
  }

  async getLease(resource: string): Promise<Lease | undefined> {
    this.context.assertOpen();
    const held = this.leases.live(resource);
    return held ? { ...held.value } : undefined;
  }

  sweep(): void {
    this.leases.sweep();
  }
}
