/**
 * The delivery sources suite on Redis Streams (UHLP_TEST_REDIS_URL, default
 * redis://127.0.0.1:6379; it fails, never skips, without Redis), and what only
 * a shared store can show: two cores firing each cron slot once between them,
 * and a message whose core is killed mid-run redelivered by another core.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeSources, readLog } from '../helpers/sources-suite.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { copyFixture, descendants, isAlive, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';
import { dropKeys, valuesUnder } from './redis-keys.js';

const suitePrefix = uniqueKeyPrefix('sources');
describeSources('Redis Streams (--state redis://)', {
  args: ['--state', TEST_REDIS_URL],
  env: { UHLP_STATE_PREFIX: suitePrefix },
  cleanup: () => dropKeys(suitePrefix),
});

describe('delivery sources on one Redis shared by two cores', () => {
  const prefix = uniqueKeyPrefix('shared');
  // One installation: the same sources key on every core.
  const env = { UHLP_STATE_PREFIX: prefix, UHLP_SOURCES_KEY: 'k'.repeat(40) };
  const definitions = copyFixture('sources');
  let first: UhlpProcess | undefined;
  let second: UhlpProcess | undefined;

  beforeAll(async () => {
    first = await startUhlpDev(definitions, ['--state', TEST_REDIS_URL], 60_000, undefined, env);
    second = await startUhlpDev(definitions, ['--state', TEST_REDIS_URL], 60_000, undefined, env);
  }, 90_000);
  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    await dropKeys(prefix);
  });

  it('fires each cron slot once between them', async () => {
    const slots = async (): Promise<Map<string, string>> => valuesUnder(prefix, 'kv:app/shop/kv/inv:tick@*');
    await waitFor(async () => (await slots()).size >= 5, { timeoutMs: 20_000, what: 'five slots' });
    const runs = await slots();
    expect([...runs.values()].every((count) => count === '1')).toBe(true);
    // Both cores had the timer; the claims split the slots between them, each slot to one.
    const fires = async (core: UhlpProcess): Promise<number> => {
      const text = await (await fetch(`${core.url}/metrics`)).text();
      return Number(/uhlp_cron_fires_total\{app="shop",job="tick"\} (\d+)/.exec(text)?.[1] ?? 0);
    };
    const total = (await fires(first!)) + (await fires(second!));
    const fired = (await slots()).size;
    // Slots fired after the count above are not in `total`: at most the one or two of the last second.
    expect(total).toBeGreaterThanOrEqual(runs.size);
    expect(total).toBeLessThanOrEqual(fired);
  });

  it('redelivers a message whose core is killed mid-run to the other core, with the same invocation id', async () => {
    const victim = first!;
    const token = (await import('node:child_process')).execFileSync(process.execPath, ['bin/uhlp.js', 'queues', 'token', 'shop', 'crash', '--data-dir', victim.dataDir], {
      env: { ...process.env, ...env },
    });
    const published = await fetch(`${victim.url}/_uhlp/queues/shop/crash`, {
      method: 'POST',
      body: '{"waitMs":2500}',
      headers: { authorization: `Bearer ${token.toString().trim()}` },
    });
    expect(published.status).toBe(202);
    const { invocationId } = (await published.json()) as { invocationId: string };
    // Either core may take it first; the one that does is killed.
    await waitFor(async () => (await readLog(second!, 'shop', 'crash')).some((e) => e.phase === 'start'), { timeoutMs: 10_000, what: 'the first attempt' });
    const [started] = await readLog(second!, 'shop', 'crash');
    expect(started).toMatchObject({ invocationId, attempt: 1 });
    const owner = await whoRuns(prefix, first!, second!);
    const survivor = owner === first ? second! : first!;
    const pids = [owner.child.pid!, ...descendants(owner.child.pid!)];
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch (error) {
        // A descendant that ended between the listing and the kill (its parent went first).
        if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
      }
    }
    await waitFor(() => pids.every((pid) => !isAlive(pid)), { timeoutMs: 5_000, what: 'the killed core and its sandboxes' });

    // After the lease (6 s) the survivor takes it over as attempt 2 and finishes it.
    await waitFor(async () => (await readLog(survivor, 'shop', 'crash')).some((e) => e.phase === 'done'), { timeoutMs: 20_000, what: 'the redelivery' });
    const entries = await readLog(survivor, 'shop', 'crash');
    expect(entries.map((e) => [e.phase, e.attempt, e.invocationId])).toEqual([
      ['start', 1, invocationId],
      ['start', 2, invocationId],
      ['done', 2, invocationId],
    ]);
    if (owner === first) first = undefined;
    else second = undefined;
  }, 60_000);
});

/** The core that holds the crash message: the consumer name in the group's pending list ends with its pid. */
async function whoRuns(prefix: string, a: UhlpProcess, b: UhlpProcess): Promise<UhlpProcess> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    const pending = (await redis.xpending(`${prefix}queue:shop:crash`, 'uhlp', '-', '+', '10')) as Array<[string, string, number, number]>;
    const consumer = pending[0]?.[1] ?? '';
    return consumer.endsWith(`-${a.child.pid}`) ? a : b;
  } finally {
    redis.disconnect();
  }
}
