/**
 * The Docker driver on the real engine, beyond the shared driver suite:
 * hardening as `docker inspect` shows it and as a script inside feels it, the
 * loopback-published network mode, OOM told apart from a timeout, adoption after
 * a restart, and nothing left behind.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import { silentLogger } from '../../src/logger.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import { DockerDriver } from '../../src/sandbox/docker-driver.js';
import { removeInstanceContainers } from '../../src/sandbox/remove-instance-containers.js';
import type { SandboxEndpoint, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { waitFor } from '../helpers/wait-for.js';
import { suitePool } from '../sandbox/driver-suite.js';
import { containersOf, docker, sweep, testImages, uniqueInstanceId } from './docker-env.js';

const REVISION = 'b1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0';
const MiB = 1024 * 1024;

function makeDefinitions(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-docker-test-'));
  chmodSync(root, 0o755);
  const scripts = path.join(root, REVISION, 'scripts');
  mkdirSync(scripts, { recursive: true });
  writeFileSync(
    path.join(scripts, 'probe.mjs'),
    [
      "import cp from 'node:child_process';",
      "import fs from 'node:fs';",
      "import os from 'node:os';",
      'const attempt = (fn) => { try { fn(); return "ok"; } catch (error) { return error.code; } };',
      'export const inside = () => ({',
      '  uid: process.getuid(),',
      "  writeRoot: attempt(() => fs.writeFileSync('/x', 'y')),",
      "  writeTmp: attempt(() => fs.writeFileSync('/tmp/x', 'y')),",
      "  writeWork: attempt(() => fs.writeFileSync('/work/tmp/x', 'y')),",
      "  spawn: attempt(() => cp.execFileSync('/usr/local/bin/node', ['-e', '1'])),",
      "  writeDefinitions: attempt(() => fs.writeFileSync('/definitions/x', 'y')),",
      '  interfaces: Object.keys(os.networkInterfaces()).sort(),',
      '});',
      // Buffers live outside the V8 heap: only the container memory limit stops them.
      'export const offHeap = () => { const keep = []; for (;;) keep.push(Buffer.alloc(4 * 1024 * 1024, 1)); };',
      'export const spin = () => { for (;;) {} };',
      'export const hello = () => ({ hello: "docker" });',
      'export const shout = () => { console.log("hello from the sandbox"); console.error("and its stderr"); return {}; };',
    ].join('\n'),
  );
  return root;
}

function body(requestId: string, fn: string): string {
  const request: ExecuteRequest = {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'probe', payload: {} } },
    context: {
      appId: 'probe',
      componentId: fn,
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision: REVISION, script: 'scripts/probe.mjs', function: fn },
    },
  };
  return JSON.stringify(request);
}

async function call(endpoint: SandboxEndpoint, fn: string): Promise<Record<string, unknown>> {
  const client = new SandboxClient(endpoint);
  try {
    const response = await client.execute(body(`r-${fn}`, fn), `r-${fn}`, 5000);
    expect(response.status).toBe(200);
    return (JSON.parse(response.body.toString()) as { data: Record<string, unknown> }).data;
  } finally {
    client.close();
  }
}

describe('docker driver on the real engine', () => {
  const instanceId = uniqueInstanceId('driver');
  let image: string;
  let definitionsRoot: string;
  let driver: DockerDriver;

  function spec(overrides: Partial<SandboxSpec> = {}, limits = { memoryMb: 64, cpus: 0.5, timeoutMs: 3000 }): SandboxSpec {
    return { appId: 'probe', pool: suitePool({ name: 'main', limits }), definitionsRoot, labels: {}, ...overrides };
  }

  beforeAll(async () => {
    image = (await testImages()).jitRunner.reference;
    definitionsRoot = makeDefinitions();
    driver = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } });
  });
  afterAll(async () => {
    await driver?.close();
    await sweep(instanceId);
    rmSync(definitionsRoot, { recursive: true, force: true });
  });

  it('runs hardened containers, as docker inspect shows and a script inside feels', async () => {
    const handle = await driver.create(spec({}, { memoryMb: 96, cpus: 0.25, timeoutMs: 3000 }));
    const info = await docker.getContainer(handle.id).inspect();
    const host = info.HostConfig;
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.Tmpfs ?? {}).toEqual({});
    expect(host.CapDrop).toEqual(['ALL']);
    expect(host.SecurityOpt).toContain('no-new-privileges');
    expect(host.SecurityOpt?.find((opt: string) => opt.startsWith('seccomp='))).toMatch(/"clone3"/);
    expect(host.PidsLimit).toBeGreaterThanOrEqual(64);
    expect(host.Memory).toBe(96 * MiB);
    expect(host.MemorySwap).toBe(96 * MiB);
    expect(host.NanoCpus).toBe(250_000_000);
    expect(host.Init).toBe(false);
    expect(host.NetworkMode).toBe('none');
    expect(info.Config.User).not.toMatch(/^(0|root)(:|$)/);
    expect(info.Config.Labels).toMatchObject({ 'uhlp.dev/app': 'probe', 'uhlp.dev/pool': 'main', 'uhlp.dev/instance': instanceId });
    expect(info.Mounts.find((m) => m.Destination === '/definitions')).toMatchObject({ RW: false });
    expect(info.Mounts.find((m) => m.Destination === '/work')).toMatchObject({ RW: true });
    expect(info.Config.Entrypoint).toContain('--allow-fs-write=/work');
    expect(handle.endpoint.kind).toBe('unix');

    const inside = await call(handle.endpoint, 'inside');
    // Node's permission model refuses first; the read-only root would refuse next.
    expect(inside).toMatchObject({ writeRoot: 'ERR_ACCESS_DENIED', writeTmp: 'ERR_ACCESS_DENIED', writeWork: 'ok', spawn: 'ERR_ACCESS_DENIED', writeDefinitions: 'ERR_ACCESS_DENIED', interfaces: ['lo'] });
    expect(inside.uid).not.toBe(0);
    await driver.destroy(handle, 'shutdown');
  });

  it('gives a pool that needs the network a port published on 127.0.0.1 only', async () => {
    const handle = await driver.create(spec({ network: true }));
    expect(handle.endpoint).toMatchObject({ kind: 'tcp', host: '127.0.0.1' });
    const info = await docker.getContainer(handle.id).inspect();
    const bindings = Object.values(info.HostConfig.PortBindings ?? {}).flat() as Array<{ HostIp: string }>;
    expect(bindings.length).toBeGreaterThan(0);
    expect(bindings.every((b) => b.HostIp === '127.0.0.1')).toBe(true);
    expect(await call(handle.endpoint, 'hello')).toEqual({ hello: 'docker' });
    await driver.destroy(handle, 'shutdown');
  });

  it('tells an out-of-memory kill from a timeout', async () => {
    const [hog, spinner] = await Promise.all([driver.create(spec()), driver.create(spec())]);

    const hogClient = new SandboxClient(hog.endpoint);
    await expect(hogClient.execute(body('oom', 'offHeap'), 'oom', 20_000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
    hogClient.close();
    expect(await hog.exited).toBe('oom');
    await driver.destroy(hog, 'crash');

    const spinClient = new SandboxClient(spinner.endpoint);
    await expect(spinClient.execute(body('spin', 'spin'), 'spin', 300)).rejects.toMatchObject({ failure: 'timeout' });
    spinClient.close();
    await driver.destroy(spinner, 'timeout');
    expect(await spinner.exited).toBe('timeout');
  });

  it("copies what a script prints into the core's log, tagged with the sandbox", async () => {
    const lines: Array<{ sandbox?: string; stream?: string; msg?: string }> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const own = uniqueInstanceId('output');
    const loud = new DockerDriver({ logger, instanceId: own, docker, images: { jit: image } });
    try {
      const handle = await loud.create(spec());
      await call(handle.endpoint, 'shout');
      const tag = handle.id.slice(0, 12);
      // The two streams are forwarded apart: either line may come first.
      await waitFor(() => lines.some((l) => l.sandbox === tag && l.stream === 'stderr' && l.msg === 'and its stderr'), { what: 'stderr line' });
      await waitFor(() => lines.some((l) => l.sandbox === tag && l.stream === 'stdout' && l.msg === 'hello from the sandbox'), { what: 'stdout line' });
      expect(lines.some((l) => l.msg?.includes('"event":"ready"'))).toBe(false);
    } finally {
      await loud.close();
      await sweep(own);
    }
  });

  it('fails to start with a clear error when the image is missing, leaving nothing', async () => {
    const missing = spec({ pool: { ...suitePool({ name: 'main' }), image: 'uhlp/no-such-image:none' } });
    await expect(driver.create(missing)).rejects.toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE', message: /uhlp images build/ });
    expect(await containersOf(instanceId)).toEqual([]);
  });

  it('removes a container whose runner does not answer in time, or whose start is aborted', async () => {
    const own = uniqueInstanceId('late');
    const impatient = new DockerDriver({ logger: silentLogger(), instanceId: own, docker, images: { jit: image }, startTimeoutMs: 1 });
    await expect(impatient.create(spec())).rejects.toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE', message: /GET \/healthz within 1 ms/ });
    const aborted = new AbortController();
    aborted.abort();
    await expect(driver.create(spec(), aborted.signal)).rejects.toMatchObject({ code: 'UHLP_SANDBOX_UNAVAILABLE', message: /aborted/ });
    expect(await containersOf(own)).toEqual([]);
    expect(await containersOf(instanceId)).toEqual([]);
    await impatient.close();
  });

  it('leaves no container and no socket directory after destroy and close', async () => {
    const socketRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-dk-'));
    const own = uniqueInstanceId('leak');
    const leakDriver = new DockerDriver({ logger: silentLogger(), instanceId: own, docker, images: { jit: image }, socketRoot });
    const handles = await Promise.all([leakDriver.create(spec()), leakDriver.create(spec()), leakDriver.create(spec())]);
    await leakDriver.destroy(handles[0]!, 'recycled');
    expect((await containersOf(own)).map((c) => c.Id).sort()).toEqual([handles[1]!.id, handles[2]!.id].sort());
    await leakDriver.close();
    expect(await containersOf(own)).toEqual([]);
    expect(existsSync(socketRoot)).toBe(false);
  });
});

describe('docker driver adoption', () => {
  const instanceId = uniqueInstanceId('adopt');
  let image: string;
  let definitionsRoot: string;

  beforeAll(async () => {
    image = (await testImages()).jitRunner.reference;
    definitionsRoot = makeDefinitions();
  });
  afterAll(async () => {
    await sweep(instanceId);
    rmSync(definitionsRoot, { recursive: true, force: true });
  });

  it('hands a restarted core its running containers, not duplicates, and clears dead ones', async () => {
    const poolSpec = (name: string): SandboxSpec => ({ appId: 'probe', pool: suitePool({ name }), definitionsRoot, labels: {} });
    const before = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } });
    const kept = await Promise.all([before.create(poolSpec('main')), before.create(poolSpec('main'))]);
    const other = await before.create(poolSpec('other'));
    const dead = await before.create(poolSpec('main'));
    await docker.getContainer(dead.id).kill();
    expect(await dead.exited).toBe('crash');
    // `before` is dropped without close(), as a killed core would be.

    const stranger = new DockerDriver({ logger: silentLogger(), instanceId: uniqueInstanceId('stranger'), docker, images: { jit: image } });
    expect(await stranger.adopt('probe', 'main')).toEqual([]);

    const after = new DockerDriver({ logger: silentLogger(), instanceId, docker, images: { jit: image } });
    const adopted = await after.adopt('probe', 'main', poolSpec('main'));
    expect(adopted.map((h) => h.id).sort()).toEqual(kept.map((h) => h.id).sort());
    for (const handle of adopted) expect(await call(handle.endpoint, 'hello')).toEqual({ hello: 'docker' });
    expect(await after.adopt('probe', 'main')).toEqual([]);
    const remaining = (await containersOf(instanceId)).map((c) => c.Id).sort();
    expect(remaining).toEqual([...kept.map((h) => h.id), other.id].sort());

    // A clean stop: the driver removes what it holds, the instance sweep the rest.
    await after.close();
    expect((await containersOf(instanceId)).map((c) => c.Id)).toEqual([other.id]);
    const socketDir = (await docker.getContainer(other.id).inspect()).Config.Labels['uhlp.dev/socket-dir']!;
    expect(await removeInstanceContainers(instanceId, { docker, keepPools: new Set(['probe/other']) })).toBe(0);
    expect(await removeInstanceContainers(instanceId, { docker })).toBe(1);
    expect(await containersOf(instanceId)).toEqual([]);
    expect(existsSync(path.dirname(socketDir))).toBe(false);
  });

  it('replaces containers started with another pool configuration instead of adopting them', async () => {
    const own = uniqueInstanceId('reconf');
    const poolSpec = (memoryMb: number): SandboxSpec => ({
      appId: 'probe',
      pool: suitePool({ name: 'main', limits: { memoryMb, cpus: 0.5, timeoutMs: 3000 } }),
      definitionsRoot,
      labels: {},
    });
    const before = new DockerDriver({ logger: silentLogger(), instanceId: own, docker, images: { jit: image } });
    await before.create(poolSpec(64));
    const after = new DockerDriver({ logger: silentLogger(), instanceId: own, docker, images: { jit: image } });
    expect(await after.adopt('probe', 'main', poolSpec(96))).toEqual([]);
    expect(await containersOf(own)).toEqual([]);
    await after.close();
  });
});
