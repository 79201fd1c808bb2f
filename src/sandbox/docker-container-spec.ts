/**
 * What a Docker sandbox is made of: its image, the runner's command line, its
 * mounts, limits and hardening, and the labels (sandbox-labels.ts) a restarted
 * core finds it by (docker-adoption.ts). Containers have no network unless the spec asks for one;
 * the runner then listens on a Unix socket in a per-sandbox host directory
 * bind-mounted at /run/uhlp. With a network, the runner listens on TCP and the
 * port is published on 127.0.0.1 only. A jit-runner container sees its own app's
 * revisions (read-only, /definitions); an llm-orchestrator container reads app
 * files through MCP and gets no such mount. Every container has its own writable
 * tree (/work, see work-tree.ts); its root is read-only and it has no other
 * writable place, /tmp, /dev/shm and /dev/mqueue included (the socket directory
 * excepted, which the core walks with the tree for a python runner).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type Docker from 'dockerode';
import { IMAGE_APP_DIR, pythonImageCommand, RUNNER_IMAGES } from '../images/build-images.js';
import { IMAGE_NODE_PATH } from '../images/node-runtime.js';
import { isPythonRunner, RUNNER_PROGRAMS, type RunnerKind } from '../images/runner-files.js';
import { addonFlags, nodePermissionFlags } from './process-sandbox.js';
import { pythonMemoryArgs } from './python-memory.js';
import type { SandboxSpec } from './sandbox-driver.js';
import { LABEL_APP, LABEL_CONFIG, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';
import { dockerSeccompProfile } from './seccomp-filter.js';

/** Where the socket directory is mounted inside the container. */
export const CONTAINER_SOCKET_DIR = '/run/uhlp';
/**
 * Writable places Docker gives every container that would outlive a session:
 * its IPC namespace's /dev/shm and /dev/mqueue. Each is a read-only tmpfs
 * instead (a mount of ours replaces Docker's own at the same place).
 */
const READ_ONLY_DEV_DIRS = ['/dev/shm', '/dev/mqueue'] as const;
const CONTAINER_SOCKET = `${CONTAINER_SOCKET_DIR}/runner.sock`;
/** Where a stdio MCP server's package is mounted (runner: mcp). */
const CONTAINER_MCP_SERVER = '/mcp-server';
const CONTAINER_DEFINITIONS = '/definitions';
/** The container's writable tree. */
export const CONTAINER_WORK = '/work';
const CONTAINER_MCP_SOCKET = '/run/uhlp-core/mcp.sock';
/** Runner port inside a networked container; published on 127.0.0.1 at a free port. */
export const CONTAINER_PORT = 8080;

/** What the driver decides for every container, beside each sandbox's own spec. */
export interface ContainerSettings {
  /** The core's instance id, labelled on every container. */
  readonly instanceId: string;
  /** Image per runner for pools that name none. @defaultValue RUNNER_IMAGES */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  /** `uid:gid` the runner runs as; never root. */
  readonly user: string;
  /** Share of the pool's memory limit given to the V8 heap. @defaultValue 0.5 */
  readonly heapShare?: number;
  /** Process limit of a container. @defaultValue 128 */
  readonly pidsLimit?: number;
}

/** Where one container's host-side parts are. */
export interface ContainerPlacement {
  /** A short random id, part of the container's name. */
  readonly id: string;
  /** Host directory of the runner's socket; undefined when the runner listens on TCP (a networked sandbox). */
  readonly socketDir: string | undefined;
  /** Host directory of the container's writable tree. */
  readonly workDir: string;
}

/** The runner's socket on the host, in the container's socket directory. */
export function runnerSocketPath(socketDir: string): string {
  return path.join(socketDir, 'runner.sock');
}

/** The image a sandbox runs: the pool's own, else the configured one of its runner, else the default. */
export function containerImage(spec: SandboxSpec, settings: ContainerSettings): string {
  return spec.pool.image ?? settings.images?.[spec.pool.runner] ?? RUNNER_IMAGES[spec.pool.runner];
}

/** What decides how a sandbox behaves; a change means its containers are not reused. */
export function containerConfigHash(spec: SandboxSpec, settings: ContainerSettings): string {
  // The members and their order are what containers of earlier versions were labelled with.
  const config = {
    image: containerImage(spec, settings),
    runner: spec.pool.runner,
    limits: spec.pool.limits,
    concurrency: spec.pool.concurrency,
    network: spec.network ?? false,
    definitionsRoot: path.resolve(spec.definitionsRoot),
    mcpSocket: spec.mcpSocket ?? null,
    // A container of another server (or another version of its package) is not adopted.
    ...(spec.mcpServer !== undefined ? { mcpServer: spec.mcpServer } : {}),
    user: settings.user,
    heapShare: settings.heapShare ?? 0.5,
    layout: 5,
    pidsLimit: settings.pidsLimit ?? 128,
  };
  return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16);
}

/** The pool's CPU share as a quota: set once the runner answers (see DockerDriver.create). */
export function nanoCpus(spec: SandboxSpec): number {
  return Math.round(spec.pool.limits.cpus * 1e9);
}

