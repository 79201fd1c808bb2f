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
import { WorkflowCancelledError } from '../shared/workflow-errors.js';
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
import { START_TOOL, START_TOOL_LISTING, unaskedAnswer, type RunTaskCalls } from './run-task-calls.js';
import type { OnClientGone, Respond } from '../shared/http1/http1-server.js';
import { REQUEST_ID_HEADER } from '../contract/execute-contract.js';
import type { Http1Request } from '../shared/http1/request-parser.js';
import { CARRIER_LEVELS, jsonTooDeep, MAX_JSON_DEPTH, nestsDeeper } from '../turns/json-depth.js';
import { inToolCallSpan } from '../tracing/tool-call-span.js';

export const MCP_PATH = '/mcp';

/** The optional services are the tools' own (tool-definition.ts says what each tool does without one). */
export interface CoreMcpServerOptions extends Pick<ToolServices, 'functions' | 'codeq' | 'sources' | 'embedder' | 'workflows' | 'secrets' | 'scrubber'> {
  readonly kv: KvStore;
  /** The provider behind core.llm.generate. */
  readonly llm: LlmProvider;
  /** An app's own provider (spec.llm), used for its calls instead of `llm`. @defaultValue none */
  readonly llmFor?: (appId: string) => LlmProvider | undefined;
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
  /** Workflow runs MCP clients start and follow: the start tool and the tasks extension (run-task-calls.ts). @defaultValue none: neither is served */
  readonly runTasks?: RunTaskCalls;
}

