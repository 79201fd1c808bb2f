/**
 * The one test suite every DeliveryStore passes: the memory store (the embedded
 * default) and the Redis Streams store hold the same delivery semantics.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryStore, StreamAddress } from '../../src/state/delivery-store.js';
import type { IdempotencyStore, KeptAnswer } from '../../src/state/idempotency-store.js';
import { isUhlpError } from '../../src/shared/errors.js';
import { waitFor } from '../helpers/wait-for.js';

export interface DeliveryStoreFixture {
  store: DeliveryStore;
  cleanup: () => Promise<void>;
  /** Appends an entry the way a plain producer's XADD does, with only the fields given. */
  rawAdd?: (address: StreamAddress, fields: Record<string, string>) => Promise<string>;
  /** The runtime store's once-only records that `ack` keeps answers in. */
  records: Pick<IdempotencyStore, 'beginIdempotent' | 'getIdempotent'>;
}

const orders: StreamAddress = { kind: 'queue', app: 'shop', name: 'orders' };
const other: StreamAddress = { kind: 'queue', app: 'shop', name: 'other' };

export function describeDeliveryStore(name: string, make: () => Promise<DeliveryStoreFixture>): void {
  describe(`DeliveryStore contract: ${name}`, () => {
    let fixture: DeliveryStoreFixture;
    let store: DeliveryStore;

    beforeEach(async () => {
      fixture = await make();
      store = fixture.store;
      await store.ensureGroup(orders);
      await store.ensureGroup(other);
    });
    afterEach(async () => {
      await fixture.cleanup();
    });

    it('delivers each message to one consumer, in order, with its invocation id and attempt 1', async () => {
      const reader = store.reader();
      try {
        const a = await store.publish(orders, { payload: '{"n":1}' });
        await store.publish(orders, { payload: '{"n":2}', invocationId: 'inv-2' });
        const first = await reader.read(orders, 'c1', 1, 100);
        const second = await reader.read(orders, 'c2', 10, 100);
        expect(first.map((m) => [m.payload, m.invocationId, m.attempt])).toEqual([['{"n":1}', a, 1]]);
        expect(second.map((m) => [m.payload, m.invocationId, m.attempt])).toEqual([['{"n":2}', 'inv-2', 1]]);
        expect(await reader.read(orders, 'c1', 10, 50)).toEqual([]);
        expect(await reader.read(other, 'c1', 10, 10)).toEqual([]);
      } finally {
        await reader.close();
      }
    });

    it('wakes a blocked read when a message arrives, and ends it on close', async () => {
      const reader = store.reader();
      const read = reader.read(orders, 'c1', 1, 5000);
      await store.publish(orders, { payload: '"hi"' });
      expect((await read).map((m) => m.payload)).toEqual(['"hi"']);
      const blocked = reader.read(orders, 'c1', 1, 5000);
      const started = Date.now();
      await reader.close();
      expect(await blocked).toEqual([]);
      expect(Date.now() - started).toBeLessThan(2000);
    });

    it('acknowledges a message out of the stream and counts depth, pending and age', async () => {
      const reader = store.reader();
      try {
        await store.publish(orders, { payload: '1' });
        await store.publish(orders, { payload: '2' });
        const [message] = await reader.read(orders, 'c1', 1, 100);
        const stats = await store.stats(orders, Date.now() + 1000);
        expect(stats).toMatchObject({ depth: 2, pending: 1, retrying: 0, deadLetters: 0 });
        expect(stats.oldestAgeMs).toBeGreaterThanOrEqual(1000);
        await store.ack(orders, [message!.id]);
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 1, pending: 0 });
      } finally {
        await reader.close();
      }
    });

    it('retries a message as its next attempt, or as the same attempt when the failure was not its own', async () => {
      const reader = store.reader();
      try {
        await store.publish(orders, { payload: '1' });
        await store.publish(orders, { payload: '2' });
        const [charged, uncharged] = await reader.read(orders, 'c1', 2, 100);
        expect([charged!.attempt, uncharged!.attempt]).toEqual([1, 1]);
        expect(await store.retryLater(orders, charged!, Date.now())).toBe(true);
        expect(await store.retryLater(orders, uncharged!, Date.now(), false)).toBe(true);
        expect(await store.promoteDue(orders, Date.now() + 1, 10)).toBe(2);
        const again = await reader.read(orders, 'c1', 10, 100);
        expect(Object.fromEntries(again.map((m) => [m.payload, m.attempt]))).toEqual({ 1: 2, 2: 1 });
      } finally {
        await reader.close();
      }
    });

    it('acknowledges several messages in one step, and leaves a message no longer pending where it is', async () => {
      const reader = store.reader();
      try {
        for (const n of [1, 2, 3, 4]) await store.publish(orders, { payload: String(n) });
        const read = await reader.read(orders, 'c1', 3, 100);
        // The third goes to its retry first: acknowledging it afterwards must not take its retry away.
        expect(await store.retryLater(orders, read[2]!, Date.now() + 60_000)).toBe(true);
        await store.ack(orders, read.map((m) => m.id));
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 2, pending: 0, retrying: 1 });
        await store.ack(orders, []);
        const [fourth] = await reader.read(orders, 'c1', 10, 100);
        expect(fourth!.payload).toBe('4');
      } finally {
        await reader.close();
      }
    });

    it('keeps the once-only answers given with an acknowledgement in the same step, and a refused batch settles nothing', async () => {
      const reader = store.reader();
      const { records } = fixture;
      const answer = (key: string, statusCode = 200): KeptAnswer => ({ appId: 'shop', key, response: { statusCode, headers: { 'content-type': 'text/plain' }, body: Buffer.from(key).toString('base64') }, ttlMs: 60_000 });
      try {
        for (const n of [1, 2, 3]) await store.publish(orders, { payload: String(n), invocationId: `inv-${n}` });
        const read = await reader.read(orders, 'c1', 3, 100);
        for (const message of read) expect(await records.beginIdempotent('shop', `queue:orders:${message.invocationId}`, { inFlightTtlMs: 60_000, fingerprint: 'queue:orders' })).toBe('new');
        // One answer is not valid: the batch is refused whole, the messages stay pending and the records in flight.
        const refused = await store.ack(orders, read.map((m) => m.id), [answer('queue:orders:inv-1'), answer('queue:orders:inv-2', 42)]).catch((error: unknown) => error);
        expect(isUhlpError(refused) && refused.code).toBe('UHLP_STATE_INPUT_INVALID');
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 3, pending: 3 });
        expect(await records.getIdempotent('shop', 'queue:orders:inv-1')).toEqual({ state: 'in-flight' });
        // The third replayed an answer kept before: only its id is settled.
        await store.ack(orders, read.map((m) => m.id), [answer('queue:orders:inv-1'), answer('queue:orders:inv-2')]);
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 0, pending: 0 });
        for (const n of [1, 2]) {
          const key = `queue:orders:inv-${n}`;
          expect(await records.getIdempotent('shop', key)).toEqual({ state: 'completed', response: answer(key).response });
          // Kept as a completed record is: the fingerprint of the claim still tells a reused key.
          expect(await records.beginIdempotent('shop', key, { inFlightTtlMs: 60_000, fingerprint: 'queue:orders' })).toEqual({ state: 'completed', response: answer(key).response });
          expect(await records.beginIdempotent('shop', key, { inFlightTtlMs: 60_000, fingerprint: 'other' })).toEqual({ state: 'key-reused' });
        }
        expect(await records.getIdempotent('shop', 'queue:orders:inv-3')).toEqual({ state: 'in-flight' });
      } finally {
        await reader.close();
      }
    });

    it('keeps a failed message for its retry, as the next attempt with the same invocation id', async () => {
      const reader = store.reader();
      try {
        await store.publish(orders, { payload: '{"x":1}', invocationId: 'inv', meta: '{"depth":2}' });
        const [message] = await reader.read(orders, 'c1', 1, 100);
        expect(await store.retryLater(orders, message!, Date.now() + 60_000)).toBe(true);
        expect(await store.retryLater(orders, message!, Date.now())).toBe(false);
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 1, pending: 0, retrying: 1 });
        expect(await store.promoteDue(orders, Date.now(), 10)).toBe(0);
        expect(await store.promoteDue(orders, Date.now() + 60_000, 10)).toBe(1);
        const [again] = await reader.read(orders, 'c1', 1, 100);
        expect(again).toMatchObject({ payload: '{"x":1}', invocationId: 'inv', attempt: 2, publishedAt: message!.publishedAt, meta: '{"depth":2}' });
        expect(again!.id).not.toBe(message!.id);
      } finally {
        await reader.close();
      }
    });

    it('hands a message its consumer never settled to another after the lease, as one more attempt', async () => {
      const reader = store.reader();
      try {
        await store.publish(orders, { payload: '1', invocationId: 'lost' });
        await reader.read(orders, 'dead-core', 1, 100);
        expect(await store.reclaim(orders, 'live-core', 60_000, 10)).toEqual([]);
        let taken: Awaited<ReturnType<DeliveryStore['reclaim']>> = [];
        await waitFor(async () => (taken = await store.reclaim(orders, 'live-core', 50, 10)).length === 1, { timeoutMs: 3000, what: 'the reclaim' });
        expect(taken[0]).toMatchObject({ invocationId: 'lost', attempt: 2 });
        await store.ack(orders, [taken[0]!.id]);
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 0, pending: 0 });
      } finally {
        await reader.close();
      }
    });

    it('moves a message to the dead letters once with its last error (code, message, stack), lists them oldest first, and redrives them as fresh messages', async () => {
      const reader = store.reader();
      try {
        await store.publish(orders, { payload: '{"bad":1}', invocationId: 'p1' });
        await store.publish(orders, { payload: '{"bad":2}', invocationId: 'p2' });
        const [m1, m2] = await reader.read(orders, 'c1', 2, 100);
        const failure = { code: 'UHLP_SCRIPT_EXCEPTION', message: 'clickz is not defined', stack: 'at track (lib/track.mjs:2:3)\nat hello (scripts/click.mjs:3:10)' };
        expect(await store.deadLetter(orders, { ...m1!, attempt: 5 }, 'failed', failure)).toBe(true);
        expect(await store.deadLetter(orders, m1!, 'failed')).toBe(false);
        expect(await store.deadLetter(orders, m2!, 'expired')).toBe(true);
        const dead = await store.deadLetters(orders, 10);
        expect(dead.map((d) => [d.invocationId, d.payload, d.attempts, d.reason, d.error, d.errorMessage, d.errorStack])).toEqual([
          ['p1', '{"bad":1}', 5, 'failed', 'UHLP_SCRIPT_EXCEPTION', 'clickz is not defined', failure.stack],
          ['p2', '{"bad":2}', 1, 'expired', undefined, undefined, undefined],
        ]);
        expect(await store.stats(orders, Date.now())).toMatchObject({ depth: 0, deadLetters: 2 });
        const now = Date.now();
        expect(await store.redrive(orders, 1, now)).toBe(1);
        expect((await store.deadLetters(orders, 10)).map((d) => d.invocationId)).toEqual(['p2']);
        const [back] = await reader.read(orders, 'c1', 10, 100);
        expect(back).toMatchObject({ invocationId: 'p1', payload: '{"bad":1}', attempt: 1, publishedAt: now });
      } finally {
        await reader.close();
      }
    });

    it('fires a cron slot once, never one at or before the last fired slot, and publishes its message with it', async () => {
      const tick: StreamAddress = { kind: 'cron', app: 'shop', name: 'tick' };
      await store.ensureGroup(tick);
      expect(await store.lastCronSlot('shop', 'tick')).toBeUndefined();
      const message = { payload: '{"jobId":"tick"}', invocationId: 'tick@1' };
      const fired = await Promise.all([1, 2, 3].map((i) => store.fireCronSlot(tick, 60_000, `core-${i}`, 60_000, message)));
      expect(fired.filter(Boolean)).toHaveLength(1);
      expect(await store.lastCronSlot('shop', 'tick')).toBe(60_000);
      expect(await store.fireCronSlot(tick, 0, 'core-1', 60_000, message)).toBe(false);
      // The firing's trace context goes with its message.
      const meta = '{"trace":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}';
      expect(await store.fireCronSlot(tick, 120_000, 'core-1', 60_000, { ...message, invocationId: 'tick@2', meta })).toBe(true);
      const reader = store.reader();
      try {
        const read = await reader.read(tick, 'c', 10, 100);
        expect(read.map((m) => m.invocationId)).toEqual(['tick@1', 'tick@2']);
        expect(read.map((m) => m.meta)).toEqual([undefined, meta]);
      } finally {
        await reader.close();
      }
    });

    it('uses a single-use id once, and keeps invocation records', async () => {
      expect(await store.useOnce('cb-1', 60_000)).toBe(true);
      expect(await store.useOnce('cb-1', 60_000)).toBe(false);
      expect(await store.useOnce('cb-2', 60_000)).toBe(true);
      expect(await store.getInvocation('i-1')).toBeUndefined();
      await store.putInvocation('i-1', '{"state":"running"}', 60_000);
      expect(await store.getInvocation('i-1')).toBe('{"state":"running"}');
    });

    it("reads a plain producer's entry with the defaults: the entry id as invocation id, attempt 1, a text payload as a JSON string", async () => {
      if (!fixture.rawAdd) return;
      const id = await fixture.rawAdd(orders, { payload: 'plain text' });
      const reader = store.reader();
      try {
        const [message] = await reader.read(orders, 'c1', 1, 100);
        expect(message).toMatchObject({ id, invocationId: id, attempt: 1, payload: '"plain text"' });
        expect(message!.publishedAt).toBe(Number(id.split('-')[0]));
      } finally {
        await reader.close();
      }
    });
  });
}
