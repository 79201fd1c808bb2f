/**
 * The runtime state of a core, one store per concern: sessions, kv, leases,
 * idempotency records, per-app rate limits, the optimization oracle's state,
 * the LLM layer's token counts and answer cache, workflow run records, flow
 * control's gates, and
 * cs-js functions. Each concern is an interface of its own with a memory
 * implementation (the embedded default, `MemoryRuntimeStore`) and a Redis one
 * (production, shared by every core replica, `RedisRuntimeStore`); both pass
 * one shared suite per concern (test/state/describe-*-store.ts). Callers are
 * handed the concern they use where the core is built (src/core/start-core.ts).
 *
 * Every method may reject with `UHLP_STATE_UNAVAILABLE` (503) when the backing
 * service is down, and with `UHLP_STATE_INPUT_INVALID` (400) for a bad argument,
 * refused by the one validating wrapper both implementations sit behind
 * (validating-stores.ts). Times are epoch milliseconds; TTLs are positive
 * integer milliseconds.
 */
import type { FunctionStore } from '../functions/function-store.js';
import type { FlowStore } from './flow-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { KvStore } from './kv-store.js';
import type { LeaseStore } from './lease-store.js';
import type { LlmStore } from './llm-store.js';
import type { OracleStore } from './oracle-store.js';
import type { RateLimitStore } from './rate-limit-store.js';
import type { RunStore } from './run-store.js';
import type { SessionStore } from './session-store.js';

/** The stores of every concern, as one implementation (memory or Redis) makes them. */
export interface RuntimeStores {
  readonly sessions: SessionStore;
  readonly kv: KvStore;
  readonly leases: LeaseStore;
  readonly idempotency: IdempotencyStore;
  readonly rateLimits: RateLimitStore;
  readonly oracle: OracleStore;
  readonly llm: LlmStore;
  readonly runs: RunStore;
  /** Flow control's gates: concurrency and throttle slots, waiting queues, debounce keys (flow-store.ts). */
  readonly flows: FlowStore;
  /** cs-js bundles, function versions, aliases and activation logs (src/functions/function-store.ts). */
  readonly functions: FunctionStore;
}

export interface RuntimeStore extends RuntimeStores {
  /** Which implementation, for logs and /readyz: `memory` or `redis`. */
  readonly kind: 'memory' | 'redis';
  /** Resolves when the store answers; rejects with `UHLP_STATE_UNAVAILABLE` otherwise. For /readyz. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
