/**
 * The suite every RuntimeStore passes: each concern's own suite against that
 * concern of the store (so each runs against memory and against Redis), and
 * what the store answers as a whole. `makeStore` gives a fresh, empty store per
 * test (a unique key prefix for Redis) and a cleanup.
 */
import { describe, expect } from 'vitest';
import type { RuntimeStore } from '../../src/state/runtime-store.js';
import { describeFlowStore } from './describe-flow-store.js';
import { describeIdempotencyStore } from './describe-idempotency-store.js';
import { describeKvStore } from './describe-kv-store.js';
import { describeLeaseStore } from './describe-lease-store.js';
import { describeLlmStore } from './describe-llm-store.js';
import { describeOracleStore } from './describe-oracle-store.js';
import { describeRateLimitStore } from './describe-rate-limit-store.js';
import { describeRunStore } from './describe-run-store.js';
import { describeSessionStore } from './describe-session-store.js';
import { concernOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeRuntimeStore(name: string, makeStore: MakeStore<RuntimeStore>): void {
  describe(`RuntimeStore contract: ${name}`, () => {
    describeSessionStore(name, concernOf(makeStore, (store) => store.sessions));
    describeKvStore(name, concernOf(makeStore, (store) => store.kv));
    describeLeaseStore(name, concernOf(makeStore, (store) => store.leases));
    describeIdempotencyStore(name, concernOf(makeStore, (store) => store.idempotency));
    describeRateLimitStore(name, concernOf(makeStore, (store) => store.rateLimits));
    describeOracleStore(name, concernOf(makeStore, (store) => store.oracle));
    describeLlmStore(name, concernOf(makeStore, (store) => store.llm));
    describeRunStore(name, concernOf(makeStore, (store) => store.runs));
    describeFlowStore(name, concernOf(makeStore, (store) => store.flows));

    storeTest(makeStore)('answers ping', async ({ store }) => {
      await expect(store.ping()).resolves.toBeUndefined();
    });
  });
}
