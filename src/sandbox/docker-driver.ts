/**
 * The Docker driver: each sandbox is a hardened container of its pool's runner
 * image (the jit-runner's or the llm-orchestrator's, see src/images; or the
 * pool's own `image`), created, watched and removed through dockerode. What a
 * container is made of is docker-container-spec.ts; how its end is read,
 * docker-exit-watch.ts; what it prints, docker-output.ts; how a restarted core
 * takes its containers back by their labels, docker-adoption.ts.
 */
import { randomBytes, createHash } from 'node:crypto';
import { chown, mkdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import Docker from 'dockerode';
import { UhlpError } from '../shared/errors.js';
import { SANDBOX_UID } from '../images/build-images.js';
import { isPythonRunner, type RunnerKind } from '../images/runner-files.js';
import type { Logger } from '../logger.js';
import { adoptableContainers } from './docker-adoption.js';
import {
  CONTAINER_PORT,
  CONTAINER_SOCKET_DIR,
  CONTAINER_WORK,
  containerConfigHash,
  containerCreateOptions,
  containerImage,
  nanoCpus,
  runnerSocketPath,
  type ContainerSettings,
} from './docker-container-spec.js';
import { watchExit } from './docker-exit-watch.js';
import { forwardOutput, lastLine, logTail } from './docker-output.js';
import { SandboxClient } from './sandbox-client.js';
import { createWorkTree, type WorkTree } from './work-tree.js';
import type { SandboxDriver, SandboxEndpoint, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';

/**
 * How long a container whose runner's connection dropped gets to stop on its own
 * before it is removed: its exit (a heap limit's status and line) says why it
 * went, and is only read while the container is there.
 */
const CRASH_EXIT_GRACE_MS = 1000;

export interface DockerDriverOptions {
  readonly logger: Logger;
  /** The core's instance id: labelled on every container, and the key of adoption and cleanup. */
  readonly instanceId: string;
  /** Engine client. @defaultValue `new Docker()` (DOCKER_HOST or /var/run/docker.sock) */
  readonly docker?: Docker;
  /**
   * Image per runner for pools that name none.
   * @defaultValue RUNNER_IMAGES: uhlp/jit-runner:latest and uhlp/llm-orchestrator:latest
   */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  /**
   * Host directory under which each sandbox gets a socket directory. Unix socket
   * paths are limited to 108 bytes, so keep it short.
   * @defaultValue `<tmpdir>/uhlp-dk-<hash of instanceId>`
   */
  readonly socketRoot?: string;
  /**
   * Host directory under which each container gets its writable tree (/work).
   * @defaultValue `<tmpdir>/uhlp-dk-<hash of instanceId>-work`
   */
  readonly workRoot?: string;
  /** How long a container may take to answer GET /healthz after start, ms. @defaultValue 10000 */
  readonly startTimeoutMs?: number;
  /** Process limit of a container. @defaultValue 128 */
  readonly pidsLimit?: number;
  /**
   * Share of the pool's memory limit given to the V8 heap (--max-old-space-size).
   * The rest is Node's own footprint; a script that fills its heap then dies on
   * the heap limit ('heap-limit') before the kernel kills it ('oom').
   * @defaultValue 0.5
   */
  readonly heapShare?: number;
  /**
   * Copy what runners print (script console output, crash reports) into the
   * core's log, one line per entry, tagged with the sandbox, as the process
   * driver does. Costs one streaming request to the engine per container.
   * @defaultValue true
   */
  readonly forwardOutput?: boolean;
  /**
   * `uid:gid` the runner runs as. Never root.
   * @defaultValue the core's own uid:gid when it is not root (so it can reach the
   * socket), else `10001:10001`, the image's `sandbox` user
   */
  readonly user?: string;
}

interface DockerHandle extends SandboxHandle {
  readonly container: Docker.Container;
  /** Host directory of the socket, when the runner listens on one. */
  readonly socketDir: string | undefined;
  readonly workTree: WorkTree;
  /** The cause the pool gave when it destroyed us; wins over what the exit looks like, OOM excepted. */
  destroyCause?: SandboxExitCause;
  done: boolean;
}

export class DockerDriver implements SandboxDriver {
  readonly name = 'docker';
  readonly isolation = 'container';
  private readonly docker: Docker;
  private readonly options: DockerDriverOptions;
  private readonly socketRoot: string;
  private readonly workRoot: string;
  private readonly user: string;
  private readonly settings: ContainerSettings;
  private readonly live = new Map<string, DockerHandle>();
  private readonly creating = new Set<Promise<void>>();
  private closed = false;

  constructor(options: DockerDriverOptions) {
    this.options = options;
    this.docker = options.docker ?? new Docker();
    this.socketRoot = options.socketRoot ?? defaultSocketRoot(options.instanceId);
    this.workRoot = options.workRoot ?? `${defaultSocketRoot(options.instanceId)}-work`;
    this.user = options.user ?? defaultUser();
    if (/^0(:|$)/.test(this.user) || /^root(:|$)/.test(this.user)) {
      throw new UhlpError('UHLP_CONFIG_INVALID', `sandbox user must not be root, got "${this.user}"`, { field: 'user' });
    }
    this.settings = {
      instanceId: options.instanceId,
      user: this.user,
      ...(options.images !== undefined ? { images: options.images } : {}),
      ...(options.heapShare !== undefined ? { heapShare: options.heapShare } : {}),
      ...(options.pidsLimit !== undefined ? { pidsLimit: options.pidsLimit } : {}),
    };
  }

  create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxHandle> {
    if (this.closed) {
      return Promise.reject(new UhlpError('UHLP_SHUTTING_DOWN', 'the docker driver is closed', { app: spec.appId, pool: spec.pool.name }));
    }
    const creating = this.createContainer(spec, signal);
    // close() waits for creations in flight, so none ends as a container nobody holds.
    const settled = creating.then(
      () => undefined,
      () => undefined,
    );
    this.creating.add(settled);
    void settled.finally(() => this.creating.delete(settled));
    return creating;
  }

  private async createContainer(spec: SandboxSpec, signal: AbortSignal | undefined): Promise<SandboxHandle> {
    const id = randomBytes(6).toString('hex');
    const socketDir = spec.network ? undefined : await this.makeSocketDir(id);
    const workDir = createWorkTree(this.workRoot, id, this.sandboxOwner()).hostDir;
    let container: Docker.Container;
    try {
      container = await this.docker.createContainer(containerCreateOptions(spec, this.settings, { id, socketDir, workDir }));
    } catch (error) {
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
      await rm(workDir, { recursive: true, force: true });
      throw startError(spec, containerImage(spec, this.settings), error);
    }
    // From here the container exists: any failure must remove it.
    let handle: DockerHandle | undefined;
    try {
      await container.start();
      const endpoint = socketDir ? ({ kind: 'unix', socketPath: runnerSocketPath(socketDir) } as const) : await publishedEndpoint(container);
      handle = this.track(container, endpoint, socketDir, workDir, isPythonRunner(spec.pool.runner));
      if (this.options.forwardOutput !== false) forwardOutput(this.docker, container, this.options.logger, 0);
      await this.waitReady(handle, signal);
      // The CPU quota binds from here, before any script runs: Node's own start
      // is CPU-bound and trusted, and throttling it to the pool's share made every
      // start ~60-90 ms slower on a 2-core machine (bench/docker-dispatch.ts, the pool-miss comparison).
      await container.update({ NanoCpus: nanoCpus(spec) });
      return handle;
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      const logs = await logTail(container);
      if (handle) await this.destroy(handle, 'start-failed');
      else {
        await container.remove({ force: true }).catch(() => undefined);
        if (socketDir) await rm(socketDir, { recursive: true, force: true });
        await rm(workDir, { recursive: true, force: true });
      }
      throw new UhlpError(
        'UHLP_SANDBOX_UNAVAILABLE',
        `sandbox container ${container.id.slice(0, 12)} did not start: ${reason}${logs ? ` (runner said: ${lastLine(logs)})` : ''}`,
        { app: spec.appId, pool: spec.pool.name },
      );
    }
  }

  async destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void> {
    const sandbox = handle as DockerHandle;
    sandbox.destroyCause ??= cause;
    if (cause === 'crash' && !sandbox.done) await Promise.race([sandbox.exited, delay(CRASH_EXIT_GRACE_MS, undefined, { ref: false })]);
    // A forced remove kills at once: a runner keeps no state worth a graceful
    // stop, and a timed-out one may be spinning on the CPU.
    await sandbox.container.remove({ force: true, v: true }).catch((error: unknown) => {
      const status = (error as { statusCode?: number }).statusCode;
      // 404: already gone; 409: a removal is already in progress.
      if (status !== 404 && status !== 409) throw error;
    });
    await sandbox.exited;
    if (sandbox.socketDir) await rm(sandbox.socketDir, { recursive: true, force: true });
    await rm(sandbox.workTree.hostDir, { recursive: true, force: true });
  }

  async adopt(appId: string, poolName: string, spec?: SandboxSpec): Promise<SandboxHandle[]> {
    const found = await adoptableContainers({
      docker: this.docker,
      logger: this.options.logger,
      instanceId: this.options.instanceId,
      appId,
      poolName,
      ...(spec ? { wanted: { configHash: containerConfigHash(spec, this.settings), image: containerImage(spec, this.settings) } } : {}),
      isHeld: (id) => this.live.has(id),
    });
    const adopted = found.map(({ container, endpoint, socketDir, workDir }) => {
      // A pool's runner unknown (no spec): its socket directory is walked, as a python runner's.
      const handle = this.track(container, endpoint, socketDir, workDir, spec === undefined || isPythonRunner(spec.pool.runner));
      // Only what it prints from now on: earlier lines were logged by the previous core.
      if (this.options.forwardOutput !== false) forwardOutput(this.docker, container, this.options.logger, Math.floor(Date.now() / 1000));
      return handle;
    });
    if (adopted.length > 0) this.options.logger.info({ app: appId, pool: poolName, count: adopted.length }, 'adopted sandbox containers');
    return adopted;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.creating]);
    await Promise.all([...this.live.values()].map((handle) => this.destroy(handle, 'shutdown')));
    // Only removes the roots when they are empty: another driver of the same instance may share them.
    await rmdir(this.socketRoot).catch(() => undefined);
    await rmdir(this.workRoot).catch(() => undefined);
  }

  private async makeSocketDir(id: string): Promise<string> {
    const dir = path.join(this.socketRoot, id);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // The runner creates its socket as the sandbox user: when the core runs as
    // root and the sandbox as 10001, the directory must be the sandbox's.
    const owner = this.sandboxOwner();
    if (owner) await chown(dir, owner.uid, owner.gid);
    return dir;
  }

  /** The container user, as the owner of what it must write, when the core (as root) creates it. */
  private sandboxOwner(): { uid: number; gid: number } | undefined {
    if (process.getuid?.() !== 0) return undefined;
    const [uid, gid] = this.user.split(':').map(Number);
    return { uid: uid ?? SANDBOX_UID, gid: gid ?? uid ?? SANDBOX_UID };
  }

  /**
   * Registers a running container and starts watching for its exit. The socket
   * directory of a runner without Node's permission model (`walkSocketDir`: python)
   * is walked with its tree: it is writable, and nothing else refuses a script a file there.
   */
  private track(container: Docker.Container, endpoint: SandboxEndpoint, socketDir: string | undefined, workDir: string, walkSocketDir: boolean): DockerHandle {
    let resolveExited!: (cause: SandboxExitCause) => void;
    const exited = new Promise<SandboxExitCause>((resolve) => (resolveExited = resolve));
    const owner = this.sandboxOwner();
    const workTree: WorkTree = {
      hostDir: workDir,
      sandboxDir: CONTAINER_WORK,
      ...(owner ? { owner } : {}),
      ...(socketDir !== undefined && walkSocketDir ? { sideDirs: [{ hostDir: socketDir, sandboxDir: CONTAINER_SOCKET_DIR, keep: [path.basename(runnerSocketPath(socketDir))] }] } : {}),
    };
    const handle: DockerHandle = { id: container.id, endpoint, exited, container, socketDir, workTree, done: false };
    this.live.set(container.id, handle);
    void watchExit(container, this.options.logger, () => handle.destroyCause).then((cause) => {
      handle.done = true;
      this.live.delete(container.id);
      resolveExited(cause);
    });
    return handle;
  }

  /** Polls GET /healthz until the runner answers, the container dies, the deadline passes or `signal` aborts. */
  private async waitReady(handle: DockerHandle, signal: AbortSignal | undefined): Promise<void> {
    const timeoutMs = this.options.startTimeoutMs ?? 10_000;
    const deadline = Date.now() + timeoutMs;
    const client = new SandboxClient(handle.endpoint);
    try {
      // A short fixed interval: a refused connect costs microseconds, and every
      // millisecond between the socket appearing and our probe is start latency.
      for (const delay = 3; ; ) {
        if (signal?.aborted) throw new Error('aborted');
        if (handle.done) throw new Error('the container exited during start');
        if (await client.probe(Math.max(1, Math.min(1000, deadline - Date.now())))) return;
        if (Date.now() >= deadline) throw new Error(`no answer to GET /healthz within ${timeoutMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    } finally {
      client.close();
    }
  }
}

function defaultSocketRoot(instanceId: string): string {
  return path.join(os.tmpdir(), `uhlp-dk-${createHash('sha256').update(instanceId).digest('hex').slice(0, 10)}`);
}

function defaultUser(): string {
  const uid = process.getuid?.() ?? 0;
  return uid === 0 ? `${SANDBOX_UID}:${SANDBOX_UID}` : `${uid}:${process.getgid?.() ?? uid}`;
}

async function publishedEndpoint(container: Docker.Container): Promise<SandboxEndpoint> {
  const info = await container.inspect();
  const port = info.NetworkSettings.Ports?.[`${CONTAINER_PORT}/tcp`]?.find((binding) => binding.HostIp === '127.0.0.1')?.HostPort;
  if (!port) throw new Error(`port ${CONTAINER_PORT} was not published on 127.0.0.1`);
  return { kind: 'tcp', host: '127.0.0.1', port: Number(port) };
}

function startError(spec: SandboxSpec, image: string, error: unknown): UhlpError {
  const status = (error as { statusCode?: number }).statusCode;
  const message =
    status === 404
      ? `image ${image} not found; build it with \`uhlp images build\``
      : `cannot create a sandbox container: ${error instanceof Error ? error.message : String(error)}`;
  return new UhlpError('UHLP_SANDBOX_UNAVAILABLE', message, { app: spec.appId, pool: spec.pool.name });
}