export function containerCreateOptions(spec: SandboxSpec, settings: ContainerSettings, placement: ContainerPlacement): Docker.ContainerCreateOptions {
  const { id, socketDir, workDir } = placement;
  const memoryBytes = spec.pool.limits.memoryMb * 1024 * 1024;
  const heapMb = Math.max(8, Math.floor(spec.pool.limits.memoryMb * (settings.heapShare ?? 0.5)));
  const labels: Record<string, string> = {
    ...spec.labels,
    [LABEL_APP]: spec.appId,
    [LABEL_POOL]: spec.pool.name,
    [LABEL_INSTANCE]: settings.instanceId,
  };
  if (socketDir) labels[LABEL_SOCKET_DIR] = socketDir;
  labels[LABEL_WORK_DIR] = workDir;
  labels[LABEL_CONFIG] = containerConfigHash(spec, settings);
  const listen = socketDir ? `unix:${CONTAINER_SOCKET}` : `tcp:0.0.0.0:${CONTAINER_PORT}`;
  const program = RUNNER_PROGRAMS[spec.pool.runner];
  // The app's own revisions only, and only for a runner that reads them: no container reads another app's files.
  const binds = [`${workDir}:${CONTAINER_WORK}`];
  if (program.readsDefinitions) binds.unshift(`${path.resolve(spec.definitionsRoot)}:${CONTAINER_DEFINITIONS}:ro`);
  const readable = program.readsDefinitions ? [IMAGE_APP_DIR, CONTAINER_DEFINITIONS, CONTAINER_WORK] : [IMAGE_APP_DIR, CONTAINER_WORK];
  // A stdio MCP server's package is mounted read-only from the core's cache (runner: mcp).
  const mcpServer = spec.mcpServer;
  if (mcpServer?.packageDir !== undefined) {
    binds.push(`${mcpServer.packageDir}:${CONTAINER_MCP_SERVER}:ro`);
    readable.push(CONTAINER_MCP_SERVER);
  }
  const serverArgs =
    mcpServer === undefined
      ? []
      : [
          '--server-entry',
          path.posix.join(mcpServer.packageDir !== undefined ? CONTAINER_MCP_SERVER : CONTAINER_DEFINITIONS, mcpServer.entry),
          ...mcpServer.args.flatMap((arg) => ['--server-arg', arg]),
          ...(mcpServer.env ?? []).flatMap((variable) => ['--server-env', variable]),
        ];
  if (socketDir) binds.push(`${socketDir}:${CONTAINER_SOCKET_DIR}`);
  // Tool calls reach the core through its MCP socket, mounted in: no network needed.
  const mcpArgs = spec.mcpSocket ? ['--mcp-socket', CONTAINER_MCP_SOCKET] : [];
  if (spec.mcpSocket) binds.push(`${spec.mcpSocket}:${CONTAINER_MCP_SOCKET}`);
  return {
    name: `uhlp-${spec.appId}-${spec.pool.name}-${id}`.replace(/[^a-zA-Z0-9_.-]/g, '-'),
    Image: containerImage(spec, settings),
    // The image's Node and runner, with Node's permission model in front of the runner, as in a process sandbox;
    // or the image's CPython, which has none: the container, its read-only root and the seccomp policy are its fences.
    Entrypoint: isPythonRunner(spec.pool.runner)
      ? pythonImageCommand()
      : [IMAGE_NODE_PATH, ...nodePermissionFlags(readable, [CONTAINER_WORK]), ...addonFlags(spec.pool.runner), `${IMAGE_APP_DIR}/${program.entry}`],
    Cmd: [
      '--listen',
      listen,
      ...(program.readsDefinitions ? ['--definitions', CONTAINER_DEFINITIONS] : []),
      '--work-dir',
      CONTAINER_WORK,
      '--concurrency',
      String(spec.pool.concurrency),
      ...mcpArgs,
      ...(isPythonRunner(spec.pool.runner) ? pythonMemoryArgs(spec.pool.limits.memoryMb) : []),
      ...serverArgs,
    ],
    // Only what the runner needs: nothing of the core's environment goes in.
    Env: [
      `NODE_OPTIONS=--max-old-space-size=${heapMb}`,
      'NODE_ENV=production',
      'TZ=UTC',
      `HOME=${CONTAINER_WORK}`,
      `TMPDIR=${CONTAINER_WORK}/tmp`,
      'PYTHONDONTWRITEBYTECODE=1',
    ],
    User: settings.user,
    Labels: labels,
    ...(socketDir ? {} : { ExposedPorts: { [`${CONTAINER_PORT}/tcp`]: {} } }),
    HostConfig: {
      ReadonlyRootfs: true,
      CapDrop: ['ALL'],
      // The sandboxes' one seccomp policy (seccomp-filter.ts): no process creation, none of the calls that reach past a namespace.
      SecurityOpt: ['no-new-privileges', `seccomp=${dockerSeccompProfile()}`],
      PidsLimit: settings.pidsLimit ?? 128,
      Memory: memoryBytes,
      // Equal to Memory: no swap, so the memory limit is the real one.
      MemorySwap: memoryBytes,
      // Set once the runner answers (see DockerDriver.create); 0 = no quota until then.
      NanoCpus: 0,
      // No init process: the runner is PID 1 and handles its signals, and the seccomp policy lets nothing fork (an init would).
      Init: false,
      NetworkMode: socketDir ? 'none' : 'bridge',
      ...(socketDir ? {} : { PortBindings: { [`${CONTAINER_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } }),
      Binds: binds,
      Mounts: READ_ONLY_DEV_DIRS.map((target) => ({ Type: 'tmpfs' as const, Source: '', Target: target, ReadOnly: true, TmpfsOptions: { SizeBytes: 4096, Mode: 0o555 } })),
      LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
    },
  };
}
