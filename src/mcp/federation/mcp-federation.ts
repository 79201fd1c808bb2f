/**
 * MCP federation: the tools of other MCP servers offered at the core's one
 * endpoint, as `app.<server>.<tool>` (servers an app declares in mcpServers)
 * and `community.<server>.<tool>` (servers the operator installs for every
 * app). What one execution sees and may call is decided by its app's
 * capabilities.mcp, with the same predicate for listing and for calling; a
 * server's own list is read (and checked) at most once per TTL per app, and a
 * call names only a tool that list holds. Every call is evidence (server,
 * tool, duration, outcome, a hash of the arguments) and a metric.
 */
import { createHash } from 'node:crypto';
import type { CallToolResult } from '@modelcontextprotocol/server';
import type { LoadedApp, AppSnapshot } from '../../apps/app-snapshot.js';
import type { McpServerSpec, PoolSpec } from '../../apps/schema/app-definition-schema.js';
import type { Logger } from '../../logger.js';
import type { Metrics } from '../../metrics.js';
import type { McpServerLaunch } from '../../sandbox/sandbox-driver.js';
import type { PoolStrategy } from '../../sandbox/pool-strategy.js';
import { canonicalJson } from '../../shared/canonical-json.js';
import { UhlpError, errorStatus, isUhlpError } from '../../shared/errors.js';
import { capabilityDenied } from '../capability-guard.js';
import type { ListedMcpTool } from '../core-mcp-protocol.js';
import type { ExecutionGrant } from '../mcp-token-service.js';
import type { FederatedServer, RawTool } from './federated-server.js';
import { serverFailure } from './federated-server.js';
import { createHttpServer } from './http-server.js';
import type { PackageCache } from './package-cache.js';
import { createSandboxServer } from './sandbox-server.js';
import { communityPoolSpec, type CommunityServerSpec } from './community-servers.js';
import { NO_SECRETS, type SecretStore } from '../../secrets/secret-store.js';
import type { EgressCredential } from '../../net/egress-credentials.js';
import { refusalRule, serverMayBeGranted, toolGrant } from './tool-grant.js';
import { mcpTraceMeta } from '../../tracing/tool-call-span.js';
import { observeWithTrace } from '../../tracing/exemplars.js';

/** How long a server's tool list is kept, ms: its changes reach callers within this. */
export const SERVER_TOOLS_TTL_MS = 30_000;
/** Tools kept of one server's list: a server that lists more is cut. */
export const MAX_TOOLS_PER_SERVER = 512;
/** MCP's tool-name alphabet (2025-11-25): anything else is a server lying about its tools. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const MAX_DESCRIPTION = 2048;

export interface McpFederationOptions {
  /** The pool of an app's `runner: mcp` pool (the sandbox manager's). */
  appPool(appId: string, poolName: string): PoolStrategy | undefined;
  /** Why an app's `runner: mcp` pool is not running (its package installing or failed). @defaultValue none */
  appPoolProblem?(appId: string, poolName: string): { readonly code: string; readonly message: string } | undefined;
  readonly packages: PackageCache;
  /** Servers the operator installs for every app (community.*). @defaultValue none */
  readonly community?: readonly CommunityServerSpec[];
  /** Starts a pool no AppDefinition declares, for one app's sandboxes of a stdio community server. */
  startPool?(appId: string, spec: PoolSpec, launch: McpServerLaunch): PoolStrategy;
  /** Retires such a pool. */
  retirePool?(appId: string, poolName: string): void;
  /** The values of remote servers' header secretRefs: each app's own, and the community servers'. @defaultValue none */
  readonly secrets?: SecretStore;
  /** host:port pairs remote servers may resolve to although private. @defaultValue [] */
  readonly allowPrivate?: readonly string[];
  /** Whether a workflow run lets the grant call a tool the app marks critical. */
  criticalAllowed?(grant: ExecutionGrant, tool: string): Promise<boolean>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Clock, ms. @defaultValue Date.now */
  readonly now?: () => number;
}

interface CheckedTool extends ListedMcpTool {
  /** The name the server knows it by. */
  readonly serverName: string;
}

interface ToolList {
  readonly fetchedAt: number;
  readonly tools: ReadonlyMap<string, CheckedTool>;
}

interface ServerEntry {
  readonly appId: string;
  readonly server: FederatedServer;
  list?: ToolList;
  pending?: Promise<ToolList>;
}

