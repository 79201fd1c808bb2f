/**
 * The CoreMCPServer: MCP over streamable HTTP (the official SDK v2, JSON
 * responses) at `POST /mcp` of the core, for clients of the 2026-07-28 revision
 * and of 2025-11-25 and before. Every request carries an execution's bearer
 * token; the servers, built once (core-mcp-protocol.ts), list and run only the
 * tools of the token's app. No MCP session lives in the core: the token is the
 * session, and its expiry or revocation ends it.
 */
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import path from 'node:path';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UhlpError, errorBody, isUhlpError } from '../shared/errors.js';
import type { LlmProvider } from '../llm/llm-provider.js';
import { createLlmService, type LlmStateStore } from '../llm/llm-service.js';
import type { GitDefinitionStore } from '../apps/git/definition-store.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../metrics.js';
import type { KvStore } from './kv-store.js';
import type { McpExecutions } from './mcp-executions.js';
import { type ExecutionGrant, McpTokenService, bearerToken } from './mcp-token-service.js';
import { toolsFor } from './tool-catalog.js';
import type { EndpointInvoker, ToolServices } from './tool-definition.js';
import { invokeTool } from './tool-invoker.js';
import { McpBodyTooLarge, mcpBodyParser } from './mcp-body.js';
import { createCoreMcpProtocol, type CoreMcpProtocol, type GrantTools, type ListedMcpTool, type StandardHeaders } from './core-mcp-protocol.js';
import type { CallToolResult } from '@modelcontextprotocol/server';
import { mcpBodyLimitBytes } from './mcp-limits.js';
import { CARRIER_LEVELS, jsonTooDeep, MAX_JSON_DEPTH, nestsDeeper } from '../turns/json-depth.js';

export const MCP_PATH = '/mcp';

/** The optional services are the tools' own (tool-definition.ts says what each tool does without one). */
export interface CoreMcpServerOptions extends Pick<ToolServices, 'functions' | 'codeq' | 'sources' | 'embedder' | 'workflows'> {
  readonly kv: KvStore;
  /** The provider behind core.llm.generate. */
  readonly llm: LlmProvider;
  /** Where LLM token budgets and cached answers live: the core's runtime store (memory or Redis). */
  readonly llmState: LlmStateStore;
  /** The endpoint spine for shell and web tools. @defaultValue none: those calls fail UHLP_ENDPOINT_UNAVAILABLE */
  readonly spine?: EndpointInvoker;
  /** `<dataDir>/revisions`. */
  readonly revisionsRoot: string;
  /** The Git state store behind core.state.applyStateDiff; the tool answers 501 without one. */
  readonly definitionStore?: GitDefinitionStore;
  /** Parent of the per-execution scratch directories, e.g. `<dataDir>/scratch`. */
  readonly scratchRoot: string;
  /** The environment `shell.env` picks from. @defaultValue {} */
  readonly hostEnv?: Readonly<Record<string, string | undefined>>;
  readonly metrics: Metrics;
  readonly logger: Logger;
  /** Other MCP servers' tools (app.* and community.*). @defaultValue none: only the core's own tools */
  readonly federation?: FederatedTools;
  /**
   * Largest request body /mcp reads, bytes: sized for what its tools accept (mcp-limits.ts), not the ingress limit.
   * @defaultValue mcpBodyLimitBytes of the default run cap (1 MiB): 3 MiB
   */
  readonly bodyLimitBytes?: number;
}

