/**
 * The suite every LlmStore passes, memory and Redis alike: token budgets per
 * app and UTC day, the answer cache.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { LlmStore } from '../../src/state/llm-store.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeLlmStore(name: string, makeStore: MakeStore<LlmStore>): void {
  const it = storeTest(makeStore);
  describe(`LlmStore contract: ${name}`, () => {
    describe('LLM token budgets', () => {
      it('adds tokens per app and UTC day atomically, starting from 0', async ({ store }) => {
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(0);
        const totals = await Promise.all(Array.from({ length: 30 }, () => store.addLlmTokens('shop', '2026-03-01', 7, 60_000)));
        expect(Math.max(...totals)).toBe(210);
        expect(new Set(totals).size).toBe(30);
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(210);
        expect(await store.addLlmTokens('shop', '2026-03-01', 0, 60_000)).toBe(210);
        expect(await store.getLlmTokens('shop', '2026-03-02')).toBe(0);
        expect(await store.getLlmTokens('other', '2026-03-01')).toBe(0);
      });

      it("expires a day's count from its first tokens, not its last", async ({ store }) => {
        await store.addLlmTokens('shop', '2026-03-01', 5, 300);
        await store.addLlmTokens('shop', '2026-03-01', 5, 60_000);
        expect(await store.getLlmTokens('shop', '2026-03-01')).toBe(10);
        await waitFor(async () => (await store.getLlmTokens('shop', '2026-03-01')) === 0, { what: 'token count expiry' });
      });

      it('refuses a day that is not YYYY-MM-DD and negative or fractional tokens', async ({ store }) => {
        expect((await codeOf(store.getLlmTokens('shop', 'today'))).details).toEqual({ field: 'day' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-3-1', 1, 1000))).details).toEqual({ field: 'day' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', -1, 1000))).details).toEqual({ field: 'tokens' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', 1.5, 1000))).details).toEqual({ field: 'tokens' });
        expect((await codeOf(store.addLlmTokens('shop', '2026-03-01', 1, 0))).details).toEqual({ field: 'ttlMs' });
      });
    });

    describe('LLM answer cache', () => {
      it('stores answers per app and key, replaces them, and expires them', async ({ store }) => {
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

      it('refuses bad arguments naming the field', async ({ store }) => {
        expect((await codeOf(store.setLlmCached('shop', '', 'x', 1000))).details).toEqual({ field: 'key' });
        expect((await codeOf(store.setLlmCached('shop', 'k', 'x', 0))).details).toEqual({ field: 'ttlMs' });
        expect((await codeOf(store.getLlmCached('', 'k'))).details).toEqual({ field: 'appId' });
      });
    });
  });
}
