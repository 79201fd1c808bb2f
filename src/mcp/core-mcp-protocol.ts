/**
 * The MCP protocol side of the core's endpoint: two SDK servers built once, one
 * for each protocol era (2026-07-28, stateless with `server/discover` and a
 * `_meta` envelope on every request; 2025-11-25 and earlier, with
 * `initialize`), and `serve`, which classifies one POSTed message the way the
 * SDK's HTTP entry does and hands it to the server of its era. What an
 * execution may see and call comes from its grant, carried with each message.
 * A tools/call in the runners' own shape takes a shorter way (fast-tool-call.ts).
 */
import {
  type CallToolResult,
  type ListToolsResult,
  classifyInboundRequest,
  type JSONRPCMessage,
  type JSONRPCRequest,
  Server,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/server';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import type { ExecutionGrant } from './mcp-token-service.js';
import { ExchangeTransport, type ExchangeExtra } from './exchange-transport.js';
import { listenFrames, type ToolsChangedWatch } from './listen-stream.js';
import { declaresElicitation, declaresTasks, unaskedAnswer, START_TOOL, TASK_METHODS, TASKS_EXTENSION, TaskRpcError, type RunTaskCalls } from './run-task-calls.js';
import { EnvelopeVerdicts, encodedResult, fastToolCall, isPlainToolResult, ranOf, type FastToolCall, type Ran } from './fast-tool-call.js';

/** The revision the core serves statelessly; the 2025 revisions are served too. */
export const MODERN_PROTOCOL_VERSION = '2026-07-28';
const SERVER_INFO = { name: 'uhlp-core', version: '0.1.0' };
/**
 * How long a client may keep a `tools/list` answer: a token's tools are fixed
 * for its life except for federated servers' own lists, which the core
 * re-reads at most this often.
 */
export const TOOLS_LIST_TTL_MS = 30_000;

/** One listed tool, as MCP's `tools/list` gives it. */
export interface ListedMcpTool {
  readonly name: string;
  readonly description?: string;
  readonly inputSchema: Record<string, unknown>;
  readonly annotations?: Record<string, unknown>;
}

/** What answers the two tool methods for one grant. */
export interface GrantTools {
  list(grant: ExecutionGrant, signal: AbortSignal): Promise<ListedMcpTool[]>;
  call(grant: ExecutionGrant, name: string, args: unknown, signal: AbortSignal): Promise<CallToolResult>;
  /** Tells `onChange` when the grant's list may have changed (subscriptions/listen). @defaultValue never */
  watch?: ToolsChangedWatch;
}

/** What the HTTP route writes back. */
export interface McpAnswer {
  readonly status: number;
  /** Undefined for 202 (a notification) and for a stream. */
  readonly body?: unknown;
  /** Server-sent events, written as they come (subscriptions/listen). */
  readonly stream?: AsyncIterable<string>;
}

export interface StandardHeaders {
  readonly protocolVersion?: string;
  readonly method?: string;
  readonly name?: string;
}

export interface CoreMcpProtocol {
  serve(body: unknown, headers: StandardHeaders, grant: ExecutionGrant, signal: AbortSignal): Promise<McpAnswer>;
  close(): Promise<void>;
}

/** Methods whose `Mcp-Name` header mirrors `params.name` on the 2026-07-28 revision. */
const NAMED_METHODS = new Set(['tools/call', 'prompts/get']);

/**
 * @param runTasks the workflow runs MCP clients start and follow (run-task-calls.ts); without
 * them the start tool is not served and the tasks extension is not advertised.
 */
export async function createCoreMcpProtocol(tools: GrantTools, runTasks?: RunTaskCalls): Promise<CoreMcpProtocol> {
  // One validator for both servers: the SDK makes an Ajv instance per Server otherwise.
  const jsonSchemaValidator = new AjvJsonSchemaValidator();
  const build = (): Server => {
    const server = new Server(SERVER_INFO, {
      jsonSchemaValidator,
      supportedProtocolVersions: [MODERN_PROTOCOL_VERSION, ...SUPPORTED_PROTOCOL_VERSIONS],
      capabilities: { tools: {}, ...(runTasks !== undefined ? { extensions: { [TASKS_EXTENSION]: {} } } : {}) },
      instructions: "Tools of the calling execution's app; what they may do is limited by the app's capabilities.",
      cacheHints: { 'tools/list': { ttlMs: TOOLS_LIST_TTL_MS, cacheScope: 'private' } },
    });
    server.setRequestHandler('tools/list', async (_request, ctx) => ({
      tools: (await tools.list(grantOf(ctx), ctx.mcpReq.signal)) as ListToolsResult['tools'],
    }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      // A call the fast path ran already, whose answer the SDK writes: the tool does not run twice.
      const ran = ranOf(ctx);
      if (ran === undefined) return tools.call(grantOf(ctx), request.params.name, request.params.arguments, ctx.mcpReq.signal);
      if ('error' in ran) throw ran.error;
      return ran.result;
    });
    return server;
  };

  const modernServer = build();
  const legacyServer = build();
  // A probe classification is what marks the transport (and so the server) as serving 2026-07-28.
  const probe = classifyInboundRequest({
    httpMethod: 'POST',
    protocolVersionHeader: MODERN_PROTOCOL_VERSION,
    mcpMethodHeader: 'tools/list',
    body: { jsonrpc: '2.0', id: 0, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN_PROTOCOL_VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } } },
  });
  if (probe.kind !== 'modern') throw new Error(`the MCP SDK did not classify a ${MODERN_PROTOCOL_VERSION} request as modern`);
  const modern = new ExchangeTransport(probe.classification);
  const legacy = new ExchangeTransport(undefined);
  await modernServer.connect(modern);
  await legacyServer.connect(legacy);

  const envelopes = new EnvelopeVerdicts(modern, MODERN_PROTOCOL_VERSION, SERVER_INFO);

  /**
   * The fast path of the one message every sandbox sends on every turn: a
   * 2026-07-28 tools/call in the shape the SDK accepts (fastToolCall) under an
   * envelope the SDK itself found to be served the same way (EnvelopeVerdicts).
   * The tool runs with no classification, zod parse or dispatch of the SDK, and
   * its answer is encoded as the SDK encodes it when it is a plain result of
   * text content; any other outcome (a thrown error, a result of another shape)
   * is answered by the SDK from what the tool did.
   */
  async function serveToolCall(call: FastToolCall, grant: ExecutionGrant, signal: AbortSignal): Promise<McpAnswer> {
    let ran: Ran;
    try {
      ran = { result: await tools.call(grant, call.name, call.args, signal) };
    } catch (error) {
      ran = { error };
    }
    if (signal.aborted) throw new Error('the client went away');
    if ('result' in ran && isPlainToolResult(ran.result)) return { status: 200, body: encodedResult(ran.result, call.id, SERVER_INFO) };
    const extra: ExchangeExtra = { authInfo: { token: '', clientId: grant.appId, scopes: [], extra: { grant, ran } }, classification: call.classification };
    return { status: 200, body: await modern.exchange(call.message, extra, signal) };
  }

  async function serve(body: unknown, headers: StandardHeaders, grant: ExecutionGrant, signal: AbortSignal): Promise<McpAnswer> {
    const call = fastToolCall(body, headers, envelopes);
    // The start tool answers in shapes of its own (a task, input_required): never on the fast path.
    if (call !== undefined && !(runTasks !== undefined && call.name === START_TOOL)) return serveToolCall(call, grant, signal);
    // JSON-RPC batches left the protocol in 2025-06-18; no client of ours sends them.
    if (Array.isArray(body)) return rpcError(400, -32600, 'Invalid Request: batches are not served', null);
    const outcome = classifyInboundRequest({
      httpMethod: 'POST',
      body,
      ...(headers.protocolVersion !== undefined ? { protocolVersionHeader: headers.protocolVersion } : {}),
      ...(headers.method !== undefined ? { mcpMethodHeader: headers.method } : {}),
      ...(headers.name !== undefined ? { mcpNameHeader: headers.name } : {}),
    });
    const extra: ExchangeExtra = { authInfo: { token: '', clientId: grant.appId, scopes: [], extra: { grant } } };
    switch (outcome.kind) {
      case 'reject':
        return rpcError(outcome.httpStatus, outcome.code, outcome.message, idOf(body), outcome.data);
      case 'legacy': {
        const message = body as JSONRPCMessage;
        if (!isRequest(message)) {
          // Notifications (initialized, cancelled) and posted responses: accepted, nothing to answer.
          if (outcome.reason === 'notification') legacy.notify(message, extra);
          return { status: 202 };
        }
        return { status: 200, body: await legacy.exchange(message, extra, signal) };
      }
      case 'modern': {
        const revision = outcome.classification.revision;
        if (revision !== MODERN_PROTOCOL_VERSION) {
          return rpcError(400, -32022, `Unsupported protocol version: ${String(revision)}`, idOf(body), { supported: [MODERN_PROTOCOL_VERSION], requested: revision });
        }
        const withExtra: ExchangeExtra = { ...extra, classification: outcome.classification };
        if (outcome.messageKind === 'notification') {
          modern.notify(outcome.message, withExtra);
          return { status: 202 };
        }
        const missing = missingHeader(outcome.message, headers);
        if (missing !== undefined) return rpcError(400, -32020, missing, outcome.message.id);
        if (runTasks !== undefined && TASK_METHODS.has(outcome.message.method)) return serveTaskMethod(runTasks, outcome.message, grant);
        if (runTasks !== undefined && outcome.message.method === 'tools/call' && (outcome.message.params as { name?: unknown } | undefined)?.name === START_TOOL) {
          // Run here (its answer may be a task or input_required), written by the SDK like any tool's.
          const params = outcome.message.params as { arguments?: unknown; requestState?: unknown; inputResponses?: unknown };
          let ran: Ran;
          try {
            ran = {
              result: answerFor(
                params,
                await runTasks.call(grant, params.arguments, declaresTasks(params), {
                  ...(typeof params.requestState === 'string' ? { requestState: params.requestState } : {}),
                  ...(isObject(params.inputResponses) ? { inputResponses: params.inputResponses } : {}),
                }),
              ) as CallToolResult,
            };
          } catch (error) {
            ran = { error };
          }
          const ranExtra: ExchangeExtra = { authInfo: { token: '', clientId: grant.appId, scopes: [], extra: { grant, ran } }, classification: outcome.classification };
          return { status: 200, body: await modern.exchange(outcome.message, ranExtra, signal) };
        }
        if (outcome.message.method === 'subscriptions/listen') {
          const params = outcome.message.params as { notifications?: Record<string, unknown> } | undefined;
          return {
            status: 200,
            stream: listenFrames({ id: outcome.message.id, filter: params?.notifications, grant, watch: tools.watch, signal, serverInfo: SERVER_INFO }),
          };
        }
        return { status: 200, body: await modern.exchange(outcome.message, withExtra, signal) };
      }
    }
  }

  /** tasks/get, tasks/update, tasks/cancel: answered by the core (the SDK has no runtime for the extension). */
  async function serveTaskMethod(calls: RunTaskCalls, request: JSONRPCRequest, grant: ExecutionGrant): Promise<McpAnswer> {
    const params = request.params as { taskId?: unknown; inputResponses?: unknown } | undefined;
    if (!declaresTasks(params)) {
      return rpcError(200, -32021, `Missing required client capability: the ${TASKS_EXTENSION} extension`, request.id, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
    }
    let result: Record<string, unknown>;
    try {
      if (request.method === 'tasks/get') result = await calls.get(grant, params?.taskId);
      else if (request.method === 'tasks/update') result = await calls.update(grant, params?.taskId, params?.inputResponses);
      else result = await calls.cancel(grant, params?.taskId);
    } catch (error) {
      if (error instanceof TaskRpcError) return rpcError(200, error.rpcCode, error.message, request.id, error.data);
      throw error;
    }
    return { status: 200, body: { jsonrpc: '2.0', id: request.id, result: { ...result, _meta: { 'io.modelcontextprotocol/serverInfo': SERVER_INFO } } } };
  }

  return {
    serve,
    async close() {
      await modernServer.close();
      await legacyServer.close();
    },
  };
}