/** What the endpoint asks of the federation (federation/mcp-federation.ts). */
export interface FederatedTools {
  list(grant: ExecutionGrant, signal: AbortSignal): Promise<ListedMcpTool[]>;
  call(grant: ExecutionGrant, name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult>;
  /** Tells `onChange` when a server's list of the grant's app changed; answers how to stop. */
  watch?(grant: ExecutionGrant, onChange: () => void): () => void;
}

export interface CoreMcpServer extends McpExecutions {
  readonly tokens: McpTokenService;
  /** The services tools run with (kv, LLM, spine, scratch directories). */
  readonly services: ToolServices;
  /** Largest request body /mcp reads, bytes (the core's TCP listener applies it to /mcp too). */
  readonly bodyLimitBytes: number;
  /** Mounts `/mcp` on the core's fastify app. */
  register(app: FastifyInstance): void;
  close(): Promise<void>;
}

export function createCoreMcpServer(options: CoreMcpServerOptions): CoreMcpServer {
  const scratchDirs = new WeakMap<ExecutionGrant, Promise<string>>();
  const pendingRemovals = new Set<Promise<void>>();

  const removeScratch = (grant: ExecutionGrant): void => {
    const dir = scratchDirs.get(grant);
    if (dir === undefined) return;
    scratchDirs.delete(grant);
    const removal = dir
      .then((created) => rm(created, { recursive: true, force: true }))
      .catch((error: unknown) => options.logger.warn({ err: error, requestId: grant.requestId }, 'scratch directory not removed'))
      .finally(() => pendingRemovals.delete(removal));
    pendingRemovals.add(removal);
  };

  const tokens = new McpTokenService({ onDrop: removeScratch });
  const llm = createLlmService({ provider: options.llm, store: options.llmState, metrics: options.metrics, logger: options.logger });

  const services: ToolServices = {
    kv: options.kv,
    spine: options.spine,
    revisionsRoot: options.revisionsRoot,
    definitionStore: options.definitionStore,
    hostEnv: options.hostEnv ?? {},
    logger: options.logger,
    llm,
    ...(options.functions !== undefined ? { functions: options.functions } : {}),
    ...(options.codeq !== undefined ? { codeq: options.codeq } : {}),
    ...(options.sources !== undefined ? { sources: options.sources } : {}),
    ...(options.embedder !== undefined ? { embedder: options.embedder } : {}),
    ...(options.workflows !== undefined ? { workflows: options.workflows } : {}),
    scratchDir(grant) {
      let dir = scratchDirs.get(grant);
      // A call still running when its execution ends must not leave a scratch directory behind.
      if (grant.ended) return Promise.reject(new UhlpError('UHLP_MCP_UNAUTHORIZED', 'the execution has ended'));
      if (dir === undefined) {
        dir = mkdir(options.scratchRoot, { recursive: true, mode: 0o700 }).then(() => mkdtemp(path.join(options.scratchRoot, 'x-')));
        scratchDirs.set(grant, dir);
      }
      return dir;
    },
  };
  const invokerDeps = { services, metrics: options.metrics, logger: options.logger };
  const bodyLimitBytes = options.bodyLimitBytes ?? mcpBodyLimitBytes(1024 * 1024);
  const federation = options.federation;
  const grantTools: GrantTools = {
    async list(grant, signal) {
      const core = toolsFor(grant.capabilities, grant.run?.owner === true).map((tool) => ({
        name: tool.name,
        description: tool.description,
        inputSchema: tool.inputSchema as unknown as Record<string, unknown>,
      }));
      // Servers are asked only for apps that may be granted some of their tools.
      return federation === undefined || grant.capabilities.mcp === undefined ? core : [...core, ...(await federation.list(grant, signal))];
    },
    call: (grant, name, args, signal) =>
      federation !== undefined && isFederatedName(name) ? federation.call(grant, name, args, signal) : invokeTool(invokerDeps, grant, name, args, signal),
    ...(federation?.watch !== undefined ? { watch: (grant, onChange) => federation.watch!(grant, onChange) } : {}),
  };
  // Built once, on the first request: the SDK servers connect asynchronously.
  let protocol: Promise<CoreMcpProtocol> | undefined;
  const protocolOnce = (): Promise<CoreMcpProtocol> => (protocol ??= createCoreMcpProtocol(grantTools));

  async function handlePost(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    let grant: ExecutionGrant;
    try {
      grant = tokens.resolve(bearerToken(request.headers.authorization));
    } catch (error) {
      if (!isUhlpError(error)) throw error;
      await reply.code(401).header('www-authenticate', 'Bearer realm="uhlp-mcp"').send(errorBody(error, request.id));
      return;
    }
    if (request.body instanceof McpBodyTooLarge) {
      const error = new UhlpError('UHLP_BODY_TOO_LARGE', `the MCP request is over the endpoint's limit of ${request.body.limitBytes} bytes`, {
        field: 'body',
        limitBytes: request.body.limitBytes,
      });
      await reply.code(error.statusCode).send(errorBody(error, request.id));
      return;
    }
    const text = (request.body as Buffer | undefined)?.toString('utf8') ?? '';
    // Arguments too deep to serialize would fail inside the tool (a payload is serialized to be published): refused here, for every tool.
    if (nestsDeeper(text, MAX_JSON_DEPTH + CARRIER_LEVELS)) {
      const error = jsonTooDeep('request');
      await reply.code(error.statusCode).send(errorBody(error, request.id));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      await reply.code(400).send({ jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null });
      return;
    }
    // Aborted when the client goes away before its answer: the tool is told through its signal.
    const aborter = new AbortController();
    const onClose = (): void => {
      if (!reply.raw.writableEnded) aborter.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const answer = await (await protocolOnce()).serve(body, standardHeaders(request), grant, aborter.signal);
      if (answer.stream !== undefined) {
        await reply
          .code(answer.status)
          .headers({ 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' })
          .send(Readable.from(answer.stream));
      } else if (answer.body === undefined) await reply.code(answer.status).send();
      else await reply.code(answer.status).header('content-type', 'application/json').send(JSON.stringify(answer.body));
    } catch (error) {
      if (aborter.signal.aborted) return;
      options.logger.error({ err: error, requestId: request.id }, 'MCP request failed');
      await reply.code(500).send({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  return {
    tokens,
    services,
    bodyLimitBytes,
    beginExecution(binding, ttlMs) {
      return tokens.mint(binding, ttlMs);
    },
    endExecution(token) {
      return tokens.revoke(token)?.calls.snapshot() ?? { calls: [], externalCalls: [], capabilityViolations: [], droppedEvidence: 0 };
    },
    register(app) {
      // A context of its own: /mcp reads its bodies with its own limit and parser, the core's other routes with theirs.
      void app.register(async (scope) => {
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser('*', mcpBodyParser(bodyLimitBytes));
        scope.post(MCP_PATH, handlePost);
        // Stateless: there is no session to stream server messages on or to delete.
        scope.route({
          method: ['GET', 'DELETE'],
          url: MCP_PATH,
          handler: async (_request, reply) =>
            reply.code(405).header('allow', 'POST').send({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this server is stateless, use POST' }, id: null }),
        });
      });
    },
    async close() {
      tokens.close();
      await (await protocol)?.close();
      await Promise.all([...pendingRemovals]);
    },
  };
}

/** The 2026-07-28 revision's standard request headers, when the client sent them. */
function standardHeaders(request: FastifyRequest): StandardHeaders {
  const one = (name: string): string | undefined => {
    const value = request.headers[name];
    return typeof value === 'string' ? value : undefined;
  };
  const protocolVersion = one('mcp-protocol-version');
  const method = one('mcp-method');
  const name = one('mcp-name');
  return {
    ...(protocolVersion !== undefined ? { protocolVersion } : {}),
    ...(method !== undefined ? { method } : {}),
    ...(name !== undefined ? { name } : {}),
  };
}

/** Federated tools are named `app.<server>.<tool>` or `community.<server>.<tool>`; the core's own never are. */
export function isFederatedName(name: string): boolean {
  return name.startsWith('app.') || name.startsWith('community.');
}
