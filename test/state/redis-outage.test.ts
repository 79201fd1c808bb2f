/**
 * A real Redis outage: a private redis-server is killed and restarted under a
 * running RedisRuntimeStore. Calls during the outage must fail fast with
 * UHLP_STATE_UNAVAILABLE, the store must reconnect by itself, and every write it
 * acknowledged before the crash must still be there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUhlpError } from '../../src/shared/errors.js';
import { RedisRuntimeStore } from '../../src/state/redis-runtime-store.js';
import { RedisServerProcess } from '../helpers/redis-server-process.js';
import { waitFor } from '../helpers/wait-for.js';

/** A failing call must answer well within this; a hanging one would take the command timeout or longer. */
const FAIL_FAST_MS = 250;

async function failureOf(call: () => Promise<unknown>): Promise<{ code: string; ms: number }> {
  const started = performance.now();
  try {
    await call();
  } catch (error) {
    const ms = performance.now() - started;
    if (isUhlpError(error)) return { code: error.code, ms };
    throw error;
  }
  throw new Error('expected the call to fail during the outage');
}

describe('RedisRuntimeStore across a Redis restart', () => {
  let server: RedisServerProcess;
  let store: RedisRuntimeStore;

  beforeAll(async () => {
    server = await RedisServerProcess.create();
  });

  afterAll(async () => {
    await store?.close();
    await server?.destroy();
  });

  it('gives up waiting for a first connection after its timeout', async () => {
    const started = performance.now();
    await expect(RedisRuntimeStore.connect({ url: server.url, keyPrefix: 'outage:', timeoutMs: 200 })).rejects.toMatchObject({ code: 'UHLP_STATE_UNAVAILABLE' });
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('fails fast while Redis has never been up, then connects by itself', async () => {
    store = new RedisRuntimeStore({ url: server.url, keyPrefix: 'outage:', commandTimeoutMs: 1000, maxReconnectDelayMs: 100 });
    const before = await failureOf(() => store.kv.kvGet('x'));
    expect(before.code).toBe('UHLP_STATE_UNAVAILABLE');
    expect(before.ms).toBeLessThan(FAIL_FAST_MS);

    await server.start();
    await waitFor(async () => (await store.ping(), true), { timeoutMs: 10_000, what: 'first connection' });
    expect(store.status).toBe('ready');
  });

  it('fails fast during a crash, reconnects after the restart, and loses no acknowledged write', async () => {
    await store.idempotency.completeIdempotent('shop', 'paid-1', { statusCode: 201, headers: {}, body: 'ok' }, 600_000);
    const session = await store.sessions.createSession({ appId: 'shop', ttlMs: 600_000 });
    await store.sessions.nextTurn(session.id);

    // Writers keep writing through the crash and remember what Redis acknowledged.
    const acknowledged = new Map<string, string>();
    const writerErrors = new Set<string>();
    let writing = true;
    let sequence = 0;
    const writer = async (): Promise<void> => {
      while (writing) {
        const key = `w/${String(sequence++).padStart(6, '0')}`;
        try {
          await store.kv.kvSet(key, `value-${key}`);
          acknowledged.set(key, `value-${key}`);
        } catch (error) {
          writerErrors.add(isUhlpError(error) ? error.code : String(error));
          // Back off a little so a down Redis is not hammered in a tight loop.
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      }
    };
    const writers = Array.from({ length: 4 }, () => writer());
    await waitFor(() => acknowledged.size >= 200, { what: 'writes before the crash' });

    await server.kill('SIGKILL');

    const failures = [];
    for (const call of [
      () => store.kv.kvGet('w/000000'),
      () => store.kv.kvSet('during', 'x'),
      () => store.rateLimits.hitRateLimit('shop', 100),
      () => store.idempotency.beginIdempotent('shop', 'during', { inFlightTtlMs: 1000 }),
      () => store.leases.acquireLease('sb-1', 'core-a', 1000),
      () => store.sessions.nextTurn(session.id),
      () => store.ping(),
    ]) {
      failures.push(await failureOf(call));
    }
    expect(failures.map((f) => f.code)).toEqual(Array(failures.length).fill('UHLP_STATE_UNAVAILABLE'));
    expect(Math.max(...failures.map((f) => f.ms))).toBeLessThan(FAIL_FAST_MS);

    await server.start();
    await waitFor(async () => (await store.ping(), true), { timeoutMs: 10_000, what: 'reconnection after restart' });
    writing = false;
    await Promise.all(writers);

    expect([...writerErrors]).toEqual(['UHLP_STATE_UNAVAILABLE']);
    const stored = new Map((await store.kv.kvScan('w/', { limit: 1_000_000 })).map((e) => [e.key, e.value]));
    const lost = [...acknowledged].filter(([key, value]) => stored.get(key) !== value).map(([key]) => key);
    expect(lost).toEqual([]);
    expect(await store.idempotency.beginIdempotent('shop', 'paid-1', { inFlightTtlMs: 1000 })).toEqual({
      state: 'completed',
      response: { statusCode: 201, headers: {}, body: 'ok' },
    });
    expect(await store.sessions.nextTurn(session.id)).toBe(2);
  });
});
