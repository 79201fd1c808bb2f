/**
 * The suite every SessionStore passes, memory and Redis alike: SES ids, TTLs
 * and touches, atomic turn counts.
 * `makeStore` gives a fresh, empty store per test (a unique key prefix on Redis).
 */
import { describe, expect } from 'vitest';
import type { SessionStore } from '../../src/state/session-store.js';
import { isSessionId } from '../../src/state/session-id.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf, storeTest, type MakeStore } from './store-fixture.js';

export function describeSessionStore(name: string, makeStore: MakeStore<SessionStore>): void {
  const it = storeTest(makeStore);
  describe(`SessionStore contract: ${name}`, () => {
    it('creates a session with a SES id and reads it back', async ({ store }) => {
      const created = await store.createSession({ appId: 'shop', ttlMs: 60_000, data: { user: 'u1' } });
      expect(isSessionId(created.id)).toBe(true);
      expect(created.turns).toBe(0);
      const read = await store.getSession(created.id);
      expect(read).toEqual(created);
      expect(read?.expiresAt).toBe(created.createdAt + 60_000);
    });

    it('gives distinct ids to sessions created concurrently', async ({ store }) => {
      const sessions = await Promise.all(Array.from({ length: 200 }, () => store.createSession({ appId: 'shop', ttlMs: 60_000 })));
      expect(new Set(sessions.map((s) => s.id)).size).toBe(200);
    });

    it('refuses to create a session whose id exists, and ids that are not session ids', async ({ store }) => {
      const first = await store.createSession({ appId: 'shop', ttlMs: 60_000 });
      expect((await codeOf(store.createSession({ appId: 'shop', ttlMs: 60_000, id: first.id }))).code).toBe('UHLP_STATE_INPUT_INVALID');
      expect((await codeOf(store.createSession({ appId: 'shop', ttlMs: 60_000, id: '../etc' }))).code).toBe('UHLP_SESSION_ID_INVALID');
    });

    it('expires a session after its TTL and touch extends it', async ({ store }) => {
      const short = await store.createSession({ appId: 'shop', ttlMs: 150 });
      const kept = await store.createSession({ appId: 'shop', ttlMs: 150 });
      const touched = await store.touchSession(kept.id, 60_000);
      expect(touched?.expiresAt).toBeGreaterThanOrEqual(kept.expiresAt);
      expect(touched?.lastSeenAt).toBeGreaterThanOrEqual(kept.lastSeenAt);
      await waitFor(async () => (await store.getSession(short.id)) === undefined, { what: 'session expiry' });
      expect(await store.getSession(kept.id)).toBeDefined();
      expect(await store.touchSession(short.id, 1000)).toBeUndefined();
    });

    it('counts turns atomically and refuses turns of a missing session', async ({ store }) => {
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
}
