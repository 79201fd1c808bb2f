/**
 * The bare Docker start the Docker benchmarks compare against: `create` + `start`
 * + first answer, made directly over dockerode by the benchmark itself, with the
 * same image, hardening and mounts as DockerDriver (src/sandbox/docker-container-spec.ts)
 * but none of its machinery (labels for adoption, output forwarding, exit
 * watching, the CPU quota applied after readiness).
 *
 * Like the driver, it gives each sandbox a socket directory and polls GET /healthz
 * on the runner's Unix socket; `hardeningDiff` checks that the two containers'
 * configurations still match.
 */
import { randomBytes } from 'node:crypto';
import { chownSync, mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import type Docker from 'dockerode';
import { SANDBOX_UID } from '../../src/images/build-images.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import { round2 } from './numbers.js';

export interface BareDockerOptions {
  readonly docker: Docker;
  readonly image: string;
  /** Labelled on every container (uhlp.dev/instance), so removeInstanceContainers clears leftovers. */
  readonly instanceId: string;
  /** Mounted read-only at /definitions (must be readable by uid 10001). */
  readonly definitionsRoot: string;
  /** Host directory under which each sandbox gets its socket directory. */
  readonly socketRoot: string;
  readonly memoryMb: number;
}

export interface BareSandbox {
  readonly container: Docker.Container;
  readonly dir: string;
  readonly socketPath: string;
  /** create -> start -> first 200 on GET /healthz, ms. */
  readonly readyMs: number;
  /** create -> ... -> answer to the first POST /execute, ms (when one was sent). */
  readonly answerMs?: number;
}

/** Same values as DockerDriver's defaults (user, tmpfs, pids, heap share). */
const USER = process.getuid?.() === 0 ? `${SANDBOX_UID}:${SANDBOX_UID}` : `${process.getuid?.()}:${process.getgid?.()}`;

export function bareContainerConfig(options: BareDockerOptions, socketDir: string): Docker.ContainerCreateOptions {
  const memoryBytes = options.memoryMb * 1024 * 1024;
  return {
    Image: options.image,
    Cmd: ['--listen', 'unix:/run/uhlp/runner.sock', '--definitions', '/definitions', '--concurrency', '1'],
    Env: [`NODE_OPTIONS=--max-old-space-size=${Math.max(8, Math.floor(options.memoryMb * 0.5))}`, 'NODE_ENV=production', 'TZ=UTC'],
    User: USER,
    Labels: { 'uhlp.dev/instance': options.instanceId },
    HostConfig: {
      ReadonlyRootfs: true,
      Tmpfs: { '/tmp': 'rw,noexec,nosuid,nodev,size=16m' },
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges'],
      PidsLimit: 128,
      Memory: memoryBytes,
      MemorySwap: memoryBytes,
      NanoCpus: 0,
      Init: true,
      NetworkMode: 'none',
      Binds: [`${path.resolve(options.definitionsRoot)}:/definitions:ro`, `${socketDir}:/run/uhlp`],
      LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
    },
  };
}

/**
 * One bare start. With `execute`, the first answer is that POST /execute's (sent
 * once GET /healthz answers), else GET /healthz's.
 */
export async function bareStart(options: BareDockerOptions, execute?: { body: string; requestId: string }): Promise<BareSandbox> {
  const dir = path.join(options.socketRoot, randomBytes(4).toString('hex'));
  const started = performance.now();
  mkdirSync(dir, { mode: 0o700 });
  if (process.getuid?.() === 0) chownSync(dir, SANDBOX_UID, SANDBOX_UID);
  const container = await options.docker.createContainer(bareContainerConfig(options, dir));
  const socketPath = path.join(dir, 'runner.sock');
  const client = new SandboxClient({ kind: 'unix', socketPath });
  try {
    await container.start();
    while (!(await client.probe(1000))) await new Promise((resolve) => setTimeout(resolve, 3));
    const readyMs = performance.now() - started;
    if (execute === undefined) return { container, dir, socketPath, readyMs };
    const response = await client.execute(execute.body, execute.requestId, 5000);
    if (response.status !== 200) throw new Error(`bare /execute answered ${response.status}: ${response.body.toString().slice(0, 200)}`);
    return { container, dir, socketPath, readyMs, answerMs: performance.now() - started };
  } catch (error) {
    await removeBare({ container, dir });
    throw error;
  } finally {
    client.close();
  }
}

export async function removeBare(bare: { container: Docker.Container; dir: string }): Promise<void> {
  await bare.container.remove({ force: true, v: true }).catch(() => undefined);
  rmSync(bare.dir, { recursive: true, force: true });
}

/**
 * Where a bare container's configuration differs from a DockerDriver one's, on
 * what decides isolation and resources (paths of socket directories aside, and
 * NanoCpus, which the driver sets once the runner answers). Empty when they match.
 */
export async function hardeningDiff(docker: Docker, bareId: string, driverId: string): Promise<string[]> {
  const [bare, driver] = await Promise.all([docker.getContainer(bareId).inspect(), docker.getContainer(driverId).inspect()]);
  const pick = (info: Docker.ContainerInspectInfo): Record<string, unknown> => ({
    image: info.Image,
    cmd: info.Config.Cmd,
    env: [...(info.Config.Env ?? [])].sort(),
    user: info.Config.User,
    readonlyRootfs: info.HostConfig.ReadonlyRootfs,
    tmpfs: (info.HostConfig as { Tmpfs?: unknown }).Tmpfs,
    capDrop: info.HostConfig.CapDrop,
    securityOpt: info.HostConfig.SecurityOpt,
    pidsLimit: info.HostConfig.PidsLimit,
    memory: info.HostConfig.Memory,
    memorySwap: info.HostConfig.MemorySwap,
    init: (info.HostConfig as { Init?: unknown }).Init,
    networkMode: info.HostConfig.NetworkMode,
    // Host side of the socket directory differs per sandbox; the container side must not.
    binds: (info.HostConfig.Binds ?? []).map((bind) => (bind.endsWith(':/run/uhlp') ? ':/run/uhlp' : bind.replace(/^[^:]*/, ''))).sort(),
    logConfig: info.HostConfig.LogConfig,
  });
  const a = pick(bare);
  const b = pick(driver);
  return Object.keys(a)
    .filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]))
    .map((key) => `${key}: bare ${JSON.stringify(a[key])} vs driver ${JSON.stringify(b[key])}`);
}

/** p50/mean/min/max of a sample, in ms rounded to 0.01. */
export interface SampleStats {
  samples: number;
  p50Ms: number;
  meanMs: number;
  minMs: number;
  maxMs: number;
}

export function sampleStats(values: number[]): SampleStats {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Ms: round2(sorted[Math.floor(sorted.length / 2)] ?? NaN),
    meanMs: round2(sorted.reduce((a, b) => a + b, 0) / sorted.length),
    minMs: round2(sorted[0] ?? NaN),
    maxMs: round2(sorted[sorted.length - 1] ?? NaN),
  };
}

