/**
 * The core on Redis (`--state redis://`) survives a real Redis restart: requests
 * that need state fail fast with 503 UHLP_STATE_UNAVAILABLE during the outage
 * (none hangs), the core reconnects by itself, and an answer acknowledged before
 * the restart is still replayed after it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisServerProcess } from '../helpers/redis-server-process.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

let redis: RedisServerProcess;
let core: UhlpProcess;

beforeAll(async () => {
  redis = await RedisServerProcess.create();
  await redis.start();
  core = await startUhlpDev(copyFixture('stateful'), ['--state', redis.url]);
});
afterAll(async () => {
  await core?.stop();
  await redis?.destroy();
});

async function mint(key: string): Promise<{ status: number; json: any; ms: number }> {
  const started = Date.now();
  const response = await fetch(`${core.url}/counter/mint`, { method: 'POST', body: 'x', headers: { 'Idempotency-Key': key } });
  return { status: response.status, json: await response.json(), ms: Date.now() - started };
}

describe('core on Redis across a Redis restart', () => {
  it('fails fast during the outage, reconnects, and keeps what was acknowledged', async () => {
    const before = await mint('before-restart');
    expect(before.status).toBe(200);
    expect(((await fetch(`${core.url}/readyz`).then((r) => r.json())) as { state: unknown }).state).toEqual({ kind: 'redis', ok: true });

    await redis.kill('SIGKILL');
    const during = await mint('during-outage');
    expect(during.status).toBe(503);
    expect(during.json.code).toBe('UHLP_STATE_UNAVAILABLE');
    expect(during.ms).toBeLessThan(1000);
    const ready = await fetch(`${core.url}/readyz`);
    expect(ready.status).toBe(503);
    // A request that needs no state keeps working.
    expect((await fetch(`${core.url}/counter/version`)).status).toBe(200);

    await redis.start();
    await waitFor(async () => (await mint('after-restart')).status === 200, { timeoutMs: 15_000, what: 'reconnect' });
    const replay = await mint('before-restart');
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(before.json);
  });
});
