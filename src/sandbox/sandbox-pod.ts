/**
 * The pod of one sandbox, as one pure function, so that the operator (which keeps
 * each SandboxPool's warm pods) and the core's pod driver (which creates a pod on a
 * pool miss) make exactly the same pod, and tell by one hash whether a pod was made
 * for the pool as it is now.
 *
 * A sandbox pod runs its pool's runner image as the image's non-root user with a
 * read-only root, no capabilities, the runtime's default seccomp profile (a python
 * runner, which has no permission model, loads the sandboxes' own on itself), no
 * service-account token, no Service environment, and the pool's memory and CPU
 * limits. Its one writable place is an emptyDir at /work (a python pod's /dev/shm
 * and /dev/mqueue, which the runtime mounts writable and no permission model closes
 * for it, are read-only volumes instead). It reaches the core only
 * over the network (the core's MCP URL, sent in every request), and a jit-runner
 * reads its scripts through MCP into /work (`--definitions-via-mcp`): a pod shares
 * no file system with the core.
 *
 * A `runner: mcp` pod runs the mcp-host with its stdio server (the same flags as the
 * Docker driver's container): the server's package is the one file system it shares,
 * read-only: the package cache volume the core installs into, mounted with a subPath
 * of the package's hash directory at /mcp-server. It reads no app files and gets no
 * MCP endpoint (it has no token, and nothing to ask the core).
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { McpServerLaunchSpec } from '../apps/schema/sandbox-pool-schema.js';
import { canonicalJson } from '../shared/canonical-json.js';
import { IMAGE_APP_DIR, pythonImageCommand, pythonSeccompArgs, RUNNER_IMAGES, SANDBOX_UID } from '../images/build-images.js';
import { IMAGE_NODE_PATH } from '../images/node-runtime.js';
import { isPythonRunner, RUNNER_PROGRAMS, type RunnerKind } from '../images/runner-files.js';
import { addonFlags, nodePermissionFlags } from './process-sandbox.js';
import { pythonMemoryArgs } from './python-memory.js';
import { ANNOTATION_CLAIMER_POD, LABEL_APP, LABEL_CLAIMED_BY, LABEL_CONFIG, LABEL_POOL, LABEL_ROLE, LABEL_SANDBOX_POOL, LABEL_SANDBOX_STATE, ROLE_SANDBOX } from './sandbox-labels.js';

export type PodState = 'warm' | 'claimed';

/** The runner's port in the pod. */
export const POD_RUNNER_PORT = 8080;
const POD_WORK = '/work';
const POD_DEFINITIONS = `${POD_WORK}/.definitions`;
/** Where a stdio MCP server's package is mounted, as in a container (docker-container-spec.ts). */
const POD_MCP_SERVER = '/mcp-server';

/**
 * The volume of the MCP package cache, as the core and the operator are configured
 * with it (the chart's `core.mcp.packageCache`): a PersistentVolumeClaim (ReadWriteMany
 * in a real cluster: the core writes, pods read) or a directory of the node (a one-node
 * cluster, where the core runs beside the kubelet).
 */
export type PackageCacheVolume = { readonly claimName: string } | { readonly hostPath: string };

export interface SandboxPodInput {
  readonly namespace: string;
  readonly appId: string;
  readonly pool: PoolSpec;
  /** Image per runner for pools that name none. @defaultValue RUNNER_IMAGES */
  readonly images?: Readonly<Partial<Record<RunnerKind, string>>>;
  /** Share of the memory limit given to the V8 heap. @defaultValue 0.5 */
  readonly heapShare?: number;
  /** runner: mcp: the server the pod runs. @defaultValue none */
  readonly mcpServer?: McpServerLaunchSpec;
  /** Where `mcpServer.packageKey` is found; required with mcpServer. @defaultValue none */
  readonly packageCache?: PackageCacheVolume;
}

export interface OwnerRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  readonly uid: string;
}

export interface PodPlacement {
  readonly state: PodState;
  /** The claiming core's instance id (claimed pods). */
  readonly claimedBy?: string;
  /** The claiming core's pod, `<namespace>/<name>` (claimed pods of a core that runs in a pod). */
  readonly claimerPod?: string;
  /** The SandboxPool that owns the pod: its deletion takes the pod along. */
  readonly owner?: OwnerRef;
  /** Extra labels (the core's `uhlp.dev/instance`, ...). */
  readonly labels?: Readonly<Record<string, string>>;
}