/** The grant the HTTP route put in the message's auth info. */
function grantOf(ctx: { http?: { authInfo?: { extra?: Record<string, unknown> } } }): ExecutionGrant {
  const grant = ctx.http?.authInfo?.extra?.['grant'];
  if (grant === undefined) throw new Error('an MCP request reached a tool without its grant');
  return grant as ExecutionGrant;
}

/** The 2026-07-28 revision requires `MCP-Protocol-Version` and `Mcp-Method` on every request, and `Mcp-Name` where a name is the subject. */
function missingHeader(request: JSONRPCRequest, headers: StandardHeaders): string | undefined {
  if (headers.protocolVersion === undefined) return 'Header mismatch: the MCP-Protocol-Version header is required';
  if (headers.method === undefined) return 'Header mismatch: the Mcp-Method header is required';
  if (NAMED_METHODS.has(request.method)) {
    const name = (request.params as { name?: unknown } | undefined)?.name;
    if (headers.name === undefined) return 'Header mismatch: the Mcp-Name header is required';
    if (headers.name !== name) return `Header mismatch: the Mcp-Name header names ${headers.name} but the body names ${String(name)}`;
  }
  return undefined;
}

/** A client that cannot be asked (it declares no elicitation) gets the paused run rather than a question it cannot answer. */
function answerFor(params: unknown, answer: Record<string, unknown>): Record<string, unknown> {
  return declaresElicitation(params) ? answer : unaskedAnswer(answer);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isRequest(message: JSONRPCMessage): message is JSONRPCRequest {
  const record = message as { id?: unknown; method?: unknown };
  return typeof record.method === 'string' && (typeof record.id === 'string' || typeof record.id === 'number');
}

function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function rpcError(status: number, code: number, message: string, id: string | number | null, data?: unknown): McpAnswer {
  return { status, body: { jsonrpc: '2.0', id, error: { code, message, ...(data !== undefined ? { data } : {}) } } };
}