export class McpFederation {
  /** Per app: its servers by id (`app.fs`), and its community servers. */
  private readonly apps = new Map<string, Map<string, ServerEntry>>();
  private readonly apps_ = new Map<string, LoadedApp>();
  private readonly now: () => number;
  /** Who listens for tool-list changes of an app (subscriptions/listen), and the timer that re-reads its servers' lists meanwhile. */
  private readonly watchers = new Map<string, { listeners: Set<() => void>; timer: NodeJS.Timeout }>();
  /** One app's pools of stdio community servers, by `<app>\0<server>`, started on first use. */
  private readonly communityPools = new Map<string, Promise<PoolStrategy | undefined>>();

  constructor(private readonly options: McpFederationOptions) {
    this.now = options.now ?? Date.now;
  }

  /** Takes the apps of a registry snapshot: servers of removed or changed apps are dropped. */
  sync(snapshot: AppSnapshot): void {
    for (const [appId, entries] of this.apps) {
      const next = snapshot.apps.get(appId);
      if (next === undefined || next.document.spec.mcpServers !== this.apps_.get(appId)?.document.spec.mcpServers) {
        for (const entry of entries.values()) void entry.server.close();
        this.apps.delete(appId);
        this.changed(appId);
      }
    }
    for (const app of snapshot.apps.values()) this.apps_.set(app.id, app);
    for (const appId of [...this.apps_.keys()]) if (!snapshot.apps.has(appId)) this.apps_.delete(appId);
    // A removed app's community pools go with it.
    for (const k of [...this.communityPools.keys()]) {
      const [appId, server] = k.split('\0') as [string, string];
      if (snapshot.apps.has(appId)) continue;
      this.communityPools.delete(k);
      this.options.retirePool?.(appId, `community-${server}`);
    }
  }

  /** The stdio server a `runner: mcp` pool of `app` runs (for the sandbox manager); installs its package first. */
  async launch(app: LoadedApp, pool: PoolSpec): Promise<McpServerLaunch | undefined> {
    const spec = app.document.spec.mcpServers?.find((server) => server.stdio?.pool === pool.name);
    if (spec?.stdio === undefined) return undefined;
    const env = spec.stdio.env.map((variable) => `${variable.name}=${variable.value}`);
    if (spec.stdio.package !== undefined) {
      const installed = await this.options.packages.install(spec.stdio.package);
      return { packageDir: installed.dir, entry: installed.entry, args: spec.stdio.args, env };
    }
    if (spec.stdio.script !== undefined) return { entry: `${app.revision}/${spec.stdio.script}`, args: spec.stdio.args, env };
    return undefined;
  }

  /** The federated tools the grant's app may list, by full name. */
  async list(grant: ExecutionGrant, signal: AbortSignal): Promise<ListedMcpTool[]> {
    const grantOf = toolGrant(grant.capabilities);
    const servers = [...this.serversOf(grant.appId).values()].filter((entry) => serverMayBeGranted(grant.capabilities, entry.server.id));
    const lists = await Promise.all(
      servers.map(async (entry) => {
        try {
          return [...(await this.toolsOf(entry, signal)).tools.values()].filter((tool) => grantOf(tool.name));
        } catch (error) {
          // One broken server leaves the others listed.
          this.options.logger.warn({ app: grant.appId, server: entry.server.id, err: isUhlpError(error) ? error.message : error }, 'federated server not listed');
          return [];
        }
      }),
    );
    return lists.flat().map(({ serverName: _serverName, ...tool }) => tool);
  }

