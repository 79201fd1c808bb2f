/**
 * Sandbox start on Docker: a bare `docker create` + `start` + first answer, made
 * by the simplest script over dockerode, against DockerDriver.create (hardened
 * config, labels, readiness probe). Both start the same jit-runner image on a
 * Unix socket; rounds alternate so that drift on a noisy machine hits both sides.
 * Also 10 concurrent starts of each (what a pool refill does).
 *
 *   npx tsx bench/docker-start.ts [rounds]        (after `npm run build`)
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import Docker from 'dockerode';
import { buildImages, SANDBOX_UID } from '../src/images/build-images.js';
import { silentLogger } from '../src/logger.js';
import { DockerDriver, removeInstanceContainers } from '../src/sandbox/docker-driver.js';
import { SandboxClient } from '../src/sandbox/sandbox-client.js';
import type { SandboxHandle, SandboxSpec } from '../src/sandbox/sandbox-driver.js';
import { table } from './lib/load.js';

export interface StartStats {
  samples: number;
  p50Ms: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
}

export interface DockerStartReport {
  image: string;
  rounds: number;
  /** One start at a time. */
  single: { bare: StartStats; driver: StartStats; ratio: number };
  /** Ten starts at once: median wall time (of 3 rounds) until all ten answer, and starts per second. */
  concurrent10: { bareMs: number; driverMs: number; bareStartsPerSecond: number; driverStartsPerSecond: number; ratio: number };
}

export async function benchDockerStart(rounds = 10): Promise<DockerStartReport> {
  const docker = new Docker();
  const { jitRunner } = await buildImages({ docker });
  const image = jitRunner.reference;
  const instanceId = `bench-${randomBytes(4).toString('hex')}`;
  const definitionsRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bench-defs-'));
  chmodSync(definitionsRoot, 0o755);
  const socketRoot = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bb-'));
  const driver = new DockerDriver({ logger: silentLogger(), instanceId, docker, image });
  const spec: SandboxSpec = {
    appId: 'bench',
    pool: {
      name: 'bench', runner: 'jit', minWarm: 0, maxSize: 16, maxUses: 1000, idleTtlSeconds: 300, maxQueue: 0,
      acquireTimeoutMs: 5000, limits: { memoryMb: 128, cpus: 0.5, timeoutMs: 3000 },
    },
    definitionsRoot,
    labels: {},
  };

  /** The bare start: create, start, poll GET /healthz on the socket until it answers. */
  const bareStart = async (): Promise<{ ms: number; container: Docker.Container; dir: string }> => {
    const dir = path.join(socketRoot, randomBytes(4).toString('hex'));
    mkdirSync(dir);
    if (process.getuid?.() === 0) chownSync(dir, SANDBOX_UID, SANDBOX_UID);
    const started = performance.now();
    const container = await docker.createContainer({
      Image: image,
      Cmd: ['--listen', 'unix:/run/uhlp/runner.sock', '--definitions', '/definitions'],
      Labels: { 'uhlp.dev/instance': instanceId },
      HostConfig: { NetworkMode: 'none', Binds: [`${dir}:/run/uhlp`, `${definitionsRoot}:/definitions:ro`] },
    });
    await container.start();
    const client = new SandboxClient({ kind: 'unix', socketPath: path.join(dir, 'runner.sock') });
    while (!(await client.probe(1000))) await new Promise((resolve) => setTimeout(resolve, 2));
    const ms = performance.now() - started;
    client.close();
    return { ms, container, dir };
  };
  const removeBare = async (bare: { container: Docker.Container; dir: string }): Promise<void> => {
    await bare.container.remove({ force: true });
    rmSync(bare.dir, { recursive: true, force: true });
  };
  const driverStart = async (): Promise<{ ms: number; handle: SandboxHandle }> => {
    const started = performance.now();
    const handle = await driver.create(spec);
    return { ms: performance.now() - started, handle };
  };

  try {
    // One of each first, untimed: the first start after an image build pays for layer setup.
    await removeBare(await bareStart());
    await driver.destroy((await driverStart()).handle, 'shutdown');

    const bareMs: number[] = [];
    const driverMs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const bare = await bareStart();
      bareMs.push(bare.ms);
      await removeBare(bare);
      const made = await driverStart();
      driverMs.push(made.ms);
      await driver.destroy(made.handle, 'shutdown');
    }

    // Ten at once, three alternating rounds of each; the median wall time counts.
    const bareWalls: number[] = [];
    const driverWalls: number[] = [];
    for (let round = 0; round < 3; round++) {
      let started = performance.now();
      const bares = await Promise.all(Array.from({ length: 10 }, bareStart));
      bareWalls.push(performance.now() - started);
      await Promise.all(bares.map(removeBare));
      started = performance.now();
      const made = await Promise.all(Array.from({ length: 10 }, driverStart));
      driverWalls.push(performance.now() - started);
      await Promise.all(made.map((m) => driver.destroy(m.handle, 'shutdown')));
    }
    const bareWall = stats(bareWalls).p50Ms;
    const driverWall = stats(driverWalls).p50Ms;

    const bare = stats(bareMs);
    const ours = stats(driverMs);
    return {
      image,
      rounds,
      single: { bare, driver: ours, ratio: round2(ours.p50Ms / bare.p50Ms) },
      concurrent10: {
        bareMs: round2(bareWall),
        driverMs: round2(driverWall),
        bareStartsPerSecond: round2(10_000 / bareWall),
        driverStartsPerSecond: round2(10_000 / driverWall),
        ratio: round2(bareWall / driverWall),
      },
    };
  } finally {
    await driver.close();
    await removeInstanceContainers(instanceId, { docker });
    rmSync(socketRoot, { recursive: true, force: true });
    rmSync(definitionsRoot, { recursive: true, force: true });
  }
}

function stats(values: number[]): StartStats {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Ms: round2(sorted[Math.floor(sorted.length / 2)] ?? NaN),
    meanMs: round2(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    minMs: round2(sorted[0] ?? NaN),
    maxMs: round2(sorted[sorted.length - 1] ?? NaN),
  };
}

function round2(value: number): number {
  return Math.round(value * 100) / 100;
}

export function dockerStartTable(report: DockerStartReport): string {
  const { single, concurrent10 } = report;
  return `${table([
    { start: 'bare create+start+answer', 'p50 ms': single.bare.p50Ms, 'mean ms': single.bare.meanMs, 'min ms': single.bare.minMs, 'max ms': single.bare.maxMs },
    { start: 'DockerDriver.create', 'p50 ms': single.driver.p50Ms, 'mean ms': single.driver.meanMs, 'min ms': single.driver.minMs, 'max ms': single.driver.maxMs },
  ])}\ndriver/bare p50: x${single.ratio}\n10 concurrent: bare ${concurrent10.bareMs} ms (${concurrent10.bareStartsPerSecond}/s), driver ${concurrent10.driverMs} ms (${concurrent10.driverStartsPerSecond}/s), driver rate/bare rate x${concurrent10.ratio}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const report = await benchDockerStart(Number(process.argv[2] ?? 10));
  process.stdout.write(`${JSON.stringify(report)}\n\n${dockerStartTable(report)}`);
}