/** What the endpoint asks of the federation (federation/mcp-federation.ts). */
export interface FederatedTools {
  list(grant: ExecutionGrant, signal: AbortSignal): Promise<ListedMcpTool[]>;
  call(grant: ExecutionGrant, name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult>;
  /** Tells `onChange` when a server's list of the grant's app changed; answers how to stop. */
  watch?(grant: ExecutionGrant, onChange: () => void): () => void;
}

/** One POST to /mcp, as either HTTP server read it. */
export interface McpPost {
  readonly authorization: string | undefined;
  readonly headers: StandardHeaders;
  /** The body, or McpBodyTooLarge when it was over the endpoint's limit (read and dropped). */
  readonly body: Buffer | McpBodyTooLarge | undefined;
  readonly requestId: string;
}

/** What /mcp answers, in the shape of the core's own HTTP/1.1 server (Http1Answer); headers besides the request id. */
export interface McpHttpAnswer {
  readonly status: number;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** Server-sent events, written as they come (subscriptions/listen). */
  readonly stream?: AsyncIterable<string>;
}

export interface CoreMcpServer extends McpExecutions {
  readonly tokens: McpTokenService;
  /** The services tools run with (kv, LLM, spine, scratch directories). */
  readonly services: ToolServices;
  /** Largest request body /mcp reads, bytes (the core's TCP listener applies it to /mcp too). */
  readonly bodyLimitBytes: number;
  /** Answers one POST to /mcp; undefined when the client went away (`signal`) first. */
  answerPost(post: McpPost, signal: AbortSignal): Promise<McpHttpAnswer | undefined>;
  /**
   * Answers a POST to /mcp read by the core's own HTTP/1.1 server (the socket
   * sandboxes reach the core through); the call is aborted when its client goes away.
   */
  serveHttp1(request: Http1Request, requestId: string, respond: Respond, onGone: OnClientGone): void;
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
  const llm = createLlmService({ provider: options.llm, ...(options.llmFor !== undefined ? { providerFor: options.llmFor } : {}), store: options.llmState, metrics: options.metrics, logger: options.logger });

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
    ...(options.secrets !== undefined ? { secrets: options.secrets } : {}),
    ...(options.scrubber !== undefined ? { scrubber: options.scrubber } : {}),
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
      // A run's own executions start no runs: the start tool is for the app's other clients, when the app has a workflow.
      if (options.runTasks !== undefined && grant.run === undefined && options.runTasks.offers(grant)) core.push(START_TOOL_LISTING);
      // Servers are asked only for apps that may be granted some of their tools.
      return federation === undefined || grant.capabilities.mcp === undefined ? core : [...core, ...(await federation.list(grant, signal))];
    },
    call(grant, name, args, signal) {
      const run = async (): Promise<CallToolResult> => {
        if (name === START_TOOL && options.runTasks !== undefined && grant.run === undefined) return legacyStart(options.runTasks, grant, args);
        if (federation === undefined || !isFederatedName(name)) return invokeTool(invokerDeps, grant, name, args, signal);
        // A federated server's answer may carry a secret its credential let it see: scrubbed like the core's own tools'.
        const answer = await federation.call(grant, name, args, signal);
        return options.scrubber !== undefined ? options.scrubber.scrubValue(answer) : answer;
      };
      return grant.traceContext === undefined ? run() : inToolCallSpan(grant.traceContext, name, run);
    },
    ...(federation?.watch !== undefined ? { watch: (grant, onChange) => federation.watch!(grant, onChange) } : {}),
  };
  // Built once, on the first request: the SDK servers connect asynchronously.
  let protocol: Promise<CoreMcpProtocol> | undefined;
  const protocolOnce = (): Promise<CoreMcpProtocol> => (protocol ??= createCoreMcpProtocol(grantTools, options.runTasks));

  /**
   * Answers one POST to /mcp, whichever HTTP server read it: undefined when the
   * client went away (`signal`) before its answer, which then has no one to go to.
   */
  async function answerPost(post: McpPost, signal: AbortSignal): Promise<McpHttpAnswer | undefined> {
    let grant: ExecutionGrant;
    try {
      grant = tokens.resolve(bearerToken(post.authorization));
    } catch (error) {
      if (!isUhlpError(error)) throw error;
      return errorAnswer(error, post.requestId, { 'www-authenticate': 'Bearer realm="uhlp-mcp"' }, 401);
    }
    if (post.body instanceof McpBodyTooLarge) return errorAnswer(bodyTooLarge(post.body.limitBytes), post.requestId);
    const text = post.body?.toString('utf8') ?? '';
    // Arguments too deep to serialize would fail inside the tool (a payload is serialized to be published): refused here, for every tool.
    if (nestsDeeper(text, MAX_JSON_DEPTH + CARRIER_LEVELS)) return errorAnswer(jsonTooDeep('request'), post.requestId);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return jsonAnswer(400, { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: the body is not JSON' }, id: null });
    }
    try {
      // A cancelled workflow run's calls are aborted with it (a model call's provider sees its request closed).
      const runSignal = grant.run?.signal;
      const answer = await (await protocolOnce()).serve(body, post.headers, grant, runSignal === undefined ? signal : AbortSignal.any([signal, runSignal]));
      if (answer.stream !== undefined) return { status: answer.status, headers: SSE_HEADERS, stream: answer.stream };
      if (answer.body === undefined) return { status: answer.status };
      return { status: answer.status, headers: { 'content-type': 'application/json' }, body: JSON.stringify(answer.body) };
    } catch (error) {
      if (signal.aborted) return undefined;
      if (grant.run?.signal?.aborted === true) return errorAnswer(new WorkflowCancelledError(`run ${grant.run.id} was cancelled; the call was cut`), post.requestId);
      options.logger.error({ err: error, requestId: post.requestId }, 'MCP request failed');
      return internalErrorAnswer();
    }
  }

  async function handlePost(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    // Aborted when the client goes away before its answer: the tool is told through its signal.
    const aborter = new AbortController();
    const onClose = (): void => {
      if (!reply.raw.writableEnded) aborter.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const body = request.body as Buffer | McpBodyTooLarge | undefined;
      const answer = await answerPost({ authorization: request.headers.authorization, headers: standardHeaders(request.headers), body, requestId: request.id }, aborter.signal);
      if (answer === undefined) return;
      reply.code(answer.status);
      if (answer.headers !== undefined) reply.headers(answer.headers);
      if (answer.stream !== undefined) await reply.send(Readable.from(answer.stream));
      else await reply.send(answer.body);
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  /** /mcp on the core's own HTTP/1.1 server (the Unix socket mounted into sandboxes): no node:http or fastify per call. */
  function serveHttp1(request: Http1Request, requestId: string, respond: Respond, onGone: OnClientGone): void {
    const aborter = new AbortController();
    let answered = false;
    const stopWatching = onGone(() => {
      if (!answered) aborter.abort();
    });
    const settle = (answer: McpHttpAnswer): void => {
      const headers = { ...answer.headers, [REQUEST_ID_HEADER]: requestId };
      // A stream is told by the server itself when its client goes away.
      if (answer.stream !== undefined) respond({ status: answer.status, headers, stream: { chunks: answer.stream, abort: () => aborter.abort() } });
      else respond(answer.body === undefined ? { status: answer.status, headers } : { status: answer.status, headers, body: answer.body });
    };
    const post: McpPost = { authorization: request.headers['authorization'], headers: standardHeaders(request.headers), body: request.body, requestId };
    answerPost(post, aborter.signal).then(
      (answer) => {
        answered = true;
        stopWatching();
        if (answer !== undefined) settle(answer);
      },
      (error: unknown) => {
        answered = true;
        stopWatching();
        options.logger.error({ err: error, requestId }, 'MCP request failed');
        settle(internalErrorAnswer());
      },
    );
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
    answerPost,
    serveHttp1,
    register(app) {
      // A context of its own: /mcp reads its bodies with its own limit and parser, the core's other routes with theirs.
      void app.register(async (scope) => {
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser('*', mcpBodyParser(bodyLimitBytes));
        // Sandboxes (and dev clients) with a per-execution token: route-audience.ts.
        scope.post(MCP_PATH, { config: { audience: 'sandboxes' } }, handlePost);
        // Stateless: there is no session to stream server messages on or to delete.
        scope.route({
          method: ['GET', 'DELETE'],
          url: MCP_PATH,
          config: { audience: 'sandboxes' },
          handler: async (_request, reply) =>
            reply.code(405).header('allow', 'POST').send(METHOD_NOT_ALLOWED),
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
function standardHeaders(headers: Readonly<Record<string, string | string[] | undefined>>): StandardHeaders {
  const one = (name: string): string | undefined => {
    const value = headers[name];
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

const JSON_UTF8 = 'application/json; charset=utf-8';
const SSE_HEADERS: Readonly<Record<string, string>> = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' };

/** What a GET or DELETE of /mcp gets, on either HTTP server: the endpoint is stateless. */
export const METHOD_NOT_ALLOWED = Object.freeze({ jsonrpc: '2.0', error: Object.freeze({ code: -32000, message: 'Method not allowed: this server is stateless, use POST' }), id: null });

/** A failure of the core's own while answering a call. */
function internalErrorAnswer(): McpHttpAnswer {
  return jsonAnswer(500, { jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
}

/** An object answered as fastify serializes one: JSON with its charset. */
function jsonAnswer(status: number, body: unknown, headers?: Record<string, string>): McpHttpAnswer {
  return { status, headers: { ...headers, 'content-type': JSON_UTF8 }, body: JSON.stringify(body) };
}

function errorAnswer(error: UhlpError, requestId: string, headers?: Record<string, string>, status = error.statusCode): McpHttpAnswer {
  return jsonAnswer(status, errorBody(error, requestId), headers);
}

/** The refusal of a body over the endpoint's limit, however the body was read. */
export function bodyTooLarge(limitBytes: number): UhlpError {
  return new UhlpError('UHLP_BODY_TOO_LARGE', `the MCP request is over the endpoint's limit of ${limitBytes} bytes`, { field: 'body', limitBytes });
}

/**
 * The start tool for a client of 2025-11-25 and before, which knows neither
 * tasks nor input_required: the run's result, or the paused run (its id, node
 * and question) for the HTTP routes to decide.
 */
async function legacyStart(runTasks: RunTaskCalls, grant: ExecutionGrant, args: unknown): Promise<CallToolResult> {
  const { resultType: _complete, ...result } = unaskedAnswer(await runTasks.call(grant, args, false, {}));
  return result as CallToolResult;
}

/** Federated tools are named `app.<server>.<tool>` or `community.<server>.<tool>`; the core's own never are. */
export function isFederatedName(name: string): boolean {
  return name.startsWith('app.') || name.startsWith('community.');
}
