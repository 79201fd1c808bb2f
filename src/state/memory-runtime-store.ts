/**
 * The embedded runtime store: every concern's memory store, for `uhlp dev` and
 * single-replica cores. It behaves like the Redis store (the same suite per
 * concern), behind the same input checks (validating-stores.ts).
 */
import { UhlpError } from '../shared/errors.js';
import type { FunctionStore } from '../functions/function-store.js';
import { MemoryFunctionStore } from '../functions/memory-function-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { KvStore } from './kv-store.js';
import type { LeaseStore } from './lease-store.js';
import type { LlmStore } from './llm-store.js';
import type { MemoryContext, SweptStore } from './memory-context.js';
import { MemoryIdempotencyStore } from './memory-idempotency-store.js';
import { MemoryKvStore } from './memory-kv-store.js';
import { MemoryLeaseStore } from './memory-lease-store.js';
import { MemoryLlmStore } from './memory-llm-store.js';
import { MemoryOracleStore } from './memory-oracle-store.js';
import { MemoryRateLimitStore } from './memory-rate-limit-store.js';
import { MemoryRunStore } from './memory-run-store.js';
import { MemorySessionStore } from './memory-session-store.js';
import type { OracleStore } from './oracle-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { RunStore } from './run-store.js';
import type { RuntimeStore } from './runtime-store.js';
import type { SessionStore } from './session-store.js';
import { withInputChecks } from './validating-stores.js';

export interface MemoryRuntimeStoreOptions {
  /** Clock in epoch milliseconds; tests drive time with it. @defaultValue `Date.now` */
  now?: () => number;
  /** How often expired entries are swept out (they are also dropped when read). @defaultValue 60000 */
  sweepIntervalMs?: number;
}

export class MemoryRuntimeStore implements RuntimeStore {
  readonly kind = 'memory' as const;
  readonly sessions: SessionStore;
  readonly kv: KvStore;
  readonly leases: LeaseStore;
  readonly idempotency: IdempotencyStore;
  readonly rateLimits: RateLimitStore;
  readonly oracle: OracleStore;
  readonly llm: LlmStore;
  readonly runs: RunStore;
  readonly functions: FunctionStore;
  private readonly swept: readonly SweptStore[];
  private readonly sweeper: NodeJS.Timeout;
  private closed = false;

  constructor(options: MemoryRuntimeStoreOptions = {}) {
    const context: MemoryContext = { now: options.now ?? Date.now, assertOpen: () => this.assertOpen() };
    const stores = {
      sessions: new MemorySessionStore(context),
      kv: new MemoryKvStore(context),
      leases: new MemoryLeaseStore(context),
      idempotency: new MemoryIdempotencyStore(context),
      rateLimits: new MemoryRateLimitStore(context),
      oracle: new MemoryOracleStore(context),
      llm: new MemoryLlmStore(context),
      runs: new MemoryRunStore(context),
    };
    this.swept = Object.values(stores);
    const checked = withInputChecks({ ...stores, functions: new MemoryFunctionStore(context.now, context.assertOpen) });
    this.sessions = checked.sessions;
    this.kv = checked.kv;
    this.leases = checked.leases;
    this.idempotency = checked.idempotency;
    this.rateLimits = checked.rateLimits;
    this.oracle = checked.oracle;
    this.llm = checked.llm;
    this.runs = checked.runs;
    this.functions = checked.functions;
    this.sweeper = setInterval(() => this.sweep(), options.sweepIntervalMs ?? 60_000);
    this.sweeper.unref();
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.sweeper);
  }

  private assertOpen(): void {
    if (this.closed) throw new UhlpError('UHLP_STATE_UNAVAILABLE', 'the runtime store is closed');
  }

  private sweep(): void {
    for (const store of this.swept) store.sweep();
  }
}
