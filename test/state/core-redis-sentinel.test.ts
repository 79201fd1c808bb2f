/**
 * The core on Redis Sentinel (`--state redis+sentinel://`): it starts on the
 * master the sentinels name, says at start what the guarantees still lack, and
 * follows a `SENTINEL FAILOVER`, keeping a once-only answer given before it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSentinelTopology } from '../helpers/redis-sentinel-topology.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

let topology: RedisSentinelTopology;
let core: UhlpProcess;

beforeAll(async () => {
  topology = await RedisSentinelTopology.start();
  // Both replicas acknowledge each kept write: what a planned failover needs (docs/runtime-state.md#sentinel).
  core = await startUhlpDev(copyFixture('stateful'), ['--state', topology.url], 60_000, undefined, { UHLP_STATE_REPLICA_ACKS: '2' });
}, 120_000);
afterAll(async () => {
  await core?.stop();
  await topology?.stop();
});

async function mint(key: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${core.url}/counter/mint`, { method: 'POST', body: 'x', headers: { 'Idempotency-Key': key } });
  return { status: response.status, json: await response.json() };
}

describe('core on Redis Sentinel', () => {
  it('warns about nothing the guarantees need when the topology has it', () => {
    expect(core.stdout() + core.stderr()).not.toMatch(/UHLP_STATE_(NOT_PERSISTED|FSYNC_RELAXED|REPLICA_ACKS_OFF|MIN_REPLICAS_OFF|REPLICAS_SHORT|UNCHECKED)/);
  });

  it('follows SENTINEL FAILOVER within 30 s and replays a once-only answer given before it', async () => {
    const before = await mint('before-failover');
    expect(before.status).toBe(200);
    const old = await topology.masterPort();
    const started = Date.now();
    expect(await topology.failover()).not.toBe(old);
    let last: unknown;
    let attempt = 0;
    await waitFor(
      async () => {
        // A fresh key each time: a claim refused for want of replicas stays in flight under its key.
        attempt += 1;
        const answer = await mint(`after-failover-${attempt}`);
        last = answer;
        return answer.status === 200;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'a write on the new master' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last answer ${JSON.stringify(last)}`);
    });
    const resumed = Date.now() - started;
    console.info(`core: writes again ${resumed} ms after SENTINEL FAILOVER`);
    expect(resumed).toBeLessThan(30_000);
    const replay = await mint('before-failover');
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(before.json);
    expect(((await fetch(`${core.url}/readyz`).then((r) => r.json())) as { state: unknown }).state).toEqual({ kind: 'redis', ok: true });
    // The metrics saw it: the runtime client came back to another master, and commands are timed.
    const metrics = await fetch(`${core.url}/metrics`).then((r) => r.text());
    const value = (series: string): number => Number(new RegExp(`^${series.replace(/[{}]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
    expect(value('uhlp_redis_failovers_total{client="runtime"}')).toBeGreaterThanOrEqual(1);
    expect(value('uhlp_redis_reconnects_total{client="runtime"}')).toBeGreaterThanOrEqual(1);
    expect(value('uhlp_redis_command_duration_seconds_count{client="runtime"}')).toBeGreaterThan(0);
    expect(value('uhlp_redis_command_errors_total{client="runtime",failure="reply"}')).toBe(0);
  }, 60_000);
});
