/**
 * Redis Cluster runs a script or a MULTI only when every key it touches hashes
 * to one slot (CROSSSLOT otherwise). For each multi-key script and transaction
 * of the stores, the keys of a sample call, made by the one key builder, are
 * hashed here with Redis Cluster's own CRC16 slot function.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { loadLuaScripts } from './lua-scripts.js';
import { deliveryOnceKey, RuntimeKeys } from './runtime-keys.js';

// The slot function ioredis itself routes by (a dependency of ioredis, without type declarations).
const calculateSlot = createRequire(import.meta.url)('cluster-key-slot') as (key: string) => number;

const keys = new RuntimeKeys('uhlp:');
const queue = ['queue', 'shop', 'orders'] as const;
const cron = ['cron', 'shop', 'nightly'] as const;

/** Each multi-key script with the keys the stores pass it (redis-delivery-store.ts, redis-run-store.ts, redis-idempotency-store.ts). */
const SCRIPT_CALLS: Record<string, string[][]> = {
  queueSettle: [[keys.deliveryStream(...queue), ...['a', 'b:c', '{x}', 'ü'].map((inv) => keys.idempotency('shop', deliveryOnceKey('queue', 'orders', inv)))]],
  queueRetry: [[keys.deliveryStream(...queue), keys.deliveryRetries(...queue)]],
  queuePromote: [
    [keys.deliveryRetries(...queue), keys.deliveryStream(...queue)],
    [keys.deliveryRetries(...cron), keys.deliveryStream(...cron)],
  ],
  queueDeadLetter: [[keys.deliveryStream(...queue), keys.deliveryDead(...queue)]],
  queueRedrive: [[keys.deliveryDead(...queue), keys.deliveryStream(...queue)]],
  cronFire: [[keys.cronSlot('shop', 'nightly', 1_764_400_000_000), keys.cronLast('shop', 'nightly'), keys.deliveryStream(...cron)]],
  idempotencyBeginMany: [
    ['1-0', '2-0', 'inv-3'].map((inv) => keys.idempotency('shop', deliveryOnceKey('queue', 'orders', inv))),
    ['a', 'b'].map((inv) => keys.idempotency('shop', deliveryOnceKey('callback', 'paid', inv))),
  ],
  runCreate: [[keys.run('RUN-20261129T000000000Z-A'), keys.activeRuns()]],
  runUpdate: [[keys.run('RUN-x'), keys.activeRuns()]],
  runsPrune: [[keys.activeRuns(), keys.run('a'), keys.run('b')]],
  sessionQueueJoin: [[keys.sessionQueue('SES-a'), keys.sessionQueueTickets('SES-a')]],
  sessionQueueHead: [[keys.sessionQueue('SES-a'), keys.sessionQueueTickets('SES-a')]],
  flowEnter: [flowKeys(keys.flowGate('shop', 'http POST /t/:id', 'concurrency', 'a:{b}'))],
  flowLeave: [flowKeys(keys.flowGate('shop', 'queue:orders', 'throttle', ''))],
};

/** The keys redis-flow-store.ts passes a gate's scripts. */
function flowKeys(gate: string): string[] {
  return [keys.flowSlots(gate), keys.flowWaiting(gate), keys.flowWaitExpiry(gate), keys.flowHolders(gate)];
}

/** The MULTI transactions and pipelines over several keys. */
const TRANSACTIONS: Record<string, string[]> = {
  'delivery stats (redis-delivery-store.ts)': [keys.deliveryStream(...queue), keys.deliveryRetries(...queue), keys.deliveryDead(...queue)],
  'run index put and prune (redis-run-index.ts)': [keys.runIndex(), keys.runSummaries()],
  'a ticket leaving its session queue (redis-run-store.ts)': [keys.sessionQueue('SES-a'), keys.sessionQueueTickets('SES-a')],
  'turn journal append and read of an app (redis-turn-journal-store.ts)': [keys.turnJournal('shop', 'core-a'), keys.turnJournal('shop', 'core-b'), keys.turnJournalCores('shop')],
};

function slots(group: readonly string[]): Set<number> {
  return new Set(group.map((key) => calculateSlot(key)));
}

describe('the Cluster key layout', () => {
  it('covers every script that takes more than one key', () => {
    const multiKey = [...loadLuaScripts().values()].filter((script) => script.numberOfKeys === undefined || script.numberOfKeys > 1).map((script) => script.name);
    expect(Object.keys(SCRIPT_CALLS).sort()).toEqual(multiKey.sort());
    for (const [name, calls] of Object.entries(SCRIPT_CALLS)) {
      const count = loadLuaScripts().get(name)!.numberOfKeys;
      for (const call of calls) if (count !== undefined) expect(call, name).toHaveLength(count);
    }
  });

  it.each(Object.entries(SCRIPT_CALLS))('puts the keys of %s in one slot', (_, calls) => {
    for (const call of calls) expect(slots(call).size, call.join(' ')).toBe(1);
  });

  it.each(Object.entries(TRANSACTIONS))('puts the keys of the %s in one slot', (_, group) => {
    expect(slots(group).size, group.join(' ')).toBe(1);
  });

  it('spreads what is not used together: queues, cron jobs and Idempotency-Key records each hash on their own', () => {
    const streams = Array.from({ length: 64 }, (_, i) => keys.deliveryStream('queue', `app-${i}`, 'orders'));
    expect(slots(streams).size).toBeGreaterThan(48);
    const records = Array.from({ length: 64 }, (_, i) => keys.idempotency('shop', `key-${i}`));
    expect(slots(records).size).toBeGreaterThan(48);
  });

  it('hashes on the whole anchor, as Redis does: a key with no braces is its own tag', () => {
    expect(calculateSlot(keys.deliveryStream(...queue))).toBe(calculateSlot(`{${keys.deliveryStream(...queue)}}:anything`));
    // Redis' own example values (CLUSTER KEYSLOT): the function is the server's.
    expect(calculateSlot('foo')).toBe(12182);
    expect(calculateSlot('{user1000}.following')).toBe(calculateSlot('{user1000}.followers'));
  });
});