export function podImage(input: SandboxPodInput): string {
  return input.pool.image ?? input.images?.[input.pool.runner] ?? RUNNER_IMAGES[input.pool.runner];
}

/** What decides how a sandbox pod behaves; pods with another hash are never claimed. */
export function podConfigHash(input: SandboxPodInput): string {
  const { runner, limits, concurrency } = input.pool;
  const config = {
    image: podImage(input),
    runner,
    limits,
    concurrency,
    heapShare: input.heapShare ?? 0.5,
    layout: 3,
    // Only for python pods, so other pools' pods keep their hash.
    ...(isPythonRunner(runner) ? { readOnlyDev: true } : {}),
    // Only where there is one: the hashes of other pools' pods stay what they were.
    ...(input.mcpServer !== undefined ? { mcpServer: input.mcpServer, packageCache: input.packageCache ?? null } : {}),
  };
  // Canonical JSON: the operator reads the pool back from the API server, which orders an object's keys its own
  // way (`limits`, a launch), and a core may read it from a YAML file: the same pool must give the same hash.
  return createHash('sha256').update(canonicalJson(config)).digest('hex').slice(0, 16);
}

/** The label selector of a pool's pods (all states). */
export function poolPodSelector(appId: string, poolName: string): string {
  return `${LABEL_ROLE}=${ROLE_SANDBOX},${LABEL_APP}=${appId},${LABEL_POOL}=${poolName}`;
}

/** A pod name prefix that is a valid DNS label prefix: the API server appends 5 characters. */
function generateName(appId: string, poolName: string): string {
  return `sb-${appId}-${poolName}`.toLowerCase().replace(/[^a-z0-9-]/g, '-').slice(0, 50).replace(/-*$/, '-');
}

