/**
 * A map whose entries expire at a time of the memory store's clock, as Redis
 * keys with a TTL do: an expired entry reads as absent (and is dropped then),
 * and `sweep` drops the ones nobody reads again.
 */

export interface Expiring<T> {
  value: T;
  /** Epoch ms; `Infinity` for no expiry. */
  expiresAt: number;
}

export class ExpiringMap<T> {
  private readonly entries = new Map<string, Expiring<T>>();

  constructor(private readonly now: () => number) {}

  /** The entry when present and not expired; drops it when expired. */
  live(key: string): Expiring<T> | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry;
  }

  set(key: string, value: T, expiresAt: number): void {
    this.entries.set(key, { value, expiresAt });
  }

  delete(key: string): boolean {
    return this.entries.delete(key);
  }

  /** Every key, expired or not, in insertion order; read each through `live`. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  sweep(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }
}
