/**
 * The Docker driver: each sandbox is a hardened container of its pool's runner
 * image (the jit-runner's or the llm-orchestrator's, see src/images; or the
 * pool's own `image`), created, watched and removed through dockerode.
 *
 * Containers have no network unless the spec asks for one; the runner then listens
 * on a Unix socket in a per-sandbox host directory bind-mounted at /run/uhlp. With
 * a network, the runner listens on TCP and the port is published on 127.0.0.1 only.
 * A jit-runner container sees its own app's revisions (read-only, /definitions);
 * an llm-orchestrator container reads app files through MCP and gets no such
 * mount. Every container has its own writable tree (/work, see work-tree.ts);
 * its root is read-only and it has no other writable place, /tmp included.
 * Every container carries the uhlp.dev/app, /pool and /instance labels, so that a
 * restarted core adopts its containers instead of starting new ones.
 */
import { randomBytes, createHash } from 'node:crypto';
import { chown, mkdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { UhlpError } from '../shared/errors.js';
import { IMAGE_APP_DIR, pythonImageCommand, RUNNER_IMAGES, SANDBOX_UID } from '../images/build-images.js';
import { IMAGE_NODE_PATH } from '../images/node-runtime.js';
import { isPythonRunner, RUNNER_PROGRAMS, type RunnerKind } from '../images/runner-files.js';
import { addonFlags, nodePermissionFlags } from './process-sandbox.js';
import { pythonMemoryArgs } from './python-memory.js';
import { dockerSeccompProfile } from './seccomp-filter.js';
import type { Logger } from '../logger.js';
import { containerExitCause } from './container-exit-cause.js';
import { SandboxClient } from './sandbox-client.js';
import { createWorkTree, type WorkTree } from './work-tree.js';
import type { SandboxDriver, SandboxEndpoint, SandboxExitCause, SandboxHandle, SandboxSpec } from './sandbox-driver.js';
import { LABEL_APP, LABEL_CONFIG, LABEL_INSTANCE, LABEL_POOL, LABEL_SOCKET_DIR, LABEL_WORK_DIR } from './sandbox-labels.js';

/** Where the socket directory is mounted inside the container. */
const CONTAINER_SOCKET_DIR = '/run/uhlp';
const CONTAINER_SOCKET = `${CONTAINER_SOCKET_DIR}/runner.sock`;
/** Where a stdio MCP server's package is mounted (runner: mcp). */
const CONTAINER_MCP_SERVER = '/mcp-server';
const CONTAINER_DEFINITIONS = '/definitions';
const CONTAINER_WORK = '/work';
const CONTAINER_MCP_SOCKET = '/run/uhlp-core/mcp.sock';
/** Runner port inside a networked container; published on 127.0.0.1 at a free port. */
const CONTAINER_PORT = 8080;
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
      container = await this.docker.createContainer(this.containerConfig(spec, id, socketDir, workDir));
    } catch (error) {
      if (socketDir) await rm(socketDir, { recursive: true, force: true });
      await rm(workDir, { recursive: true, force: true });
      throw startError(spec, this.imageOf(spec), error);
    }
    // From here the container exists: any failure must remove it.
    let handle: DockerHandle | undefined;
    try {
      await container.start();
      const endpoint = socketDir
        ? ({ kind: 'unix', socketPath: path.join(socketDir, 'runner.sock') } as const)
        : await publishedEndpoint(container);
      handle = this.track(container, endpoint, socketDir, workDir);
      this.forward(handle, 0);
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
    const wantedConfig = spec ? this.configHash(spec) : undefined;
    // The image the tag names now: a container of an image rebuilt under the same tag is outdated.
    const wantedImage = spec ? await this.docker.getImage(this.imageOf(spec)).inspect().then((image) => image.Id, () => undefined) : undefined;
    const filters = {
      label: [`${LABEL_INSTANCE}=${this.options.instanceId}`, `${LABEL_APP}=${appId}`, `${LABEL_POOL}=${poolName}`],
    };
    const found = await this.docker.listContainers({ all: true, filters: JSON.stringify(filters) });
    const adopted: SandboxHandle[] = [];
    for (const info of found) {
      if (this.live.has(info.Id)) continue;
      const container = this.docker.getContainer(info.Id);
      const socketDir = info.Labels[LABEL_SOCKET_DIR] || undefined;
      const workDir = info.Labels[LABEL_WORK_DIR] || undefined;
      const port = info.Ports.find((p) => p.PrivatePort === CONTAINER_PORT && p.IP === '127.0.0.1')?.PublicPort;
      const endpoint: SandboxEndpoint | undefined = socketDir
        ? { kind: 'unix', socketPath: path.join(socketDir, 'runner.sock') }
        : port
          ? { kind: 'tcp', host: '127.0.0.1', port }
          : undefined;
      const client = endpoint && info.State === 'running' ? new SandboxClient(endpoint) : undefined;
      const current =
        (wantedConfig === undefined || info.Labels[LABEL_CONFIG] === wantedConfig) && (wantedImage === undefined || info.ImageID === wantedImage);
      const answers = client && current ? await client.probe(2000) : false;
      client?.close();
      if (!endpoint || !answers || !workDir) {
        // Dead, deaf or outdated leftovers of this instance: remove them rather than leak them.
        this.options.logger.info({ sandbox: info.Id.slice(0, 12), state: info.State, current }, 'removing unusable labelled container');
        await container.remove({ force: true, v: true }).catch(() => undefined);
        if (socketDir) await rm(socketDir, { recursive: true, force: true });
        if (workDir) await rm(workDir, { recursive: true, force: true });
        continue;
      }
      const handle = this.track(container, endpoint, socketDir, workDir);
      // Only what it prints from now on: earlier lines were logged by the previous core.
      this.forward(handle, Math.floor(Date.now() / 1000));
      adopted.push(handle);
    }
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

  private containerConfig(spec: SandboxSpec, id: string, socketDir: string | undefined, workDir: string): Docker.ContainerCreateOptions {
    const memoryBytes = spec.pool.limits.memoryMb * 1024 * 1024;
    const heapMb = Math.max(8, Math.floor(spec.pool.limits.memoryMb * (this.options.heapShare ?? 0.5)));
    const labels: Record<string, string> = {
      ...spec.labels,
      [LABEL_APP]: spec.appId,
      [LABEL_POOL]: spec.pool.name,
      [LABEL_INSTANCE]: this.options.instanceId,
    };
    if (socketDir) labels[LABEL_SOCKET_DIR] = socketDir;
    labels[LABEL_WORK_DIR] = workDir;
    labels[LABEL_CONFIG] = this.configHash(spec);
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
      Image: this.imageOf(spec),
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
      User: this.user,
      Labels: labels,
      ...(socketDir ? {} : { ExposedPorts: { [`${CONTAINER_PORT}/tcp`]: {} } }),
      HostConfig: {
        ReadonlyRootfs: true,
        CapDrop: ['ALL'],
        // The sandboxes' one seccomp policy (seccomp-filter.ts): no process creation, none of the calls that reach past a namespace.
        SecurityOpt: ['no-new-privileges', `seccomp=${dockerSeccompProfile()}`],
        PidsLimit: this.options.pidsLimit ?? 128,
        Memory: memoryBytes,
        // Equal to Memory: no swap, so the memory limit is the real one.
        MemorySwap: memoryBytes,
        // Set once the runner answers (see create); 0 = no quota until then.
        NanoCpus: 0,
        // No init process: the runner is PID 1 and handles its signals, and the seccomp policy lets nothing fork (an init would).
        Init: false,
        NetworkMode: socketDir ? 'none' : 'bridge',
        ...(socketDir ? {} : { PortBindings: { [`${CONTAINER_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } }),
        Binds: binds,
        LogConfig: { Type: 'json-file', Config: { 'max-size': '1m', 'max-file': '1' } },
      },
    };
  }

  /** What decides how a sandbox behaves; a change means its containers are not reused. */
  private imageOf(spec: SandboxSpec): string {
    return spec.pool.image ?? this.options.images?.[spec.pool.runner] ?? RUNNER_IMAGES[spec.pool.runner];
  }

  private configHash(spec: SandboxSpec): string {
    const config = {
      image: this.imageOf(spec),
      runner: spec.pool.runner,
      limits: spec.pool.limits,
      concurrency: spec.pool.concurrency,
      network: spec.network ?? false,
      definitionsRoot: path.resolve(spec.definitionsRoot),
      mcpSocket: spec.mcpSocket ?? null,
      // A container of another server (or another version of its package) is not adopted.
      ...(spec.mcpServer !== undefined ? { mcpServer: spec.mcpServer } : {}),
      user: this.user,
      heapShare: this.options.heapShare ?? 0.5,
      layout: 4,
      pidsLimit: this.options.pidsLimit ?? 128,
    };
    return createHash('sha256').update(JSON.stringify(config)).digest('hex').slice(0, 16);
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

  /** Registers a running container and starts watching for its exit. */
  private track(container: Docker.Container, endpoint: SandboxEndpoint, socketDir: string | undefined, workDir: string): DockerHandle {
    let resolveExited!: (cause: SandboxExitCause) => void;
    const exited = new Promise<SandboxExitCause>((resolve) => (resolveExited = resolve));
    const owner = this.sandboxOwner();
    const workTree: WorkTree = { hostDir: workDir, sandboxDir: CONTAINER_WORK, ...(owner ? { owner } : {}) };
    const handle: DockerHandle = { id: container.id, endpoint, exited, container, socketDir, workTree, done: false };
    this.live.set(container.id, handle);
    void this.watch(handle).then((cause) => {
      handle.done = true;
      this.live.delete(container.id);
      resolveExited(cause);
    });
    return handle;
  }

  /** Waits for the container to stop and reads why from its State. */
  private async watch(handle: DockerHandle): Promise<SandboxExitCause> {
    try {
      await handle.container.wait();
    } catch {
      // The container was removed before or while we waited: what follows reads
      // whatever is left of it.
    }
    let state: Docker.ContainerInspectInfo['State'] | undefined;
    try {
      state = (await handle.container.inspect()).State;
    } catch {
      state = undefined;
    }
    if (state?.Running) {
      // The wait broke (the engine restarted); keep watching, without spinning.
      await new Promise((resolve) => setTimeout(resolve, 500));
      return this.watch(handle);
    }
    // Logs only matter for an exit the core did not cause (heap message, crash report).
    const output = state && !state.OOMKilled && !handle.destroyCause ? await logTail(handle.container) : '';
    const exit = state ? { oomKilled: state.OOMKilled, exitCode: state.ExitCode, output } : undefined;
    const cause = containerExitCause(exit, handle.destroyCause);
    if (cause !== handle.destroyCause) {
      this.options.logger.warn(
        { sandbox: handle.id.slice(0, 12), cause, exitCode: exit?.exitCode, oomKilled: exit?.oomKilled, output: output.slice(-500) || undefined },
        'sandbox container exited',
      );
    }
    return cause;
  }

  /** Streams the container's output into the log until it stops; `since` in Unix seconds (0 = from start). */
  private forward(handle: DockerHandle, since: number): void {
    if (this.options.forwardOutput === false) return;
    const sandbox = handle.id.slice(0, 12);
    const logLines = (stream: 'stdout' | 'stderr'): PassThrough => {
      const through = new PassThrough();
      createInterface({ input: through }).on('line', (line) => {
        // The runner's ready line is for drivers that wait on stdout; this one probes.
        if (line && !(stream === 'stdout' && line.startsWith('{"event":"ready"'))) {
          this.options.logger.info({ sandbox, stream }, line);
        }
      });
      return through;
    };
    handle.container
      .logs({ follow: true, stdout: true, stderr: true, since })
      .then((raw) => {
        const stdout = logLines('stdout');
        const stderr = logLines('stderr');
        this.docker.modem.demuxStream(raw, stdout, stderr);
        raw.on('end', () => {
          stdout.end();
          stderr.end();
        });
        // Removing the container ends the stream; an error then is expected.
        raw.on('error', () => undefined);
      })
      .catch(() => undefined);
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

export interface RemoveInstanceOptions {
  /** Engine client. @defaultValue `new Docker()` */
  readonly docker?: Docker;
  /**
   * Pools whose containers stay, as `app/pool` keys: after a restart, this removes
   * the containers of pools that no longer exist while the live ones are adopted.
   * @defaultValue none (every container of the instance is removed)
   */
  readonly keepPools?: ReadonlySet<string>;
}

/**
 * Removes the containers labelled with `instanceId`, running or not, and their
 * socket directories: the last step of a clean stop, and a way to clear what a
 * crashed core left. Returns how many were removed.
 */
export async function removeInstanceContainers(instanceId: string, options: RemoveInstanceOptions = {}): Promise<number> {
  const docker = options.docker ?? new Docker();
  const filters = { label: [`${LABEL_INSTANCE}=${instanceId}`] };
  const listed = await docker.listContainers({ all: true, filters: JSON.stringify(filters) });
  const found = listed.filter((info) => !options.keepPools?.has(`${info.Labels[LABEL_APP]}/${info.Labels[LABEL_POOL]}`));
  await Promise.all(
    found.map(async (info) => {
      await docker
        .getContainer(info.Id)
        .remove({ force: true, v: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 404 && error.statusCode !== 409) throw error;
        });
      for (const label of [LABEL_SOCKET_DIR, LABEL_WORK_DIR]) {
        const dir = info.Labels[label];
        if (dir) await rm(dir, { recursive: true, force: true });
      }
    }),
  );
  // The socket roots too, once empty (a root another driver still uses is not).
  const roots = new Set(
    found.flatMap((info) => [info.Labels[LABEL_SOCKET_DIR], info.Labels[LABEL_WORK_DIR]]).filter(Boolean).map((dir) => path.dirname(dir!)),
  );
  await Promise.all([...roots].map((root) => rmdir(root).catch(() => undefined)));
  return found.length;
}

function nanoCpus(spec: SandboxSpec): number {
  return Math.round(spec.pool.limits.cpus * 1e9);
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

/** The last lines the runner wrote, for logs and start errors. */
async function logTail(container: Docker.Container): Promise<string> {
  try {
    const raw = (await container.logs({ stdout: true, stderr: true, tail: 20, follow: false })) as unknown as Buffer;
    return demultiplex(raw).trim();
  } catch {
    return '';
  }
}

/** Docker prefixes each log chunk of a non-TTY container with an 8-byte header. */
function demultiplex(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

function lastLine(text: string): string {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  return (lines.find((l) => /error/i.test(l)) ?? lines[lines.length - 1] ?? '').slice(0, 300);
}

function startError(spec: SandboxSpec, image: string, error: unknown): UhlpError {
  const status = (error as { statusCode?: number }).statusCode;
  const message =
    status === 404
      ? `image ${image} not found; build it with \`uhlp images build\``
      : `cannot create a sandbox container: ${error instanceof Error ? error.message : String(error)}`;
  return new UhlpError('UHLP_SANDBOX_UNAVAILABLE', message, { app: spec.appId, pool: spec.pool.name });
}
