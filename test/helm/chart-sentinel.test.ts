/**
 * The chart's Sentinel values: the `redis+sentinel://` URL the core reads, with
 * passwords from Secrets through the container's own variables, the replica
 * acknowledgements, and the refusals of a second state store.
 */
import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../src/state/redis-url.js';
import { CHART, coreEnv, helm } from './helm-env.js';

describe('redis.external.sentinel', () => {
  it('gives the core a redis+sentinel:// URL, passwords from their Secrets, and the replica acks', async () => {
    const env = await coreEnv([
      'redis.external.sentinel.masterName=uhlp',
      'redis.external.sentinel.sentinels={s-0.redis:26379,s-1.redis:26379,s-2.redis}',
      'redis.external.sentinel.db=2',
      'redis.external.sentinel.auth.existingSecret=redis-auth',
      'redis.external.sentinel.sentinelAuth.existingSecret=sentinel-auth',
      'redis.external.sentinel.sentinelAuth.secretKey=pw',
      'redis.replicaAcks=1',
      'redis.replicaAckTimeoutMs=500',
    ]);
    expect(env.find((e) => e.name === 'UHLP_REDIS_PASSWORD')).toEqual({ name: 'UHLP_REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'password' } } });
    expect(env.find((e) => e.name === 'UHLP_REDIS_SENTINEL_PASSWORD')).toEqual({ name: 'UHLP_REDIS_SENTINEL_PASSWORD', valueFrom: { secretKeyRef: { name: 'sentinel-auth', key: 'pw' } } });
    const state = env.find((e) => e.name === 'UHLP_STATE')!.value!;
    expect(state).toBe('redis+sentinel://:$(UHLP_REDIS_PASSWORD)@s-0.redis:26379,s-1.redis:26379,s-2.redis/uhlp/2?sentinelPassword=$(UHLP_REDIS_SENTINEL_PASSWORD)');
    // The variables come before UHLP_STATE, so Kubernetes puts their values in; the core then parses what it gets.
    const names = env.map((e) => e.name);
    expect(names.indexOf('UHLP_REDIS_PASSWORD')).toBeLessThan(names.indexOf('UHLP_STATE'));
    expect(names.indexOf('UHLP_REDIS_SENTINEL_PASSWORD')).toBeLessThan(names.indexOf('UHLP_STATE'));
    const substituted = state.replace('$(UHLP_REDIS_PASSWORD)', 'p%40ss').replace('$(UHLP_REDIS_SENTINEL_PASSWORD)', 's3cret');
    expect(parseRedisUrl(substituted)).toMatchObject({ kind: 'sentinel', masterName: 'uhlp', db: 2, password: 'p@ss', sentinelPassword: 's3cret', sentinels: [{ host: 's-0.redis', port: 26379 }, { host: 's-1.redis', port: 26379 }, { host: 's-2.redis', port: 26379 }] });
    expect(env.find((e) => e.name === 'UHLP_STATE_REPLICA_ACKS')?.value).toBe('1');
    expect(env.find((e) => e.name === 'UHLP_STATE_REPLICA_ACK_TIMEOUT_MS')?.value).toBe('500');
  });

  it('leaves passwords and replica acks out when none are set', async () => {
    const env = await coreEnv(['redis.external.sentinel.masterName=uhlp', 'redis.external.sentinel.sentinels={s-0:26379}']);
    expect(env.find((e) => e.name === 'UHLP_STATE')?.value).toBe('redis+sentinel://s-0:26379/uhlp/0');
    expect(env.map((e) => e.name)).not.toContain('UHLP_REDIS_PASSWORD');
    expect(env.map((e) => e.name)).not.toContain('UHLP_STATE_REPLICA_ACKS');
  });

  it('refuses a second state store, no sentinels, and a malformed sentinel or master name', async () => {
    const sentinel = ['--set', 'redis.external.sentinel.masterName=uhlp', '--set', 'redis.external.sentinel.sentinels={s-0:26379}'];
    const withBundled = await helm(['template', 'rel', CHART, ...sentinel, '--set', 'redis.bundled.enabled=true']);
    expect(withBundled.stderr).toMatch(/exclusive/);
    const withUrl = await helm(['template', 'rel', CHART, ...sentinel, '--set', 'redis.external.url.existingSecret=x']);
    expect(withUrl.stderr).toMatch(/exclusive/);
    const none = await helm(['template', 'rel', CHART, '--set', 'redis.external.sentinel.masterName=uhlp']);
    expect(none.stderr).toMatch(/needs redis.external.sentinel.sentinels/);
    const badHost = await helm(['template', 'rel', CHART, '--set', 'redis.external.sentinel.masterName=uhlp', '--set', 'redis.external.sentinel.sentinels={s-0:26379/x}']);
    expect(badHost.code).not.toBe(0);
    expect(badHost.stderr).toMatch(/sentinels/);
    const badName = await helm(['template', 'rel', CHART, '--set', 'redis.external.sentinel.masterName=a b', '--set', 'redis.external.sentinel.sentinels={s-0}']);
    expect(badName.code).not.toBe(0);
    expect(badName.stderr).toMatch(/masterName/);
  });
});