  /** Calls a federated tool for the grant; refusals and failures are tool errors with a stable code. */
  async call(grant: ExecutionGrant, fullName: string, args: unknown, signal: AbortSignal): Promise<CallToolResult> {
    const started = performance.now();
    const [scope, serverName] = fullName.split('.', 2);
    const serverId = `${scope}.${serverName}`;
    const argumentsHash = `sha256:${createHash('sha256').update(canonicalJson(args ?? {})).digest('hex')}`;
    let toolLabel = 'unknown';
    let serverLabel = 'unknown';
    try {
      const entry = this.serversOf(grant.appId).get(serverId);
      if (entry === undefined) throw new UhlpError('UHLP_MCP_TOOL_NOT_FOUND', `no tool named "${fullName.slice(0, 128)}"`, { tool: fullName.slice(0, 128) });
      serverLabel = serverId;
      if (!toolGrant(grant.capabilities)(fullName)) {
        toolLabel = (await this.listedName(entry, grant, fullName, signal)) ?? 'unknown';
        throw capabilityDenied('mcp', refusalRule(grant.capabilities, fullName), `the app's capabilities do not allow ${fullName.slice(0, 128)}`, { tool: fullName.slice(0, 128) });
      }
      // A name the server did not list is not called, whatever the server would do with it.
      const tool = (await this.toolsOf(entry, signal)).tools.get(fullName);
      if (tool === undefined) throw new UhlpError('UHLP_MCP_TOOL_NOT_FOUND', `${serverId} lists no tool named "${fullName.slice(serverId.length + 1, 128)}"`, { tool: fullName.slice(0, 128) });
      toolLabel = tool.serverName;
      if (grant.criticalTools?.has(fullName) === true && !(await this.options.criticalAllowed?.(grant, fullName))) {
        throw new UhlpError('UHLP_TOOL_APPROVAL_REQUIRED', `${fullName} is marked risk_level: critical: only a workflow run whose policy allows it or whose approval granted it may call it`, { tool: fullName });
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        if (args !== undefined) throw new UhlpError('UHLP_MCP_INVALID_ARGUMENTS', `${fullName}: arguments must be an object`, { tool: fullName, field: 'arguments' });
      }
      // The caller's trace context goes on in `_meta` (MCP 2026-07-28): the server's spans join the turn's trace.
      const { result } = await entry.server.callTool(tool.serverName, (args ?? {}) as Record<string, unknown>, signal, mcpTraceMeta());
      const answer = checkResult(result, entry.server);
      const durationMs = performance.now() - started;
      const status = answer.isError === true ? 'UHLP_MCP_SERVER_ERROR' : 'ok';
      this.observe(grant, serverLabel, toolLabel, fullName, durationMs, status, argumentsHash);
      return answer;
    } catch (thrown) {
      const durationMs = performance.now() - started;
      const error = isUhlpError(thrown) ? thrown : new UhlpError('UHLP_INTERNAL', 'internal error in the federation; see the core log', { tool: fullName.slice(0, 128) });
      if (!isUhlpError(thrown)) this.options.logger.error({ err: thrown, app: grant.appId, tool: fullName.slice(0, 128) }, 'federated call failed');
      this.observe(grant, serverLabel, toolLabel, fullName.slice(0, 128), durationMs, error.code, argumentsHash);
      if (error.code === 'UHLP_CAPABILITY_DENIED') {
        this.options.metrics.capabilityRefusals.inc({ app: grant.appId, capability: 'mcp' });
        grant.calls.recordViolation(fullName.slice(0, 200), `capabilities.mcp.${String((error.details as { rule?: unknown }).rule)}`, error.message);
      }
      if (error.code === 'UHLP_TOOL_APPROVAL_REQUIRED') grant.calls.recordViolation(fullName.slice(0, 200), 'tools.risk_level.critical', error.message);
      const content = { code: error.code, message: error.message, status: error.statusCode, ...(error.details !== undefined ? { details: error.details } : {}) };
      return { isError: true, content: [{ type: 'text', text: `${error.code}: ${error.message}` }], structuredContent: content };
    }
  }

  /**
   * The name a refused tool has in its server's list, for the metric's `tool`
   * label: only a name the server listed is a label, so the label's values stay
   * the server's own (at most MAX_TOOLS_PER_SERVER), whatever callers send. The
   * list the core holds is used, at any age; without one it is read only when
   * the app may be granted some tool of the server (as tools/list would read
   * it): a server the app can use nothing of is never asked on its behalf.
   */
  private async listedName(entry: ServerEntry, grant: ExecutionGrant, fullName: string, signal: AbortSignal): Promise<string | undefined> {
    const list = entry.list ?? (serverMayBeGranted(grant.capabilities, entry.server.id) ? await this.toolsOf(entry, signal).catch(() => undefined) : undefined);
    return list?.tools.get(fullName)?.serverName;
  }

  /**
   * Tells `onChange` when a server's tool list of the grant's app changes; while
   * anyone listens, the lists are read again every SERVER_TOOLS_TTL_MS.
   */
  watch(grant: ExecutionGrant, onChange: () => void): () => void {
    const appId = grant.appId;
    let watching = this.watchers.get(appId);
    if (watching === undefined) {
      const timer = setInterval(() => this.refresh(appId), SERVER_TOOLS_TTL_MS);
      timer.unref();
      watching = { listeners: new Set(), timer };
      this.watchers.set(appId, watching);
    }
    const listener = (): void => onChange();
    watching.listeners.add(listener);
    return () => {
      const current = this.watchers.get(appId);
      current?.listeners.delete(listener);
      if (current !== undefined && current.listeners.size === 0) {
        clearInterval(current.timer);
        this.watchers.delete(appId);
      }
    };
  }

