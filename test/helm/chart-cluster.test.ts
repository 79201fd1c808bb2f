/**
 * The chart's Redis Cluster values: the `redis+cluster://` URL the core reads
 * (TLS and the checked server name with it), the password from a Secret through
 * the container's own variable, and the refusals of a second state store and
 * of what Cluster does not support.
 */
import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../src/state/redis-url.js';
import { CHART, coreEnv, helm } from './helm-env.js';

describe('redis.external.cluster', () => {
  it('gives the core a rediss+cluster:// URL with its seed nodes, server name and the password from its Secret', async () => {
    const env = await coreEnv([
      'redis.external.cluster.nodes={rc-0.redis:6379,rc-1.redis:6380,rc-2.redis}',
      'redis.external.cluster.auth.existingSecret=redis-auth',
      'redis.external.cluster.auth.secretKey=pw',
      'redis.external.cluster.tls=true',
      'redis.external.cluster.servername=redis.example.internal',
    ]);
    expect(env.find((e) => e.name === 'UHLP_REDIS_PASSWORD')).toEqual({ name: 'UHLP_REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'redis-auth', key: 'pw' } } });
    const state = env.find((e) => e.name === 'UHLP_STATE')!.value!;
    expect(state).toBe('rediss+cluster://:$(UHLP_REDIS_PASSWORD)@rc-0.redis:6379,rc-1.redis:6380,rc-2.redis?servername=redis.example.internal');
    const names = env.map((e) => e.name);
    expect(names.indexOf('UHLP_REDIS_PASSWORD')).toBeLessThan(names.indexOf('UHLP_STATE'));
    expect(parseRedisUrl(state.replace('$(UHLP_REDIS_PASSWORD)', 'p%40ss'))).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'rc-0.redis', port: 6379 },
        { host: 'rc-1.redis', port: 6380 },
        { host: 'rc-2.redis', port: 6379 },
      ],
      tls: true,
      servername: 'redis.example.internal',
      password: 'p@ss',
    });
  });

  it('leaves the password and TLS out when none are set', async () => {
    const env = await coreEnv(['redis.external.cluster.nodes={rc-0:7000}']);
    expect(env.find((e) => e.name === 'UHLP_STATE')?.value).toBe('redis+cluster://rc-0:7000');
    expect(env.map((e) => e.name)).not.toContain('UHLP_REDIS_PASSWORD');
  });

  it('refuses a second state store, replica acks, a server name without TLS, and a malformed node', async () => {
    const cluster = ['--set', 'redis.external.cluster.nodes={rc-0:7000}'];
    for (const other of ['redis.bundled.enabled=true', 'redis.external.url.existingSecret=x', 'redis.external.sentinel.masterName=m']) {
      const both = await helm(['template', 'rel', CHART, ...cluster, '--set', other, '--set', 'redis.external.sentinel.sentinels={s-0}']);
      expect(both.stderr, other).toMatch(/exclusive/);
    }
    const acks = await helm(['template', 'rel', CHART, ...cluster, '--set', 'redis.replicaAcks=1']);
    expect(acks.stderr).toMatch(/replicaAcks must be 0/);
    const servername = await helm(['template', 'rel', CHART, ...cluster, '--set', 'redis.external.cluster.servername=a.example']);
    expect(servername.stderr).toMatch(/servername needs redis.external.cluster.tls/);
    const badNode = await helm(['template', 'rel', CHART, '--set', 'redis.external.cluster.nodes={rc-0:7000/x}']);
    expect(badNode.code).not.toBe(0);
    expect(badNode.stderr).toMatch(/nodes/);
  });
});
