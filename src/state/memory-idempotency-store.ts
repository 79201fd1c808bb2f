/** Idempotency records in memory: an in-flight marker, then the stored answer, each with its TTL. */
import { ExpiringMap } from './expiring-map.js';
import type { BeginIdempotentOptions, IdempotencyBegin, IdempotencyRecord, IdempotencyStore, IdempotentClaim, StoredResponse } from './idempotency-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { RuntimeKeys } from './runtime-keys.js';

type IdempotencyEntry = { state: 'in-flight'; fingerprint?: string } | { state: 'completed'; fingerprint?: string; response: StoredResponse };

export class MemoryIdempotencyStore implements IdempotencyStore, SweptStore {
  private readonly records: ExpiringMap<IdempotencyEntry>;
  // Tuples become keys through the same builder Redis uses, so both agree on identity.
  private readonly keys = new RuntimeKeys('');

  constructor(private readonly context: MemoryContext) {
    this.records = new ExpiringMap(context.now);
  }

  async beginIdempotent(appId: string, key: string, options: BeginIdempotentOptions): Promise<IdempotencyBegin> {
    this.context.assertOpen();
    const id = this.keys.idempotency(appId, key);
    const entry = this.records.live(id);
    if (!entry) {
      const value: IdempotencyEntry = { state: 'in-flight' };
      if (options.fingerprint !== undefined) value.fingerprint = options.fingerprint;
      this.records.set(id, value, this.context.now() + options.inFlightTtlMs);
      return 'new';
    }
    const stored = entry.value.fingerprint;
    if (stored !== undefined && options.fingerprint !== undefined && stored !== options.fingerprint) return { state: 'key-reused' };
    if (entry.value.state === 'completed') return { state: 'completed', response: structuredClone(entry.value.response) };
    return { state: 'in-flight' };
  }

  async beginIdempotentMany(appId: string, claims: readonly IdempotentClaim[]): Promise<IdempotencyBegin[]> {
    const begun: IdempotencyBegin[] = [];
    for (const claim of claims) begun.push(await this.beginIdempotent(appId, claim.key, claim));
    return begun;
  }

  async completeIdempotent(appId: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    this.context.assertOpen();
    const id = this.keys.idempotency(appId, key);
    const fingerprint = this.records.live(id)?.value.fingerprint;
    const value: IdempotencyEntry = { state: 'completed', response: structuredClone(response) };
    if (fingerprint !== undefined) value.fingerprint = fingerprint;
    this.records.set(id, value, this.context.now() + ttlMs);
  }

  async abandonIdempotent(appId: string, key: string): Promise<void> {
    this.context.assertOpen();
    const id = this.keys.idempotency(appId, key);
    if (this.records.live(id)?.value.state === 'in-flight') this.records.delete(id);
  }

  async getIdempotent(appId: string, key: string): Promise<IdempotencyRecord | undefined> {
    this.context.assertOpen();
    const entry = this.records.live(this.keys.idempotency(appId, key));
    if (!entry) return undefined;
    return entry.value.state === 'completed' ? { state: 'completed', response: structuredClone(entry.value.response) } : { state: 'in-flight' };
  }

  sweep(): void {
    this.records.sweep();
  }
}
