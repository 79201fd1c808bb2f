/**
 * The one test suite every RuntimeStore implementation passes. `makeStore` gives a
 * fresh, empty store per test (a unique key prefix for Redis) and a cleanup.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUhlpError } from '../../src/shared/errors.js';
import { waitForIdempotentCompletion } from '../../src/state/idempotency-wait.js';
import type { RuntimeStore, StoredResponse } from '../../src/state/runtime-store.js';
import { isSessionId } from '../../src/state/session-id.js';
import { waitFor } from '../helpers/wait-for.js';

export interface StoreFixture {
  store: RuntimeStore;
  cleanup: () => Promise<void>;
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; details: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (isUhlpError(error)) return { code: error.code, details: error.details };
    throw error;
  }
  throw new Error('expected a rejection');
}

const RESPONSE: StoredResponse = { statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };

export function describeRuntimeStore(name: string, makeStore: () => Promise<StoreFixture>): void {
  describe(`RuntimeStore contract: ${name}`, () => {
    let fixture: StoreFixture;
    let store: RuntimeStore;

    beforeEach(async () => {
      fixture = await makeStore();
      store = fixture.store;
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    describe('sessions', () => {
      it('creates a session with a SES id and reads it back', async () => {
        const created = await store.createSession({ appId: 'shop', ttlMs: 60_000, data: { user: 'u1' } });
        expect(isSessionId(created.id)).toBe(true);
        expect(created.turns).toBe(0);
        const read = await store.getSession(created.id);
        expect(read).toEqual(created);
        expect(read?.expiresAt).toBe(created.createdAt + 60_000);
      });

      it('gives distinct ids to sessions created concurrently', async () => {
        const sessions = await Promise.all(Array.from({ length: 200 }, () => store.createSession({ appId: 'shop', ttlMs: 60_000 })));
        expect(new Set(sessions.map((s) => s.id)).size).toBe(200);
      });

      it('refuses to create a session whose id exists, and ids that are not session ids', async () => {
        const first = await store.createSession({ appId: 'shop', ttlMs: 60_000 });
        expect((await codeOf(store.createSession({ appId: 'shop', ttlMs: 60_000, id: first.id }))).code).toBe('UHLP_STATE_INPUT_INVALID');
        expect((await codeOf(store.createSession({ appId: 'shop', ttlMs: 60_000, id: '../etc' }))).code).toBe('UHLP_SESSION_ID_INVALID');
      });

      it('expires a session after its TTL and touch extends it', async () => {
        const short = await store.createSession({ appId: 'shop', ttlMs: 150 });
        const kept = await store.createSession({ appId: 'shop', ttlMs: 150 });
        const touched = await store.touchSession(kept.id, 60_000);
        expect(touched?.expiresAt).toBeGreaterThanOrEqual(kept.expiresAt);
        expect(touched?.lastSeenAt).toBeGreaterThanOrEqual(kept.lastSeenAt);
        await waitFor(async () => (await store.getSession(short.id)) === undefined, { what: 'session expiry' });
        expect(await store.getSession(kept.id)).toBeDefined();
        expect(await store.touchSession(short.id, 1000)).toBeUndefined();
      });

      it('counts turns atomically and refuses turns of a missing session', async () => {
        const session = await store.createSession({ appId: 'shop', ttlMs: 60_000 });
        const turns = await Promise.all(Array.from({ length: 25 }, () => store.nextTurn(session.id)));
        expect([...turns].sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i + 1));
        expect((await store.getSession(session.id))?.turns).toBe(25);
        expect(await store.deleteSession(session.id)).toBe(true);
        expect((await codeOf(store.nextTurn(session.id))).code).toBe('UHLP_SESSION_NOT_FOUND');
        expect(await store.getSession(session.id)).toBeUndefined();
        expect(await store.deleteSession(session.id)).toBe(false);
      });
    });

    describe('kv', () => {
      it('sets, gets and deletes', async () => {
        await store.kvSet('app/a', 'one');
        expect(await store.kvGet('app/a')).toBe('one');
        await store.kvSet('app/a', 'two');
        expect(await store.kvGet('app/a')).toBe('two');
        expect(await store.kvDelete('app/a')).toBe(true);
        expect(await store.kvDelete('app/a')).toBe(false);
        expect(await store.kvGet('app/a')).toBeUndefined();
      });

      it('expires keys with a TTL', async () => {
        await store.kvSet('t/short', 'x', { ttlMs: 100 });
        await store.kvSet('t/long', 'y', { ttlMs: 60_000 });
        await waitFor(async () => (await store.kvGet('t/short')) === undefined, { what: 'kv expiry' });
        expect(await store.kvGet('t/long')).toBe('y');
        expect((await store.kvScan('t/')).map((e) => e.key)).toEqual(['t/long']);
      });

      it('scans by prefix, sorted, with a limit, taking glob characters literally', async () => {
        for (const key of ['p/c', 'p/a', 'p/b', 'q/a', 'p*x/1', 'pzx/1']) await store.kvSet(key, `v:${key}`);
        expect(await store.kvScan('p/')).toEqual([
          { key: 'p/a', value: 'v:p/a' },
          { key: 'p/b', value: 'v:p/b' },
          { key: 'p/c', value: 'v:p/c' },
        ]);
        expect((await store.kvScan('p/', { limit: 2 })).map((e) => e.key)).toEqual(['p/a', 'p/b']);
        expect((await store.kvScan('p*x/')).map((e) => e.key)).toEqual(['p*x/1']);
        expect((await store.kvScan('')).length).toBe(6);
      });

      it('refuses bad arguments with a stable code naming the field', async () => {
        expect(await codeOf(store.kvSet('', 'x'))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'key' } });
        expect(await codeOf(store.kvSet('k', 'x', { ttlMs: 0 }))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'ttlMs' } });
        expect(await codeOf(store.kvSet('k', 'x', { ttlMs: 1.5 }))).toEqual({ code: 'UHLP_STATE_INPUT_INVALID', details: { field: 'ttlMs' } });
      });
    });

    describe('leases', () => {
      it('lets one owner hold a lease; others cannot renew, release or take it', async () => {
        const lease = await store.acquireLease('sb-1', 'core-a', 60_000);
        expect(lease).toMatchObject({ resource: 'sb-1', owner: 'core-a' });
        expect(await store.acquireLease('sb-1', 'core-b', 60_000)).toBeUndefined();
        expect(await store.renewLease('sb-1', 'core-b', 60_000)).toBe(false);
        expect(await store.releaseLease('sb-1', 'core-b')).toBe(false);
        expect((await store.getLease('sb-1'))?.owner).toBe('core-a');
        // Acquiring again as the holder renews.
        expect(await store.acquireLease('sb-1', 'core-a', 60_000)).toBeDefined();
        expect(await store.renewLease('sb-1', 'core-a', 60_000)).toBe(true);
        expect(await store.releaseLease('sb-1', 'core-a')).toBe(true);
        expect(await store.getLease('sb-1')).toBeUndefined();
        expect((await store.acquireLease('sb-1', 'core-b', 60_000))?.owner).toBe('core-b');
      });

      it('frees a lease when its TTL passes without renewal', async () => {
        await store.acquireLease('sb-2', 'core-a', 100);
        await waitFor(async () => (await store.acquireLease('sb-2', 'core-b', 60_000)) !== undefined, { what: 'lease expiry' });
        expect((await store.getLease('sb-2'))?.owner).toBe('core-b');
        expect(await store.renewLease('sb-2', 'core-a', 60_000)).toBe(false);
      });

      it('gives a contended lease to exactly one owner', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.acquireLease('sb-3', `core-${i}`, 60_000)));
        const winners = results.filter((r) => r !== undefined);
        expect(winners).toHaveLength(1);
        expect((await store.getLease('sb-3'))?.owner).toBe(winners[0]?.owner);
      });
    });

    describe('idempotency', () => {
      it('claims a key once, reports it in flight, then replays the stored response', async () => {
        expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toBe('new');
        expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toEqual({ state: 'in-flight' });
        expect(await store.getIdempotent('shop', 'k1')).toEqual({ state: 'in-flight' });
        await store.completeIdempotent('shop', 'k1', RESPONSE, 60_000);
        expect(await store.beginIdempotent('shop', 'k1', { inFlightTtlMs: 60_000 })).toEqual({ state: 'completed', response: RESPONSE });
        // Keys are per app.
        expect(await store.beginIdempotent('other', 'k1', { inFlightTtlMs: 60_000 })).toBe('new');
      });

      it('gives a key claimed concurrently to exactly one request', async () => {
        const results = await Promise.all(Array.from({ length: 20 }, () => store.beginIdempotent('shop', 'k2', { inFlightTtlMs: 60_000 })));
        expect(results.filter((r) => r === 'new')).toHaveLength(1);
      });

      it('reports a key reused for another request fingerprint', async () => {
        expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'aaa' })).toBe('new');
        expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'bbb' })).toEqual({ state: 'key-reused' });
        await store.completeIdempotent('shop', 'k3', RESPONSE, 60_000);
        expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'bbb' })).toEqual({ state: 'key-reused' });
        expect(await store.beginIdempotent('shop', 'k3', { inFlightTtlMs: 60_000, fingerprint: 'aaa' })).toEqual({ state: 'completed', response: RESPONSE });
      });

      it('frees an abandoned in-flight key but keeps a completed one', async () => {
        await store.beginIdempotent('shop', 'k4', { inFlightTtlMs: 60_000 });
        await store.abandonIdempotent('shop', 'k4');
        expect(await store.getIdempotent('shop', 'k4')).toBeUndefined();
        expect(await store.beginIdempotent('shop', 'k4', { inFlightTtlMs: 60_000 })).toBe('new');
        await store.completeIdempotent('shop', 'k4', RESPONSE, 60_000);
        await store.abandonIdempotent('shop', 'k4');
        expect(await store.getIdempotent('shop', 'k4')).toEqual({ state: 'completed', response: RESPONSE });
      });

      it('expires in-flight markers and completed records', async () => {
        await store.beginIdempotent('shop', 'k5', { inFlightTtlMs: 100 });
        await waitFor(async () => (await store.beginIdempotent('shop', 'k5', { inFlightTtlMs: 60_000 })) === 'new', { what: 'in-flight expiry' });
        await store.completeIdempotent('shop', 'k5', RESPONSE, 100);
        await waitFor(async () => (await store.getIdempotent('shop', 'k5')) === undefined, { what: 'record expiry' });
      });

      it('lets a repeat wait for the first request to complete', async () => {
        await store.beginIdempotent('shop', 'k6', { inFlightTtlMs: 60_000 });
        const waiting = waitForIdempotentCompletion(store, 'shop', 'k6', { timeoutMs: 5000, intervalMs: 10 });
        await store.completeIdempotent('shop', 'k6', RESPONSE, 60_000);
        expect(await waiting).toEqual({ state: 'completed', response: RESPONSE });

        await store.beginIdempotent('shop', 'k7', { inFlightTtlMs: 60_000 });
        expect(await waitForIdempotentCompletion(store, 'shop', 'k7', { timeoutMs: 30, intervalMs: 10 })).toEqual({ state: 'in-flight' });
        const gone = waitForIdempotentCompletion(store, 'shop', 'k7', { timeoutMs: 5000, intervalMs: 10 });
        await store.abandonIdempotent('shop', 'k7');
        expect(await gone).toEqual({ state: 'gone' });
      });
    });

    describe('rate limits', () => {
      it('allows the limit, denies the next hit with a retry delay, and allows again after it', async () => {
        const first = await Promise.all(Array.from({ length: 5 }, () => store.hitRateLimit('shop', 5)));
        expect(first.every((d) => d.allowed && d.retryAfterMs === 0)).toBe(true);
        const denied = await store.hitRateLimit('shop', 5);
        expect(denied.allowed).toBe(false);
        expect(denied.retryAfterMs).toBeGreaterThan(0);
        // One token comes back every 1000/5 ms.
        expect(denied.retryAfterMs).toBeLessThanOrEqual(200);
        // Another app has its own budget.
        expect((await store.hitRateLimit('other', 5)).allowed).toBe(true);
        await waitFor(async () => (await store.hitRateLimit('shop', 5)).allowed, { timeoutMs: 3000, intervalMs: 25, what: 'rate window to slide' });
      });

      it('lets exactly the limit through from a burst of concurrent hits', async () => {
        // Limit 2 refills one token per 500 ms, far longer than the burst takes.
        const burst = await Promise.all(Array.from({ length: 50 }, () => store.hitRateLimit('burst', 2)));
        expect(burst.filter((d) => d.allowed)).toHaveLength(2);
        expect(burst.filter((d) => !d.allowed).every((d) => d.retryAfterMs > 0 && d.retryAfterMs <= 500)).toBe(true);
      });

      it('refuses a limit that is not a positive integer', async () => {
        expect((await codeOf(store.hitRateLimit('shop', 0))).details).toEqual({ field: 'limitPerSecond' });
        expect((await codeOf(store.hitRateLimit('shop', 2.5))).details).toEqual({ field: 'limitPerSecond' });
        expect((await codeOf(store.hitRateLimit('shop', 1_000_001))).details).toEqual({ field: 'limitPerSecond' });
      });
    });

    describe('oracle counters', () => {
      it('adds deltas atomically per app and component', async () => {
        expect(await store.getOracleCounters('shop', 'price')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
        await Promise.all(Array.from({ length: 40 }, () => store.incrOracleCounters('shop', 'price', { samples: 1, hits: 2 })));
        const after = await store.incrOracleCounters('shop', 'price', { agreements: 3, disagreements: 1 });
        expect(after).toEqual({ samples: 40, hits: 80, agreements: 3, disagreements: 1, declines: 0, tokensSaved: 0 });
        expect(await store.getOracleCounters('shop', 'other')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
        await store.resetOracleCounters('shop', 'price');
        expect(await store.getOracleCounters('shop', 'price')).toEqual({ samples: 0, hits: 0, agreements: 0, disagreements: 0, declines: 0, tokensSaved: 0 });
      });

      it('refuses unknown counters', async () => {
        const bad = { bogus: 1 } as unknown as Record<'samples', number>;
        expect((await codeOf(store.incrOracleCounters('shop', 'price', bad))).details).toEqual({ field: 'deltas.bogus' });
      });
    });

    describe('oracle samples, records and candidates', () => {
      const scope = { appId: 'shop', componentId: 'triage', revision: 'r1' };
      const hash = (n: number): string => n.toString(16).padStart(16, '0');
      const sample = (input: number, output: number, fresh = true) => ({
        inputHash: hash(input),
        outputHash: hash(output),
        json: JSON.stringify({ input, output }),
        fresh,
      });
      const options = (pick: number, limit = 3) => ({ limit, ttlMs: 60_000, pick });

      it('holds a bounded reservoir: new inputs fill it, then replace with the draw, never past the limit', async () => {
        for (let i = 1; i <= 3; i++) expect((await store.addOracleSample(scope, sample(i, i), options(0))).outcome).toBe('added');
        // The 4th input: the draw 5 % 4 = 1 < 3 replaces slot 1; the 5th: 9 % 5 = 4 is not a slot, it passes.
        expect((await store.addOracleSample(scope, sample(4, 4), options(5))).outcome).toBe('replaced');
        const passed = await store.addOracleSample(scope, sample(5, 5), options(9));
        expect(passed).toEqual({ outcome: 'passed', stats: { seen: 5, stored: 3, repeats: 0, unstable: 0 } });
        const held = await store.getOracleSamples(scope);
        expect(held.samples.map((json) => JSON.parse(json).input)).toEqual([1, 4, 3]);
        expect(held.stats).toEqual({ seen: 5, stored: 3, repeats: 0, unstable: 0 });
        // Input 2 left the reservoir: seeing it again is a new sighting, not a repeat.
        expect((await store.addOracleSample(scope, sample(2, 2), options(100))).outcome).toBe('passed');
        expect((await store.getOracleSamples({ ...scope, revision: 'r2' })).samples).toEqual([]);
      });

      it('counts fresh repeats of held inputs, and the ones that answered differently', async () => {
        await store.addOracleSample(scope, sample(1, 10), options(0));
        expect((await store.addOracleSample(scope, sample(1, 10), options(0))).outcome).toBe('repeat');
        expect((await store.addOracleSample(scope, sample(1, 11), options(0))).outcome).toBe('unstable');
        // An answer from the cache says nothing about stability.
        expect((await store.addOracleSample(scope, sample(1, 12, false), options(0))).outcome).toBe('repeat');
        const concurrent = await Promise.all(Array.from({ length: 20 }, () => store.addOracleSample(scope, sample(1, 10), options(0))));
        expect(concurrent.every((r) => r.outcome === 'repeat')).toBe(true);
        expect((await store.getOracleSamples(scope)).stats).toEqual({ seen: 1, stored: 1, repeats: 22, unstable: 1 });
      });

      it('refuses samples that are too large or not hashes', async () => {
        expect((await codeOf(store.addOracleSample(scope, { ...sample(1, 1), json: 'x'.repeat(64 * 1024 + 1) }, options(0)))).details).toEqual({ field: 'json' });
        expect((await codeOf(store.addOracleSample(scope, { ...sample(1, 1), inputHash: 'nope' }, options(0)))).details).toEqual({ field: 'inputHash' });
        expect((await codeOf(store.addOracleSample(scope, sample(1, 1), { ...options(0), limit: 10_001 }))).details).toEqual({ field: 'limit' });
      });

      it('writes records by compare-and-set on their version', async () => {
        expect(await store.getOracleRecord('shop', 'triage')).toBeUndefined();
        expect(await store.putOracleRecord('shop', 'triage', '{"stage":"sampling"}', 1)).toBeUndefined();
        const writes = await Promise.all([0, 0, 0].map((v, i) => store.putOracleRecord('shop', 'triage', `{"n":${i}}`, v)));
        expect(writes.filter((w) => w === 1)).toHaveLength(1);
        expect((await store.getOracleRecord('shop', 'triage'))?.version).toBe(1);
        expect(await store.putOracleRecord('shop', 'triage', '{"stage":"shadow"}', 1)).toBe(2);
        expect(await store.getOracleRecord('shop', 'triage')).toEqual({ version: 2, json: '{"stage":"shadow"}' });
      });

      it('keeps the newest candidates only', async () => {
        for (let i = 1; i <= 4; i++) await store.addOracleCandidate('shop', 'triage', `{"n":${i}}`, 3);
        expect(await store.listOracleCandidates('shop', 'triage')).toEqual(['{"n":4}', '{"n":3}', '{"n":2}']);
        expect(await store.listOracleCandidates('shop', 'other')).toEqual([]);
      });
    });

    describe('LLM token budgets', () => {
      it('adds tokens per app and UTC day atomically, starting from 0', async () => {
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(0);
        const totals = await Promise.all(Array.from({ length: 30 }, () => store.addLlmTokens('shop', '2026-03-01', 7, 60_000)));
        expect(Math.max(...totals)).toBe(210);
        expect(new Set(totals).size).toBe(30);
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(210);
        expect(await store.addLlmTokens('shop', '2026-03-01', 0, 60_000)).toBe(210);
        expect(await store.getLlmTokens('shop', '2026-03-02')).toBe(0);
        expect(await store.getLlmTokens('other', '2026-03-01')).toBe(0);
      });

      it("expires a day's count from its first tokens, not its last", async () => {
        await store.addLlmTokens('shop', '2026-03-01', 5, 300);
        await store.addLlmTokens('shop', '2026-03-01', 5, 60_000);
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(10);
        await waitFor(async () => (await store.getLlmTokens('shop', '2026-03-01')) === 0, { what: 'token count expiry' });
      });

      it('refuses a day that is not YYYY-MM-DD and negative or fractional tokens', async () => {
        expect((await codeOf(store.getLlmTokens('shop', 'today'))).details).toEqual({ field: 'day' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-3-1', 1, 1000))).details).toEqual({ field: 'day' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', -1, 1000))).details).toEqual({ field: 'tokens' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', 1.5, 1000))).details).toEqual({ field: 'tokens' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', 1, 0))).details).toEqual({ field: 'ttlMs' });
      });
    });

    describe('LLM answer cache', () => {
      it('stores answers per app and key, replaces them, and expires them', async () => {
        expect(await store.getLlmCached('shop', 'h1')).toBeUndefined();
        await store.setLlmCached('shop', 'h1', '{"text":"a"}', 60_000);
        await store.setLlmCached('shop', 'h:2', '{"text":"b"}', 200);
        expect(await store.getLlmCached('shop', 'h1')).toBe('{"text":"a"}');
        expect(await store.getLlmCached('other', 'h1')).toBeUndefined();
        await store.setLlmCached('shop', 'h1', '{"text":"c"}', 60_000);
        expect(await store.getLlmCached('shop', 'h1')).toBe('{"text":"c"}');
        await waitFor(async () => (await store.getLlmCached('shop', 'h:2')) === undefined, { what: 'cache expiry' });
        expect(await store.getLlmCached('shop', 'h1')).toBe('{"text":"c"}');
      });

      it('refuses bad arguments naming the field', async () => {
        expect((await codeOf(store.setLlmCached('shop', '', 'x', 1000))).details).toEqual({ field: 'key' });
        expect((await codeOf(store.setLlmCached('shop', 'k', 'x', 0))).details).toEqual({ field: 'ttlMs' });
        expect((await codeOf(store.getLlmCached('', 'k'))).details).toEqual({ field: 'appId' });
      });
    });

    it('answers ping', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
    });

    describe('workflow runs', () => {
      it('creates a run once, reads it back at version 1, and lists it while active', async () => {
        expect(await store.createRun('RUN-1', '{"status":"running"}', 60_000, true)).toBe(true);
        expect(await store.createRun('RUN-1', '{"status":"other"}', 60_000, true)).toBe(false);
        expect(await store.getRun('RUN-1')).toEqual({ json: '{"status":"running"}', version: 1 });
        expect(await store.createRun('RUN-2', '{"status":"paused"}', 60_000, false)).toBe(true);
        expect(await store.listActiveRuns()).toEqual(['RUN-1']);
        expect(await store.getRun('RUN-none')).toBeUndefined();
      });

      it('updates only from the version read, and takes a run off the active list', async () => {
        await store.createRun('RUN-3', '{"n":0}', 60_000, true);
        const results = await Promise.all([store.updateRun('RUN-3', 1, '{"n":1}', 60_000, true), store.updateRun('RUN-3', 1, '{"n":2}', 60_000, true)]);
        expect(results.filter(Boolean)).toHaveLength(1);
        const read = await store.getRun('RUN-3');
        expect(read?.version).toBe(2);
        expect(await store.updateRun('RUN-3', 2, '{"n":3}', 60_000, false)).toBe(true);
        expect(await store.listActiveRuns()).toEqual([]);
        expect(await store.getRun('RUN-3')).toEqual({ json: '{"n":3}', version: 3 });
        expect(await store.updateRun('RUN-none', 1, '{}', 60_000, false)).toBe(false);
      });

      it('lists active runs oldest first, drops expired ones, and refuses bad input', async () => {
        await store.createRun('RUN-a', '{}', 60_000, true);
        await store.createRun('RUN-b', '{}', 150, true);
        await store.createRun('RUN-c', '{}', 60_000, true);
        expect(await store.listActiveRuns(2)).toEqual(['RUN-a', 'RUN-b']);
        await waitFor(async () => (await store.getRun('RUN-b')) === undefined, { what: 'run expiry' });
        expect(await store.listActiveRuns()).toEqual(['RUN-a', 'RUN-c']);
        expect((await codeOf(store.createRun('', '{}', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
        expect((await codeOf(store.createRun('RUN-x', 'not json', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
        expect((await codeOf(store.updateRun('RUN-a', 0, '{}', 1000, true))).code).toBe('UHLP_STATE_INPUT_INVALID');
      });
    });
  });
}