/** The pod manifest (a plain object the API takes as a V1Pod). */
export function sandboxPod(input: SandboxPodInput, placement: PodPlacement): Record<string, unknown> {
  const { pool } = input;
  const program = RUNNER_PROGRAMS[pool.runner];
  const mcp = mcpParts(input);
  const heapMb = Math.max(8, Math.floor(pool.limits.memoryMb * (input.heapShare ?? 0.5)));
  const readable = mcp ? [IMAGE_APP_DIR, POD_WORK, POD_MCP_SERVER] : [IMAGE_APP_DIR, POD_WORK];
  const labels: Record<string, string> = {
    ...placement.labels,
    [LABEL_ROLE]: ROLE_SANDBOX,
    [LABEL_APP]: input.appId,
    [LABEL_POOL]: pool.name,
    [LABEL_SANDBOX_STATE]: placement.state,
    [LABEL_CONFIG]: podConfigHash(input),
  };
  if (placement.claimedBy) labels[LABEL_CLAIMED_BY] = placement.claimedBy;
  if (placement.owner) labels[LABEL_SANDBOX_POOL] = placement.owner.name;
  const memory = `${pool.limits.memoryMb}Mi`;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: generateName(input.appId, pool.name),
      namespace: input.namespace,
      labels,
      ...(placement.claimerPod ? { annotations: { [ANNOTATION_CLAIMER_POD]: placement.claimerPod } } : {}),
      ...(placement.owner
        ? { ownerReferences: [{ ...placement.owner, controller: true, blockOwnerDeletion: true }] }
        : {}),
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      // A deleted pod finishes the executions it runs (--drain-on-sigterm), within the pool's timeout.
      terminationGracePeriodSeconds: Math.ceil(pool.limits.timeoutMs / 1000) + 2,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: SANDBOX_UID,
        runAsGroup: SANDBOX_UID,
        fsGroup: SANDBOX_UID,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'runner',
          image: podImage(input),
          // Images come from local builds imported into the node (`uhlp images save`); no registry.
          imagePullPolicy: 'Never',
          command: isPythonRunner(pool.runner)
            ? pythonImageCommand()
            : [IMAGE_NODE_PATH, ...nodePermissionFlags(readable, [POD_WORK]), ...addonFlags(pool.runner), `${IMAGE_APP_DIR}/${program.entry}`],
          args: [
            '--listen',
            `tcp:0.0.0.0:${POD_RUNNER_PORT}`,
            ...(program.readsDefinitions && !mcp ? ['--definitions', POD_DEFINITIONS, '--definitions-via-mcp'] : []),
            '--work-dir',
            POD_WORK,
            '--concurrency',
            String(pool.concurrency),
            '--drain-on-sigterm',
            // RuntimeDefault lets a process fork and exec: the python runner loads the sandboxes' policy itself (seccomp_self.py).
            ...(isPythonRunner(pool.runner) ? [...pythonMemoryArgs(pool.limits.memoryMb), ...pythonSeccompArgs()] : []),
            ...(mcp?.args ?? []),
          ],
          env: [
            { name: 'NODE_OPTIONS', value: `--max-old-space-size=${heapMb}` },
            { name: 'NODE_ENV', value: 'production' },
            { name: 'TZ', value: 'UTC' },
            { name: 'HOME', value: POD_WORK },
            { name: 'TMPDIR', value: `${POD_WORK}/tmp` },
            { name: 'PYTHONDONTWRITEBYTECODE', value: '1' },
          ],
          // A runner that dies on the V8 heap limit prints why and then, as PID 1, cannot
          // abort (the signal is ignored) and ends on SIGSEGV: its last log lines are what
          // tell a heap exhaustion from a crash (pod-exit-cause.ts).
          terminationMessagePolicy: 'FallbackToLogsOnError',
          ports: [{ name: 'runner', containerPort: POD_RUNNER_PORT, protocol: 'TCP' }],
          readinessProbe: {
            httpGet: { path: '/healthz', port: POD_RUNNER_PORT },
            periodSeconds: 1,
            timeoutSeconds: 1,
            failureThreshold: 2,
          },
          resources: {
            limits: { memory, cpu: String(pool.limits.cpus) },
            // A small CPU request: warm pods mostly wait, and the pool's CPU share is its limit.
            requests: { memory, cpu: '10m' },
          },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            privileged: false,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [{ name: 'work', mountPath: POD_WORK }, ...(mcp ? [mcp.mount] : []), ...devMounts(pool.runner)],
        },
      ],
      volumes: [{ name: 'work', emptyDir: { sizeLimit: '256Mi' } }, ...(mcp ? [mcp.volume] : []), ...(devMounts(pool.runner).length > 0 ? [{ name: 'read-only-dev', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }] : [])],
    },
  };
}

/**
 * A python pod's /dev/shm and /dev/mqueue: places of its IPC namespace the runtime
 * mounts writable, where one session could leave a file for the next and the core
 * never looks. An empty volume mounted read-only replaces each (a mount of the pod's
 * own takes the place of the runtime's at the same path). Node runners are refused
 * writes there by their permission model; their pods keep the runtime's mounts.
 */
function devMounts(runner: RunnerKind): Array<Record<string, unknown>> {
  if (!isPythonRunner(runner)) return [];
  return ['/dev/shm', '/dev/mqueue'].map((mountPath) => ({ name: 'read-only-dev', mountPath, readOnly: true }));
}

/**
 * The mcp-host's server flags, and the package's read-only mount: the cache volume
 * with a subPath of the package's directory, so the pod sees that package and no other.
 */
function mcpParts(input: SandboxPodInput): { args: string[]; mount: Record<string, unknown>; volume: Record<string, unknown> } | undefined {
  const server = input.mcpServer;
  if (input.pool.runner !== 'mcp' || server === undefined) return undefined;
  const cache = input.packageCache;
  if (cache === undefined) throw new Error(`pool ${input.pool.name} runs an MCP server package, and no package cache volume is configured`);
  const source = 'claimName' in cache ? { persistentVolumeClaim: { claimName: cache.claimName, readOnly: true } } : { hostPath: { path: cache.hostPath, type: 'Directory' } };
  return {
    args: [
      '--server-entry',
      path.posix.join(POD_MCP_SERVER, server.entry),
      ...server.args.flatMap((arg) => ['--server-arg', arg]),
      ...server.env.flatMap((variable) => ['--server-env', variable]),
    ],
    mount: { name: 'mcp-server', mountPath: POD_MCP_SERVER, subPath: server.packageKey, readOnly: true },
    volume: { name: 'mcp-server', ...source },
  };
}
