/**
 * The requests page across replicas: two `uhlp dev` cores on one real Redis (UHLP_TEST_REDIS_URL) and
 * one key prefix list each other's turns, each core's records in a list of its own. It fails, never
 * skips, without a Redis.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitForValue } from '../helpers/wait-for.js';

describe('the requests page of cores sharing a Redis', () => {
  const prefix = uniqueKeyPrefix('requests');
  let first: UhlpProcess;
  let second: UhlpProcess;

  beforeAll(async () => {
    const definitions = copyFixture('console-requests');
    const env = { UHLP_STATE_PREFIX: prefix, UHLP_SOURCES_KEY: 'k'.repeat(40), UHLP_TURN_JOURNAL_SIZE: '5' };
    first = await startUhlpDev(definitions, ['--driver', 'process', '--state', TEST_REDIS_URL], 60_000, undefined, env);
    second = await startUhlpDev(definitions, ['--driver', 'process', '--state', TEST_REDIS_URL], 60_000, undefined, env);
  }, 150_000);

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    const redis = new Redis(TEST_REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const api = async (core: UhlpProcess, pathname: string): Promise<any> => {
    const response = await fetch(`${core.operatorUrl}/_uhlp/console/api${pathname}`, { headers: { 'x-uhlp-console': '1' } });
    return response.json();
  };

  it("lists every core's turns wherever it is asked, each core's list bounded", async () => {
    const answered = await fetch(`${first.url}/probe/fine`);
    expect(answered.status).toBe(200);
    const failed = await fetch(`${second.url}/probe/boom`);
    expect(failed.status).toBe(500);
    const answeredId = answered.headers.get('x-request-id')!;
    const failedId = failed.headers.get('x-request-id')!;

    const listed = await waitForValue(
      async () => {
        const page = await api(first, '/requests?app=probe');
        const ids = page.turns.map((turn: any) => turn.id);
        return ids.includes(answeredId) && ids.includes(failedId) ? page : undefined;
      },
      { timeoutMs: 10_000, what: "both cores' turns listed by the first" },
    );
    const cores = new Set(listed.turns.map((turn: any) => turn.core));
    expect(cores.size).toBe(2);
    // The other core's failed turn, opened on this one.
    const turn = (await api(first, `/requests/${encodeURIComponent(failedId)}`)).turn;
    expect(turn).toMatchObject({ id: failedId, status: 500, code: 'UHLP_SCRIPT_EXCEPTION', error: { message: '<img src=x onerror=window.__pwned=1> went <b>boom</b>' } });

    // Each core keeps its last 5: a burst on the second leaves 5 of its own in Redis.
    for (let i = 0; i < 8; i++) expect((await fetch(`${second.url}/probe/fine`)).status).toBe(200);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      const lists = await waitForValue(
        async () => {
          const keys = (await redis.keys(`{${prefix}turns-cores:probe}:*`)).sort();
          const lengths = await Promise.all(keys.map((key) => redis.llen(key)));
          return keys.length === 2 && lengths.includes(5) ? lengths : undefined;
        },
        { timeoutMs: 10_000, what: "the second core's list trimmed to 5" },
      );
      expect(Math.max(...lists)).toBe(5);
    } finally {
      redis.disconnect();
    }
    expect((await api(first, '/requests?limit=200')).turns.length).toBeLessThanOrEqual(10);
  });
});
