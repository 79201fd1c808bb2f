/**
 * The seam between pool semantics (pool-strategy.ts) and what a sandbox physically
 * is: a child process, a Docker container, a pod. A driver only creates, watches
 * and destroys single sandboxes; counting, queuing and recycling live in the pool,
 * and who keeps the warm spares is the pool's strategy.
 */
import type { PoolSpec } from '../apps/schema/app-definition-schema.js';
import type { WorkTree } from './work-tree.js';

/** Where a sandbox's runner answers HTTP: a Unix socket, or a loopback port. */
export type SandboxEndpoint =
  | { readonly kind: 'unix'; readonly socketPath: string }
  | { readonly kind: 'tcp'; readonly host: string; readonly port: number };

/** Why a sandbox went away; recorded in metrics and logs. */
export type SandboxExitCause =
  | 'crash'
  | 'oom'
  | 'heap-limit'
  | 'timeout'
  | 'recycled'
  | 'idle'
  | 'unhealthy'
  | 'bad-response'
  | 'shutdown'
  | 'start-failed';

/**
 * The stdio MCP server a `runner: mcp` sandbox runs: its entry module, in an
 * installed package (mounted read-only) or in the app's revisions (a script).
 */
export interface McpServerLaunch {
  /** Host directory of the installed package; undefined for a script of the app. */
  readonly packageDir?: string;
  /** The entry, relative to packageDir, or to the app's revisions directory (`<revision>/<script>`). */
  readonly entry: string;
  /** Arguments after the entry; `{work}` stands for the sandbox's writable tree. */
  readonly args: readonly string[];
  /** `NAME=value` variables of the server's process; `{work}` as in args. @defaultValue none */
  readonly env?: readonly string[];
}

export interface SandboxSpec {
  readonly appId: string;
  readonly pool: PoolSpec;
  /** The app's revisions (`<revision>/<app files>`), the only definitions the sandbox may read. */
  readonly definitionsRoot: string;
  /**
   * The core's MCP endpoint as a Unix socket on this host. Drivers whose sandboxes
   * have no route to the core's TCP port (containers without network) mount it.
   */
  readonly mcpSocket?: string;
  /** Labels a driver attaches where it can (container labels, pod labels). */
  readonly labels: Readonly<Record<string, string>>;
  /**
   * The sandbox needs the network (its app's capabilities call out). Drivers that
   * isolate give it one then, and none otherwise; the runner is then reached on a
   * loopback port instead of a Unix socket. @defaultValue false
   */
  readonly network?: boolean;
  /** The stdio MCP server of a `runner: mcp` pool. @defaultValue none */
  readonly mcpServer?: McpServerLaunch;
}

export interface SandboxHandle {
  /** Unique within the driver; a container id, a pid-based id, a pod name. */
  readonly id: string;
  readonly endpoint: SandboxEndpoint;
  /** The sandbox's writable tree, where each turn's session directories are made and checked; none where the driver has no host view of it. */
  readonly workTree?: WorkTree;
  /**
   * Resolves once, when the sandbox is gone for a reason the driver saw (the
   * process exited, the container died). The cause is the driver's best reading.
   */
  readonly exited: Promise<SandboxExitCause>;
  /**
   * Resolves when the sandbox is being stopped from outside but finishes what it
   * runs first (a pod being deleted drains on SIGTERM): the pool gives it no new
   * work and destroys it once idle, so its executions in flight still answer.
   * @defaultValue never (drivers whose sandboxes only end at once)
   */
  readonly retiring?: Promise<void>;
}

export interface SandboxDriver {
  readonly name: string;
  /** What contains a sandbox: `container`, `namespaces` (process sandboxes with bubblewrap) or `none`. */
  readonly isolation: 'container' | 'namespaces' | 'none';
  /** Starts a sandbox and resolves once its runner answers; rejects if it cannot. */
  create(spec: SandboxSpec, signal?: AbortSignal): Promise<SandboxHandle>;
  /** Stops and removes the sandbox. Idempotent; never rejects for an already-gone sandbox. */
  destroy(handle: SandboxHandle, cause: SandboxExitCause): Promise<void>;
  /**
   * Sandboxes left by an earlier run of this core instance that the driver can
   * hand back to their pools (containers found by label). Optional: the process
   * driver's children die with their parent. With `spec`, sandboxes started with
   * another configuration (image, limits, network) are removed, not adopted.
   */
  adopt?(appId: string, poolName: string, spec?: SandboxSpec): Promise<SandboxHandle[]>;
  /**
   * Tells the driver that a pool of this spec starts, before any sandbox of it is asked
   * for. Optional: the pod driver writes a `runner: mcp` pool's server into its SandboxPool,
   * from which the operator makes the pool's warm pods.
   */
  preparePool?(spec: SandboxSpec): Promise<void>;
  /** Releases driver-wide resources after every sandbox is destroyed. */
  close(): Promise<void>;
}
