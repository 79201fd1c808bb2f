/**
 * The embedded runtime store: every concern's memory store, for `uhlp dev` and
 * single-replica cores. It behaves like the Redis store (the same suite per
 * concern), behind the same input checks (validating-stores.ts).
 */
import { UhlpError } from '../shared/errors.js';
import { MemoryFunctionStore } from '../functions/memory-function-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { MemoryIdempotencyStore } from './memory-idempotency-store.js';
import { MemoryFlowStore } from './memory-flow-store.js';
import { MemoryKvStore } from './memory-kv-store.js';
import { MemoryLeaseStore } from './memory-lease-store.js';
import { MemoryLlmStore } from './memory-llm-store.js';
import { MemoryOracleStore } from './memory-oracle-store.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import { MemoryRunStore } from './memory-run-store.js';
import { MemorySessionStore } from './memory-session-store.js';
import type { RuntimeStore } from './runtime-store.js';
import { CheckedStores } from './validating-stores.js';

export interface MemoryRuntimeStoreOptions {
  /** Clock in epoch milliseconds; tests drive time with it. @defaultValue `Date.now` */
  now?: () => number;
  /** How often expired entries are swept out (they are also dropped when read). @defaultValue 60000 */
  sweepIntervalMs?: number;
}

export class MemoryRuntimeStore extends CheckedStores implements RuntimeStore {
  readonly kind = 'memory' as const;
  private readonly lifecycle: { closed: boolean };
  private readonly assertOpen: () => void;
  private readonly swept: readonly SweptStore[];
  private readonly sweeper: NodeJS.Timeout;

  constructor(options: MemoryRuntimeStoreOptions = {}) {
    const now = options.now ?? Date.now;
    const lifecycle = { closed: false };
    const assertOpen = (): void => {
      if (lifecycle.closed) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'the runtime store is closed');
    };
    const context: MemoryContext = { now, assertOpen };
    const stores = {
      sessions: new MemorySessionStore(context),
      kv: new MemoryKvStore(context),
      leases: new MemoryLeaseStore(context),
      idempotency: new MemoryIdempotencyStore(context),
      rateLimits: new MemoryRateLimitStore(context),
      oracle: new MemoryOracleStore(context),
      llm: new MemoryLlmStore(context),
      runs: new MemoryRunStore(context),
      flows: new MemoryFlowStore(context),
    };
    super({ ...stores, functions: new MemoryFunctionStore(now, assertOpen) });
    this.lifecycle = lifecycle;
    this.assertOpen = assertOpen;
    this.swept = Object.values(stores);
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.lifecycle.closed = true;
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    for (const store of this.swept) store.sweep();
  }
}
