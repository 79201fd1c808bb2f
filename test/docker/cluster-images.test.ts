/**
 * The chart's images on the real engine: uhlp/uhlp runs the `uhlp` command as a non-root
 * user with no shell and carries git with its https helper; uhlp/redis serves; both are
 * rebuilt only when an input changes; `uhlp images save` writes a tar that `docker load`
 * and containerd's `ctr images import` take.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildClusterImages, type ClusterImages } from '../../src/images/cluster-images.js';
import { saveImages } from '../../src/images/save-images.js';
import { docker } from './docker-env.js';

const run = promisify(execFile);
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The containerd that dockerd runs (Debian's docker.io); `ctr` talks to it. */
const CONTAINERD_SOCKET = '/var/run/docker/containerd/containerd.sock';

async function runToEnd(image: string, entrypoint: string[], cmd: string[] = []): Promise<{ exitCode: number; output: string }> {
  const container = await docker.createContainer({ Image: image, Entrypoint: entrypoint, Cmd: cmd, HostConfig: { NetworkMode: 'none' } });
  try {
    await container.start();
    const { StatusCode } = (await container.wait()) as { StatusCode: number };
    const logs = (await container.logs({ stdout: true, stderr: true })) as Buffer;
    // Multiplexed frames: 8-byte headers before each chunk.
    let output = '';
    for (let at = 0; at + 8 <= logs.length; ) {
      const size = logs.readUInt32BE(at + 4);
      output += logs.subarray(at + 8, at + 8 + size).toString();
      at += 8 + size;
    }
    return { exitCode: StatusCode, output: output.trim() };
  } finally {
    await container.remove({ force: true });
  }
}

describe('the chart images', () => {
  let images: ClusterImages;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-save-'));

  beforeAll(async () => {
    images = await buildClusterImages({ docker });
  }, 300_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds nothing when no input changed', async () => {
    const again = await buildClusterImages({ docker });
    expect(again.core).toEqual({ ...images.core, built: false });
    expect(again.redis).toEqual({ ...images.redis, built: false });
    expect(images.core.reference).toMatch(/^uhlp\/uhlp:[0-9a-f]{16}$/);
    expect(images.redis.reference).toMatch(/^uhlp\/redis:[0-9a-f]{16}$/);
  });

  it('runs the uhlp command as a non-root user, with git and no shell', async () => {
    const info = await docker.getImage(images.core.reference).inspect();
    expect(info.Config.User).toBe('10001:10001');
    // The core and the operator run on the pinned Node 24, not on the build machine's.
    const pinned = JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'scripts', 'node-pin.json'), 'utf8')) as { version: string };
    expect(await runToEnd(images.core.reference, ['/usr/local/bin/node', '-e', 'console.log(process.getuid(), process.version)'])).toEqual({ exitCode: 0, output: `10001 v${pinned.version}` });
    expect((await runToEnd(images.core.reference, ['/usr/local/bin/node', '/app/bin/uhlp.js', '--help'])).output).toMatch(/^  operator  +The Kubernetes operator/m);
    expect(await runToEnd(images.core.reference, ['/usr/bin/git', '--version'])).toMatchObject({ exitCode: 0, output: expect.stringMatching(/^git version/) });
    // The https helper loads (its libraries are there): with no network it fails to connect, not to start.
    const https = await runToEnd(images.core.reference, ['/usr/bin/git', 'ls-remote', 'https://127.0.0.1:1/none.git']);
    expect(https.exitCode).not.toBe(0);
    expect(https.output).not.toMatch(/not a git command|error while loading shared libraries/);
    expect(https.output).toMatch(/unable to access|Failed to connect|Could not connect/);
    // Only production packages: no test runner, no TypeScript, no generator of the chart.
    const listing = await runToEnd(images.core.reference, [
      '/usr/local/bin/node',
      '-e',
      "const fs = require('fs'); console.log(['node_modules/fastify', 'node_modules/@kubernetes/client-node', 'node_modules/vitest', 'node_modules/typescript', 'node_modules/@grafana', 'dist/chart'].map((f) => f + '=' + fs.existsSync('/app/' + f)).join(' '))",
    ]);
    expect(listing.output).toBe('node_modules/fastify=true node_modules/@kubernetes/client-node=true node_modules/vitest=false node_modules/typescript=false node_modules/@grafana=false dist/chart=false');
    for (const image of [images.core, images.redis]) {
      const shell = await docker.createContainer({ Image: image.reference, Entrypoint: ['/bin/sh'], Cmd: ['-c', 'true'] });
      await expect(shell.start()).rejects.toMatchObject({ statusCode: expect.any(Number) });
      await shell.remove({ force: true });
    }
  });

  it('runs Redis as a non-root user, with the redis-cli of the chart\'s readiness probe', async () => {
    expect((await docker.getImage(images.redis.reference).inspect()).Config.User).toBe('10001:10001');
    expect(await runToEnd(images.redis.reference, ['/usr/bin/redis-server'], ['--version'])).toMatchObject({ exitCode: 0, output: expect.stringMatching(/^Redis server v=/) });
    expect(await runToEnd(images.redis.reference, ['/usr/bin/redis-cli'], ['--version'])).toMatchObject({ exitCode: 0, output: expect.stringMatching(/^redis-cli /) });
  });

  it('saves the images to a tar that docker load and ctr images import take', async () => {
    const file = path.join(dir, 'images.tar');
    await saveImages(docker, [images.core.reference, images.redis.reference], file);
    expect(statSync(file).size).toBeGreaterThan(images.redis.sizeBytes);
    const loaded = await run('docker', ['load', '-i', file]);
    expect(loaded.stdout).toContain(images.core.reference);
    expect(loaded.stdout).toContain(images.redis.reference);
    const namespace = `uhlp-test-${process.pid}`;
    try {
      const imported = await run('ctr', ['--address', CONTAINERD_SOCKET, '-n', namespace, 'images', 'import', file], { maxBuffer: 1 << 20 });
      expect(imported.stdout + imported.stderr).toMatch(/uhlp\/uhlp/);
      const listed = await run('ctr', ['--address', CONTAINERD_SOCKET, '-n', namespace, 'images', 'ls', '-q']);
      expect(listed.stdout).toContain(`docker.io/${images.core.reference}`);
      expect(listed.stdout).toContain(`docker.io/${images.redis.reference}`);
    } finally {
      const listed = await run('ctr', ['--address', CONTAINERD_SOCKET, '-n', namespace, 'images', 'ls', '-q']).catch(() => ({ stdout: '' }));
      for (const ref of listed.stdout.trim().split('\n').filter(Boolean)) await run('ctr', ['--address', CONTAINERD_SOCKET, '-n', namespace, 'images', 'rm', ref]).catch(() => undefined);
      await run('ctr', ['--address', CONTAINERD_SOCKET, 'namespaces', 'rm', namespace]).catch(() => undefined);
    }
  }, 120_000);
});
