/**
 * The chart's Sentinel values: the `redis+sentinel://` URL the core reads, with
 * passwords from Secrets through the container's own variables, the replica
 * acknowledgements, TLS with a CA from a Secret mounted where the URL's
 * `caFile` points, and the refusals of a second state store.
 */
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { parseRedisUrl } from '../../src/state/redis-url.js';
import { CHART, coreEnv, helm, helmOk } from './helm-env.js';

/** The core container and its pod's volumes, as `helm template` renders them with these `--set` values. */
async function corePod(values: string[]): Promise<{ container: any; volumes: any[] }> {
  const manifest = await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', ...values.flatMap((value) => ['--set', value])]);
  const core = parseAllDocuments(manifest)
    .map((document) => document.toJS() as { kind?: string; metadata?: { name?: string }; spec?: any } | null)
    .find((object) => object?.kind === 'Deployment' && object.metadata?.name === 'rel-uhlp-core')!;
  return { container: core.spec.template.spec.containers[0], volumes: core.spec.template.spec.volumes ?? [] };
}

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

  it('gives the core a rediss+sentinel:// URL whose caFile is the CA mounted from its Secret, and the server name', async () => {
    const { container, volumes } = await corePod([
      'redis.external.sentinel.masterName=uhlp',
      'redis.external.sentinel.sentinels={s-0.redis:26380,s-1.redis:26380}',
      'redis.external.sentinel.sentinelAuth.existingSecret=sentinel-auth',
      'redis.external.sentinel.tls=true',
      'redis.external.sentinel.servername=redis.example.internal',
      'redis.external.sentinel.ca.existingSecret=redis-ca',
      'redis.external.sentinel.ca.secretKey=root.pem',
    ]);
    const state = (container.env as Array<{ name: string; value?: string }>).find((e) => e.name === 'UHLP_STATE')!.value!;
    expect(state).toBe(
      'rediss+sentinel://s-0.redis:26380,s-1.redis:26380/uhlp/0?sentinelPassword=$(UHLP_REDIS_SENTINEL_PASSWORD)&servername=redis.example.internal&caFile=/etc/uhlp/redis-ca/root.pem',
    );
    expect(parseRedisUrl(state.replace('$(UHLP_REDIS_SENTINEL_PASSWORD)', 's3cret'))).toMatchObject({
      kind: 'sentinel',
      tls: true,
      servername: 'redis.example.internal',
      caFile: '/etc/uhlp/redis-ca/root.pem',
      sentinelPassword: 's3cret',
    });
    // The file the URL names is the Secret's key, mounted read-only.
    expect(container.volumeMounts).toContainEqual({ name: 'redis-ca', mountPath: '/etc/uhlp/redis-ca', readOnly: true });
    expect(volumes).toContainEqual({ name: 'redis-ca', secret: { secretName: 'redis-ca', items: [{ key: 'root.pem', path: 'root.pem' }] } });
  });

  it('uses the image trust store with TLS and no CA, and mounts no CA without TLS', async () => {
    const trustStore = await corePod(['redis.external.sentinel.masterName=uhlp', 'redis.external.sentinel.sentinels={s-0}', 'redis.external.sentinel.tls=true']);
    expect((trustStore.container.env as Array<{ name: string; value?: string }>).find((e) => e.name === 'UHLP_STATE')?.value).toBe('rediss+sentinel://s-0/uhlp/0');
    expect(trustStore.volumes.map((volume: { name: string }) => volume.name)).not.toContain('redis-ca');
    const cluster = await corePod(['redis.external.cluster.nodes={rc-0:7000}', 'redis.external.cluster.tls=true', 'redis.external.cluster.ca.existingSecret=cluster-ca']);
    expect((cluster.container.env as Array<{ name: string; value?: string }>).find((e) => e.name === 'UHLP_STATE')?.value).toBe('rediss+cluster://rc-0:7000?caFile=/etc/uhlp/redis-ca/ca.crt');
    expect(cluster.volumes).toContainEqual({ name: 'redis-ca', secret: { secretName: 'cluster-ca', items: [{ key: 'ca.crt', path: 'ca.crt' }] } });
  });

  it('refuses a CA or a server name without TLS', async () => {
    const sentinel = ['--set', 'redis.external.sentinel.masterName=uhlp', '--set', 'redis.external.sentinel.sentinels={s-0:26379}'];
    const ca = await helm(['template', 'rel', CHART, ...sentinel, '--set', 'redis.external.sentinel.ca.existingSecret=redis-ca']);
    expect(ca.stderr).toMatch(/redis.external.sentinel.ca needs redis.external.sentinel.tls/);
    const servername = await helm(['template', 'rel', CHART, ...sentinel, '--set', 'redis.external.sentinel.servername=a.example']);
    expect(servername.stderr).toMatch(/servername needs redis.external.sentinel.tls/);
    const clusterCa = await helm(['template', 'rel', CHART, '--set', 'redis.external.cluster.nodes={rc-0}', '--set', 'redis.external.cluster.ca.existingSecret=x']);
    expect(clusterCa.stderr).toMatch(/redis.external.cluster.ca needs redis.external.cluster.tls/);
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