  /** Reads the app's servers' lists again (their TTL has passed); changes are told to the watchers. */
  private refresh(appId: string): void {
    const signal = AbortSignal.timeout(SERVER_TOOLS_TTL_MS);
    for (const entry of this.serversOf(appId).values()) void this.toolsOf(entry, signal).catch(() => undefined);
  }

  private changed(appId: string): void {
    for (const listener of this.watchers.get(appId)?.listeners ?? []) listener();
  }

  /** Closes every server's client. */
  async close(): Promise<void> {
    for (const { timer } of this.watchers.values()) clearInterval(timer);
    this.watchers.clear();
    const closing = [...this.apps.values()].flatMap((entries) => [...entries.values()].map((entry) => entry.server.close()));
    this.apps.clear();
    await Promise.all(closing);
  }

  private observe(grant: ExecutionGrant, server: string, tool: string, fullName: string, durationMs: number, status: string, argumentsHash: string): void {
    grant.calls.recordFederated(fullName, server, durationMs, status, argumentsHash);
    this.options.metrics.mcpFederatedCalls.inc({ app: grant.appId, server, tool, outcome: status });
    observeWithTrace(this.options.metrics.mcpFederatedCallSeconds.labels(grant.appId, server, tool), durationMs / 1000);
  }

  /** The app's servers, made on first use after each change of its definition. */
  private serversOf(appId: string): Map<string, ServerEntry> {
    let entries = this.apps.get(appId);
    if (entries !== undefined) return entries;
    entries = new Map();
    const app = this.apps_.get(appId);
    for (const spec of app?.document.spec.mcpServers ?? []) {
      const server = this.serverFor(appId, `app.${spec.name}`, spec, 'app');
      if (server !== undefined) entries.set(server.id, { appId, server });
    }
    for (const spec of this.options.community ?? []) {
      const id = `community.${spec.name}`;
      const server =
        spec.stdio !== undefined
          ? createSandboxServer({ id, pool: () => this.communityPool(appId, spec), timeoutMs: spec.timeoutMs, maxOutputBytes: spec.maxOutputBytes })
          : this.serverFor(appId, id, spec as McpServerSpec, 'community');
      if (server !== undefined) entries.set(id, { appId, server });
    }
    this.apps.set(appId, entries);
    return entries;
  }

  /** The app's pool of a stdio community server, started (its package installed first) on first use. */
  private communityPool(appId: string, spec: CommunityServerSpec): Promise<PoolStrategy | undefined> {
    const k = `${appId}\0${spec.name}`;
    let pool = this.communityPools.get(k);
    if (pool === undefined) {
      pool = (async () => {
        const installed = await this.options.packages.install(spec.stdio!.package!);
        const launch: McpServerLaunch = {
          packageDir: installed.dir,
          entry: installed.entry,
          args: spec.stdio!.args,
          env: spec.stdio!.env.map((variable) => `${variable.name}=${variable.value}`),
        };
        return this.options.startPool?.(appId, communityPoolSpec(spec), launch);
      })().catch((error: unknown) => {
        this.communityPools.delete(k);
        if (isUhlpError(error)) this.options.logger.error({ code: error.code, app: appId, server: `community.${spec.name}`, err: error.message, details: error.details }, 'the package of a community MCP server cannot be installed');
        throw serverFailure('UHLP_MCP_SERVER_UNAVAILABLE', `community.${spec.name}`, isUhlpError(error) ? error.message : 'its package could not be installed', isUhlpError(error) ? { cause: error.code } : {});
      });
      this.communityPools.set(k, pool);
    }
    return pool;
  }

  /** An app's server (`owner: 'app'`) sends the app's own secrets; a community server the operator's. */
  private serverFor(appId: string, id: string, spec: McpServerSpec, owner: 'app' | 'community'): FederatedServer | undefined {
    const limits = { timeoutMs: spec.timeoutMs, maxOutputBytes: spec.maxOutputBytes };
    if (spec.stdio !== undefined) {
      const poolName = spec.stdio.pool;
      return createSandboxServer({ id, pool: () => this.options.appPool(appId, poolName), problem: () => this.options.appPoolProblem?.(appId, poolName), ...limits });
    }
    if (spec.http !== undefined) {
      const secrets = this.options.secrets ?? NO_SECRETS;
      const origin = new URL(spec.http.url).origin;
      const headers = spec.http.headers;
      // Read for every request: a rotated secret is sent from the next request on, with no reconnect.
      const credentials = (): EgressCredential[] =>
        headers.flatMap((header) => {
          const { name, key } = header.secretRef;
          const secret = owner === 'app' ? secrets.ofApp(appId, name, key) : secrets.ofCommunity(name, key);
          if (secret === undefined) {
            this.options.logger.warn({ app: appId, server: id, secret: name }, 'secret of a remote MCP server not found; header not sent');
            return [];
          }
          return [{ origin, header: header.name, value: `${header.prefix ?? ''}${secret.value}` }];
        });
      return createHttpServer({ id, url: spec.http.url, ...(headers.length > 0 ? { credentials } : {}), ...limits, allowPrivate: this.options.allowPrivate ?? [] });
    }
    return undefined;
  }

