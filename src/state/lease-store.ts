/**
 * Leases: one owner at a time holds a named resource until it releases it or
 * stops renewing it (the oracle's generation, a workflow run's driver).
 */

export interface Lease {
  resource: string;
  owner: string;
  expiresAt: number;
}

export interface LeaseStore {
  /** Takes the lease when free or already held by `owner` (then it is renewed); undefined when held by another. */
  acquireLease(resource: string, owner: string, ttlMs: number): Promise<Lease | undefined>;
  /** Extends a lease `owner` holds; false when it expired or another owner holds it. */
  renewLease(resource: string, owner: string, ttlMs: number): Promise<boolean>;
  /** Drops a lease `owner` holds; false when it did not hold it. */
  releaseLease(resource: string, owner: string): Promise<boolean>;
  getLease(resource: string): Promise<Lease | undefined>;
}
