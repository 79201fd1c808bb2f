/**
 * TLS to Redis Sentinel and to the Redis behind it (`rediss+sentinel://…?caFile=`):
 * Debian's redis-server and its sentinels started with TLS only (`port 0`,
 * `tls-port`, certificates from a private CA made by openssl here), so anything
 * that works went through TLS. A core reaches the master through the TLS
 * sentinels, keeps a once-only answer and follows a `SENTINEL FAILOVER`; a
 * client checking against another CA, or speaking plain TCP, gets nothing.
 * Fails, never skips, without redis-server or openssl.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRuntimeStore } from '../../src/state/create-runtime-store.js';
import { RedisSentinelTopology, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel-topology.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/test-certificates.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { uniqueKeyPrefix } from '../helpers/redis-url.js';
import { waitFor } from '../helpers/wait-for.js';
import { codeOf } from './store-fixture.js';

let certificates: TestCertificates;
let topology: RedisSentinelTopology;
let core: UhlpProcess;

beforeAll(async () => {
  // Debian's redis-server is built with TLS; one without it would refuse tls-port below, but say so first.
  expect(execFileSync('redis-server', ['--version'], { encoding: 'utf8' })).toMatch(/^Redis server v=/);
  certificates = makeTestCertificates();
  topology = await RedisSentinelTopology.start({ tls: certificates });
  core = await startUhlpDev(copyFixture('stateful'), ['--state', topology.url], 90_000, undefined, { UHLP_STATE_REPLICA_ACKS: '2' });
}, 180_000);
afterAll(async () => {
  await core?.stop();
  await topology?.stop();
  if (certificates) rmSync(certificates.dir, { recursive: true, force: true });
});

async function mint(key: string): Promise<{ status: number; json: any }> {
  const response = await fetch(`${core.url}/counter/mint`, { method: 'POST', body: 'x', headers: { 'Idempotency-Key': key } });
  return { status: response.status, json: await response.json() };
}

describe('TLS to Redis Sentinel and its master', () => {
  it('serves a core through the TLS sentinels and follows SENTINEL FAILOVER, keeping a once-only answer', async () => {
    expect(topology.url).toMatch(/^rediss\+sentinel:\/\/.*\?caFile=/);
    expect(((await fetch(`${core.url}/readyz`).then((r) => r.json())) as { state: unknown }).state).toEqual({ kind: 'redis', ok: true });
    const before = await mint('before-failover');
    expect(before.status).toBe(200);
    // The once-only record is on the master, which listens with TLS only.
    const master = topology.client(await topology.masterPort());
    try {
      await master.connect();
      expect((await master.keys('*before-failover*')).length).toBeGreaterThan(0);
    } finally {
      master.disconnect();
    }

    const old = await topology.masterPort();
    expect(await topology.failover()).not.toBe(old);
    let attempt = 0;
    await waitFor(
      async () => {
        attempt += 1;
        return (await mint(`after-failover-${attempt}`)).status === 200;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'a write on the new master, through TLS' },
    );
    const replay = await mint('before-failover');
    expect(replay.status).toBe(200);
    expect(replay.json).toEqual(before.json);
  }, 90_000);

  it('refuses sentinels whose certificate another CA signed: the store never becomes ready', async () => {
    const url = topology.url.replace(/caFile=[^&]*/, `caFile=${encodeURIComponent(certificates.otherCaFile)}`);
    expect(await codeOf(createRuntimeStore({ state: url, keyPrefix: uniqueKeyPrefix('tls-other-ca'), connectWaitMs: 3000 }))).toMatchObject({ code: 'UHLP_STATE_UNAVAILABLE' });
  }, 30_000);

  it('gets nothing from the TLS sentinels over plain TCP (redis+sentinel://)', async () => {
    const plain = `redis+sentinel://${topology.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',')}/${SENTINEL_MASTER_NAME}`;
    expect(await codeOf(createRuntimeStore({ state: plain, keyPrefix: uniqueKeyPrefix('tls-plain'), connectWaitMs: 3000 }))).toMatchObject({ code: 'UHLP_STATE_UNAVAILABLE' });
  }, 30_000);

  it('checks the certificate against the CA file given, with the system CAs not needed', async () => {
    const store = await createRuntimeStore({ state: topology.url, keyPrefix: uniqueKeyPrefix('tls-store'), connectWaitMs: 10_000 });
    try {
      await store.kv.kvSet('k', 'v');
      expect(await store.kv.kvGet('k')).toBe('v');
    } finally {
      await store.close();
    }
  }, 30_000);
});
