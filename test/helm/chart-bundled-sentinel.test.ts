/**
 * The chart's bundled Sentinel (`redis.bundled.sentinel`): what it renders (a master and
 * replicas, three sentinels, the core on `redis+sentinel://`), and its start-up step
 * (files/redis-sentinel-init.mjs) run for real: against the sentinels of a loopback
 * topology (test/helpers/redis-sentinel-topology.ts), and the configs it writes started
 * with Debian's redis-server, as the pods start them.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseRedisUrl } from '../../src/state/redis-url.js';
import { freePort } from '../helpers/free-port.js';
import { RedisSentinelTopology, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel-topology.js';
import { REPO_ROOT } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';
import { CHART, helm, helmOk } from './helm-env.js';

const run = promisify(execFile);
const INIT = path.join(REPO_ROOT, 'charts', 'uhlp', 'files', 'redis-sentinel-init.mjs');

type K8sObject = { kind?: string; metadata?: { name?: string }; spec?: any; data?: Record<string, string> } | null;

async function render(values: string[]): Promise<K8sObject[]> {
  const manifest = await helmOk(['template', 'rel', CHART, '-n', 'uhlp-system', ...values.flatMap((value) => ['--set', value])]);
  return parseAllDocuments(manifest).map((document) => document.toJS() as K8sObject);
}

const find = (objects: K8sObject[], kind: string, name: string): any => objects.find((object) => object?.kind === kind && object.metadata?.name === name);

describe('redis.bundled.sentinel in the rendered chart', () => {
  it('renders a master with two replicas, three sentinels, and the core on redis+sentinel://', async () => {
    const objects = await render(['redis.bundled.enabled=true', 'redis.bundled.sentinel.enabled=true', 'redis.bundled.auth.existingSecret=redis-auth', 'redis.replicaAcks=1']);
    const data = find(objects, 'StatefulSet', 'rel-uhlp-redis');
    expect(data.spec.replicas).toBe(3);
    expect(data.spec.template.spec.initContainers.map((c: any) => c.name)).toEqual(['config']);
    expect(data.spec.template.spec.containers[0].args).toEqual(['/conf/redis.conf', '--requirepass', '$(REDIS_PASSWORD)', '--masterauth', '$(REDIS_PASSWORD)']);
    const sentinels = find(objects, 'StatefulSet', 'rel-uhlp-redis-sentinel');
    expect(sentinels.spec.replicas).toBe(3);
    expect(sentinels.spec.template.spec.containers[0].args).toEqual(['/data/sentinel.conf', '--sentinel']);
    // The image the bundled Redis already runs: no other image to build or load.
    expect(sentinels.spec.template.spec.containers[0].image).toBe(data.spec.template.spec.containers[0].image);
    expect(find(objects, 'ConfigMap', 'rel-uhlp-redis-sentinel-init').data['redis-sentinel-init.mjs']).toBe(readFileSync(INIT, 'utf8'));
    expect(find(objects, 'NetworkPolicy', 'rel-uhlp-redis-sentinel')).toBeDefined();

    const env = find(objects, 'Deployment', 'rel-uhlp-core').spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>;
    const state = env.find((e) => e.name === 'UHLP_STATE')!.value!;
    expect(parseRedisUrl(state.replace('$(UHLP_REDIS_PASSWORD)', 'pw'))).toMatchObject({
      kind: 'sentinel',
      masterName: 'uhlp',
      password: 'pw',
      sentinels: [0, 1, 2].map((i) => ({ host: `rel-uhlp-redis-sentinel-${i}.rel-uhlp-redis-sentinel-headless.uhlp-system.svc`, port: 26379 })),
    });
    expect(env.find((e) => e.name === 'UHLP_STATE_REPLICA_ACKS')?.value).toBe('1');
  });

  it('leaves the single bundled Redis as it was without it, and refuses it without the bundled Redis', async () => {
    const objects = await render(['redis.bundled.enabled=true']);
    expect(find(objects, 'StatefulSet', 'rel-uhlp-redis').spec.replicas).toBe(1);
    expect(find(objects, 'StatefulSet', 'rel-uhlp-redis-sentinel')).toBeUndefined();
    const env = find(objects, 'Deployment', 'rel-uhlp-core').spec.template.spec.containers[0].env as Array<{ name: string; value?: string }>;
    expect(env.find((e) => e.name === 'UHLP_STATE')?.value).toBe('redis://rel-uhlp-redis:6379');
    const refused = await helm(['template', 'rel', CHART, '--set', 'redis.bundled.sentinel.enabled=true']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/redis.bundled.sentinel.enabled needs redis.bundled.enabled/);
    const badName = await helm(['template', 'rel', CHART, '--set', 'redis.bundled.enabled=true', '--set', 'redis.bundled.sentinel.enabled=true', '--set', 'redis.bundled.sentinel.masterName=a b']);
    expect(badName.code).not.toBe(0);
  });
});

describe('the bundled Sentinel start-up step, run for real', () => {
  let topology: RedisSentinelTopology;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-sentinel-init-'));
  beforeAll(async () => {
    topology = await RedisSentinelTopology.start();
  }, 60_000);
  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the script as the init container does; returns the config it wrote. */
  const init = async (role: 'data' | 'sentinel', env: Record<string, string>): Promise<string> => {
    const out = path.join(dir, `${role}-${Math.random().toString(36).slice(2)}.conf`);
    await run(process.execPath, [INIT], {
      env: {
        PATH: process.env.PATH,
        UHLP_REDIS_INIT_ROLE: role,
        UHLP_REDIS_INIT_MASTER_NAME: SENTINEL_MASTER_NAME,
        UHLP_REDIS_INIT_OUT: out,
        UHLP_REDIS_INIT_DOWN_AFTER_MS: '200',
        ...env,
      },
    });
    return readFileSync(out, 'utf8');
  };
  const sentinels = (): string => topology.sentinelPorts.map((port) => `127.0.0.1:${port}`).join(',');

  it('makes a data pod a replica of the master the sentinels name, and the first pod master when none answers', async () => {
    const master = await topology.masterPort();
    const replica = await init('data', { UHLP_REDIS_INIT_ME: 'redis-2.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: sentinels(), UHLP_REDIS_INIT_PORT: '6379', UHLP_REDIS_INIT_REDIS_PORT: String(master) });
    expect(replica).toContain(`replicaof 127.0.0.1 ${master}\n`);
    expect(replica).toContain('min-replicas-to-write 1\n');
    const closed = `127.0.0.1:${await freePort()}`;
    const first = await init('data', { UHLP_REDIS_INIT_ME: 'redis-0.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: closed, UHLP_REDIS_INIT_PORT: '6379' });
    expect(first).not.toMatch(/replicaof/);
    const second = await init('data', { UHLP_REDIS_INIT_ME: 'redis-1.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: closed, UHLP_REDIS_INIT_PORT: '6379' });
    expect(second).toContain('replicaof redis-0.local 6379\n');
  });

  it('writes configs that redis-server starts from: a replica that syncs from the master, and a sentinel that finds it', async () => {
    const master = await topology.masterPort();
    const port = await freePort();
    const replicaConf = (await init('data', { UHLP_REDIS_INIT_ME: 'localhost', UHLP_REDIS_INIT_FIRST: 'nobody.local', UHLP_REDIS_INIT_SENTINELS: sentinels(), UHLP_REDIS_INIT_PORT: String(port), UHLP_REDIS_INIT_REDIS_PORT: String(master) }))
      // The pod's /data is its own volume; here, a temp dir.
      .replace('dir /data', `dir ${dir}`);
    const sentinelPort = await freePort();
    const sentinelConf = (await init('sentinel', { UHLP_REDIS_INIT_ME: 'localhost', UHLP_REDIS_INIT_FIRST: 'nobody.local', UHLP_REDIS_INIT_SENTINELS: sentinels(), UHLP_REDIS_INIT_PORT: String(sentinelPort), UHLP_REDIS_INIT_REDIS_PORT: String(master), UHLP_REDIS_INIT_PASSWORD: 'unused' })).replace('dir /data', `dir ${dir}`);
    expect(sentinelConf).toContain(`sentinel monitor ${SENTINEL_MASTER_NAME} 127.0.0.1 ${master} 2\n`);
    const files = { replica: path.join(dir, 'replica.conf'), sentinel: path.join(dir, 'sentinel.conf') };
    const { writeFileSync } = await import('node:fs');
    writeFileSync(files.replica, replicaConf);
    writeFileSync(files.sentinel, sentinelConf);
    const replica = spawn('redis-server', [files.replica], { stdio: 'ignore' });
    const sentinel = spawn('redis-server', [files.sentinel, '--sentinel'], { stdio: 'ignore' });
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    const sentinelClient = new Redis({ host: '127.0.0.1', port: sentinelPort, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
    client.on('error', () => {});
    sentinelClient.on('error', () => {});
    try {
      await waitFor(async () => /master_link_status:up/.test(await client.info('replication').catch(() => '')), { timeoutMs: 20_000, intervalMs: 100, what: 'the replica linked to the master' });
      await waitFor(
        async () => {
          const named = (await sentinelClient.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', SENTINEL_MASTER_NAME).catch(() => null)) as string[] | null;
          return named?.[1] === String(master);
        },
        { timeoutMs: 20_000, intervalMs: 100, what: 'the new sentinel naming the master' },
      );
    } finally {
      client.disconnect();
      sentinelClient.disconnect();
      for (const child of [replica, sentinel]) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        process.kill(child.pid!, 'SIGKILL');
        await exited;
      }
    }
  }, 60_000);

  it('keeps the config a restarted sentinel rewrote', async () => {
    const out = path.join(dir, 'kept.conf');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(out, 'what the sentinel learnt\n');
    await run(process.execPath, [INIT], {
      env: { PATH: process.env.PATH, UHLP_REDIS_INIT_ROLE: 'sentinel', UHLP_REDIS_INIT_ME: 's-0', UHLP_REDIS_INIT_FIRST: 'r-0', UHLP_REDIS_INIT_SENTINELS: sentinels(), UHLP_REDIS_INIT_MASTER_NAME: 'x', UHLP_REDIS_INIT_OUT: out, UHLP_REDIS_INIT_PORT: '26379' },
    });
    expect(readFileSync(out, 'utf8')).toBe('what the sentinel learnt\n');
  });
});