  private toolsOf(entry: ServerEntry, signal: AbortSignal): Promise<ToolList> {
    if (entry.list !== undefined && this.now() - entry.list.fetchedAt < SERVER_TOOLS_TTL_MS) return Promise.resolve(entry.list);
    entry.pending ??= entry.server
      .listTools(signal)
      .then((raw) => {
        const list = { fetchedAt: this.now(), tools: checkTools(entry.server.id, raw, this.options.logger) };
        const before = entry.list;
        entry.list = list;
        if (before !== undefined && !sameTools(before.tools, list.tools)) this.changed(entry.appId);
        return list;
      })
      .finally(() => {
        entry.pending = undefined;
      });
    return entry.pending;
  }
}

/** The tools of a server's list that the core offers: well named, with an object schema, each name once, at most MAX_TOOLS_PER_SERVER. */
export function checkTools(serverId: string, raw: readonly RawTool[], logger?: Logger): ReadonlyMap<string, CheckedTool> {
  const tools = new Map<string, CheckedTool>();
  let refused = 0;
  for (const tool of raw) {
    const name = tool?.name;
    const schema = tool?.inputSchema as { type?: unknown } | undefined;
    const fullName = `${serverId}.${String(name)}`;
    if (typeof name !== 'string' || !TOOL_NAME.test(name) || typeof schema !== 'object' || schema === null || schema.type !== 'object' || tools.has(fullName) || tools.size >= MAX_TOOLS_PER_SERVER) {
      refused += 1;
      continue;
    }
    tools.set(fullName, {
      name: fullName,
      serverName: name,
      inputSchema: schema as Record<string, unknown>,
      ...(typeof tool.description === 'string' ? { description: tool.description.slice(0, MAX_DESCRIPTION) } : {}),
      ...(typeof tool.annotations === 'object' && tool.annotations !== null ? { annotations: tool.annotations as Record<string, unknown> } : {}),
    });
  }
  if (refused > 0) logger?.warn({ server: serverId, refused }, 'federated server listed tools the core does not offer');
  return tools;
}

/** Whether two checked lists offer the same tools, with the same descriptions and schemas. */
function sameTools(a: ReadonlyMap<string, CheckedTool>, b: ReadonlyMap<string, CheckedTool>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, tool] of a) {
    const other = b.get(name);
    if (other === undefined || other.description !== tool.description || JSON.stringify(other.inputSchema) !== JSON.stringify(tool.inputSchema)) return false;
  }
  return true;
}

/**
 * The server's tool result as the caller gets it: a `content` array is required
 * (a server answering anything else is not answering the call); structured
 * content is always an object, so scripts read it as they read the core's tools.
 */
function checkResult(result: Record<string, unknown>, server: FederatedServer): CallToolResult {
  const content = result['content'];
  if (!Array.isArray(content)) throw serverFailure('UHLP_MCP_SERVER_PROTOCOL_ERROR', server.id, 'the tool result has no content array');
  const structured = result['structuredContent'];
  const structuredContent = typeof structured === 'object' && structured !== null && !Array.isArray(structured) ? (structured as Record<string, unknown>) : { content };
  if (result['isError'] === true) {
    const text = content.find((item: { type?: unknown }) => item?.type === 'text') as { text?: unknown } | undefined;
    return {
      isError: true,
      content: content as CallToolResult['content'],
      structuredContent: {
        code: 'UHLP_MCP_SERVER_ERROR',
        message: `${server.id}: ${String(text?.text ?? 'the tool failed').slice(0, 1000)}`,
        status: errorStatus('UHLP_MCP_SERVER_ERROR'),
        details: { server: server.id, content },
      },
    };
  }
  return { content: content as CallToolResult['content'], structuredContent };
}
