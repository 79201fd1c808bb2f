/**
 * The chart's bundled Sentinel (`redis.bundled.sentinel`): what it renders (a master and
 * replicas, three sentinels, the core on `redis+sentinel://`), and its start-up step
 * (files/redis-sentinel-init.mjs) run for real: against the sentinels of a loopback
 * topology (test/helpers/redis-sentinel-topology.ts), and the configs it writes started
 * with Debian's redis-server, as the pods start them.
 */
import net from 'node:net';
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { parseRedisUrl } from '../../src/state/redis-url.js';
import { freePort } from '../helpers/free-port.js';
import { RedisSentinelTopology, SENTINEL_MASTER_NAME } from '../helpers/redis-sentinel-topology.js';
import { makeTestCertificates, type TestCertificates } from '../helpers/test-certificates.js';
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

describe('redis.bundled.tls in the rendered chart', () => {
  const tlsValues = ['redis.bundled.enabled=true', 'redis.bundled.sentinel.enabled=true', 'redis.bundled.tls.enabled=true', 'redis.bundled.tls.existingSecret=redis-tls'];

  it('mounts the certificate in every pod, probes over TLS, and gives the core rediss+sentinel:// with the CA', async () => {
    const objects = await render([...tlsValues, 'redis.bundled.tls.caKey=bundle.pem']);
    for (const [name, port, config] of [['rel-uhlp-redis', '6379', '/conf'], ['rel-uhlp-redis-sentinel', '26379', '/data']] as const) {
      const pod = find(objects, 'StatefulSet', name).spec.template.spec;
      expect(pod.volumes.find((v: any) => v.name === 'tls').secret).toEqual({
        secretName: 'redis-tls',
        defaultMode: 0o440,
        items: [{ key: 'tls.crt', path: 'tls.crt' }, { key: 'tls.key', path: 'tls.key' }, { key: 'bundle.pem', path: 'ca.crt' }],
      });
      for (const container of [pod.initContainers[0], pod.containers[0]]) expect(container.volumeMounts).toContainEqual({ name: 'tls', mountPath: '/tls', readOnly: true });
      expect(pod.initContainers[0].env).toContainEqual({ name: 'UHLP_REDIS_INIT_TLS_DIR', value: '/tls' });
      expect(pod.initContainers[0].volumeMounts).toContainEqual({ name: expect.any(String), mountPath: config });
      expect(pod.containers[0].readinessProbe.exec.command).toEqual(['/usr/bin/redis-cli', '-e', '-p', port, '--tls', '--cacert', '/tls/ca.crt', 'ping']);
    }
    const core = find(objects, 'Deployment', 'rel-uhlp-core').spec.template.spec;
    const state = core.containers[0].env.find((e: any) => e.name === 'UHLP_STATE').value as string;
    expect(parseRedisUrl(state)).toMatchObject({ kind: 'sentinel', tls: true, masterName: 'uhlp' });
    expect(state).toMatch(/^rediss\+sentinel:\/\/.*\?caFile=\/etc\/uhlp\/redis-ca\/bundle\.pem$/);
    expect(core.volumes.find((v: any) => v.name === 'redis-ca').secret).toEqual({ secretName: 'redis-tls', items: [{ key: 'bundle.pem', path: 'bundle.pem' }] });
    expect(core.containers[0].volumeMounts).toContainEqual({ name: 'redis-ca', mountPath: '/etc/uhlp/redis-ca', readOnly: true });
  });

  it('renders no TLS without it, and refuses it without the bundled Sentinel or without a Secret', async () => {
    const plain = await render(['redis.bundled.enabled=true', 'redis.bundled.sentinel.enabled=true']);
    const pod = find(plain, 'StatefulSet', 'rel-uhlp-redis').spec.template.spec;
    expect(pod.volumes.map((v: any) => v.name)).not.toContain('tls');
    expect(pod.containers[0].readinessProbe.exec.command).toEqual(['/usr/bin/redis-cli', '-e', '-p', '6379', 'ping']);
    expect(find(plain, 'Deployment', 'rel-uhlp-core').spec.template.spec.volumes.map((v: any) => v.name)).not.toContain('redis-ca');
    const noSentinel = await helm(['template', 'rel', CHART, '--set', 'redis.bundled.enabled=true', '--set', 'redis.bundled.tls.enabled=true', '--set', 'redis.bundled.tls.existingSecret=x']);
    expect(noSentinel.code).not.toBe(0);
    expect(noSentinel.stderr).toMatch(/redis.bundled.tls.enabled needs redis.bundled.sentinel.enabled/);
    const noSecret = await helm(['template', 'rel', CHART, ...tlsValues.slice(0, 3).flatMap((value) => ['--set', value])]);
    expect(noSecret.code).not.toBe(0);
    expect(noSecret.stderr).toMatch(/redis.bundled.tls.enabled needs redis.bundled.tls.existingSecret/);
    const misspelt = await helm(['template', 'rel', CHART, ...tlsValues.flatMap((value) => ['--set', value]), '--set', 'redis.bundled.tls.caFile=x']);
    expect(misspelt.code).not.toBe(0);
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
    expect(replica).toContain('repl-diskless-sync-delay 0\n');
    const closed = `127.0.0.1:${await freePort()}`;
    const first = await init('data', { UHLP_REDIS_INIT_ME: 'redis-0.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: closed, UHLP_REDIS_INIT_PORT: '6379' });
    expect(first).not.toMatch(/replicaof/);
    const second = await init('data', { UHLP_REDIS_INIT_ME: 'redis-1.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: closed, UHLP_REDIS_INIT_PORT: '6379' });
    expect(second).toContain('replicaof redis-0.local 6379\n');
  });

  it('brings a restarted master back as a replica: it waits for the sentinels to promote one rather than start empty over their data', async () => {
    const old = await topology.masterPort();
    // The pod the sentinels name master, started again with an empty data directory (an emptyDir) before they saw it
    // go: named, with replicas known. Its old process dies 3 s later, past the 2.2 s the step used to wait.
    const restarted = init('data', { UHLP_REDIS_INIT_ME: '127.0.0.1', UHLP_REDIS_INIT_FIRST: '127.0.0.1', UHLP_REDIS_INIT_SENTINELS: sentinels(), UHLP_REDIS_INIT_PORT: String(old), UHLP_REDIS_INIT_REDIS_PORT: String(old), UHLP_REDIS_INIT_FAILOVER_TIMEOUT_MS: '30000' });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const promoted = await topology.killMaster();
    expect(promoted).not.toBe(old);
    expect(await restarted).toContain(`replicaof 127.0.0.1 ${promoted}\n`);
  }, 90_000);

  it("takes no config line from a sentinel's answer: a master name holding a newline or a space is not taken", async () => {
    for (const host of ['evil\ndir /etc', 'evil dir', 'evil\r\nx']) {
      // A sentinel that answers GET-MASTER-ADDR-BY-NAME with a hostile host.
      const fake = net.createServer((socket) => socket.on('data', () => socket.end(`*2\r\n$${Buffer.byteLength(host)}\r\n${host}\r\n$4\r\n6379\r\n`)));
      await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
      try {
        const address = `127.0.0.1:${(fake.address() as net.AddressInfo).port}`;
        const config = await init('data', { UHLP_REDIS_INIT_ME: 'redis-1.local', UHLP_REDIS_INIT_FIRST: 'redis-0.local', UHLP_REDIS_INIT_SENTINELS: address, UHLP_REDIS_INIT_PORT: '6379' });
        expect(config).toContain('replicaof redis-0.local 6379\n');
        expect(config).not.toContain('evil');
        expect(config.match(/^dir /gm)).toHaveLength(1);
      } finally {
        fake.close();
      }
    }
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

describe('the bundled Sentinel start-up step over TLS, run for real', () => {
  let topology: RedisSentinelTopology;
  let certificates: TestCertificates;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-sentinel-init-tls-'));
  // The Secret's keys as the pods mount them (uhlp.redis.tlsVolume).
  const tlsDir = path.join(dir, 'tls');
  beforeAll(async () => {
    certificates = makeTestCertificates();
    mkdirSync(tlsDir);
    copyFileSync(certificates.certFile, path.join(tlsDir, 'tls.crt'));
    copyFileSync(certificates.keyFile, path.join(tlsDir, 'tls.key'));
    copyFileSync(certificates.caFile, path.join(tlsDir, 'ca.crt'));
    topology = await RedisSentinelTopology.start({ tls: certificates });
  }, 60_000);
  afterAll(async () => {
    await topology?.stop();
    rmSync(dir, { recursive: true, force: true });
    if (certificates) rmSync(certificates.dir, { recursive: true, force: true });
  });

  it('asks the TLS-only sentinels for the master and writes a TLS-only replica that redis-server starts and syncs over TLS', async () => {
    const master = await topology.masterPort();
    const port = await freePort();
    const out = path.join(dir, 'replica.conf');
    await run(process.execPath, [INIT], {
      env: {
        PATH: process.env.PATH,
        UHLP_REDIS_INIT_ROLE: 'data',
        UHLP_REDIS_INIT_MASTER_NAME: SENTINEL_MASTER_NAME,
        UHLP_REDIS_INIT_OUT: out,
        UHLP_REDIS_INIT_ME: 'localhost',
        UHLP_REDIS_INIT_FIRST: 'nobody.local',
        UHLP_REDIS_INIT_SENTINELS: topology.sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
        UHLP_REDIS_INIT_PORT: String(port),
        UHLP_REDIS_INIT_REDIS_PORT: String(master),
        UHLP_REDIS_INIT_TLS_DIR: tlsDir,
      },
    });
    const config = readFileSync(out, 'utf8');
    // Found through the sentinels (over TLS): not the first pod the step falls back to.
    expect(config).toContain(`replicaof 127.0.0.1 ${master}\n`);
    for (const line of ['port 0', `tls-port ${port}`, `tls-ca-cert-file ${tlsDir}/ca.crt`, 'tls-replication yes', 'tls-auth-clients no']) expect(config).toContain(`${line}\n`);
    writeFileSync(out, config.replace('dir /data', `dir ${dir}`));
    const replica = spawn('redis-server', [out], { stdio: 'ignore' });
    const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => 100, tls: { ca: readFileSync(certificates.caFile) } });
    client.on('error', () => {});
    try {
      await waitFor(async () => /master_link_status:up/.test(await client.info('replication').catch(() => '')), { timeoutMs: 20_000, intervalMs: 100, what: 'the TLS replica linked to the master' });
    } finally {
      client.disconnect();
      const exited = new Promise((resolve) => replica.once('exit', resolve));
      process.kill(replica.pid!, 'SIGKILL');
      await exited;
    }
  }, 60_000);

  it('finds no master through TLS sentinels whose certificate another CA signed, and falls back to the first pod', async () => {
    const otherDir = path.join(dir, 'other');
    mkdirSync(otherDir);
    for (const name of ['tls.crt', 'tls.key']) copyFileSync(path.join(tlsDir, name), path.join(otherDir, name));
    copyFileSync(certificates.otherCaFile, path.join(otherDir, 'ca.crt'));
    const out = path.join(dir, 'untrusted.conf');
    await run(process.execPath, [INIT], {
      env: {
        PATH: process.env.PATH,
        UHLP_REDIS_INIT_ROLE: 'data',
        UHLP_REDIS_INIT_MASTER_NAME: SENTINEL_MASTER_NAME,
        UHLP_REDIS_INIT_OUT: out,
        UHLP_REDIS_INIT_ME: 'redis-1.local',
        UHLP_REDIS_INIT_FIRST: 'redis-0.local',
        UHLP_REDIS_INIT_SENTINELS: topology.sentinelPorts.map((p) => `127.0.0.1:${p}`).join(','),
        UHLP_REDIS_INIT_PORT: '6379',
        UHLP_REDIS_INIT_TLS_DIR: otherDir,
      },
    });
    expect(readFileSync(out, 'utf8')).toContain('replicaof redis-0.local 6379\n');
  });
});
