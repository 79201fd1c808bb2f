/**
 * A runner's HTTP server: `POST /execute` per the contract, `GET /healthz`
 * for readiness probes. The pool leases a sandbox to at most `concurrency`
 * executions at once; one more is refused with 429, the contract's "overloaded"
 * answer. What an execution does is the runner's executor (executor.ts): the
 * jit-runner's and the llm-orchestrator's share this server, so both answer
 * the contract the same way.
 *
 * It runs on the product's own HTTP/1.1 server (src/http1), not node:http:
 * every request through the core costs one exchange here, and node:http's
 * request and response streams were most of the runner's own time. Requests on
 * one connection are answered in order, one at a time.
 */
import {
  EXECUTE_PATH,
  REQUEST_ID_HEADER,
  type RunnerTimings,
  TRACE_ID_HEADER,
  validateExecuteRequest,
  type ExecuteRequest,
  type ExecuteResponse,
} from '../../contract/execute-contract.js';
import net from 'node:net';
import { Http1Server } from '../../shared/http1/http1-server.js';
import type { Http1Request } from '../../shared/http1/request-parser.js';
import type { Executor } from './executor.js';
import { resultFromThrown, type ScriptResult } from './script-result.js';
import { ExecutionTools } from './tools-client.js';
import type { SocketPost } from './unix-socket-fetch.js';
import { TurnWorkTree, type WalkableTree } from '../../shared/work-tree-walk.js';

/** Largest /execute body the runner reads; the core's ingress limit is far below it. */
const MAX_EXECUTE_BODY_BYTES = 64 * 1024 * 1024;
/** Request line and headers; the core's are a few hundred bytes. */
const MAX_HEAD_BYTES = 16 * 1024;
/** An idle keep-alive connection is closed after this long (the core does not reuse one idle for half of it). */
const KEEP_ALIVE_MS = 60_000;

export interface RunnerServerOptions {
  /** Runs each execution the server accepted. */
  executor: Executor;
  /** How tool calls reach the core: POSTs on its Unix socket in sandboxes (unix-socket-fetch.ts). @defaultValue globalThis.fetch to context.mcp_endpoint */
  mcpPost?: SocketPost;
  /** Executions run at once; one more gets 429. @defaultValue 1 */
  concurrency?: number;
  /**
   * The sandbox's writable tree (`--work-dir`), walked after an execution whose
   * request asks for it (`reportWrites`: pods, whose tree the core cannot see).
   * @defaultValue none: such a request gets no `writes`, and the core fails the turn
   */
  workTree?: WalkableTree;
}

/** A session id as the core makes them (letters, digits, `-`): one path segment, never `.` or `..`. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9-]{0,127}$/;

export interface RunnerServer {
  readonly server: net.Server;
  /**
   * Answers the requests in flight (if any) with a script exception. Used when a
   * script throws asynchronously outside its promise chain, before the process
   * exits; which of the executions threw cannot be told, so all of them fail.
   */
  failInFlight(error: unknown): boolean;
  /** Takes no new connection, ends idle ones, and resolves once the executions running have answered. */
  drain(): Promise<void>;
  /**
   * Runs the first-request work of the process before any request does (see
   * warmUp below); GET /healthz answers 503 until it is done, so a pod counts as
   * Ready only once warm. `url` is the server's own address.
   */
  warmUp(url: string): Promise<void>;
}

interface InFlight {
  requestId: string;
  settle(result: ScriptResult): void;
}

export function createRunnerServer(options: RunnerServerOptions): RunnerServer {
  const concurrency = options.concurrency ?? 1;
  const inFlight = new Set<InFlight>();
  let warming = false;

  const http1 = new Http1Server({
    limits: { maxHeadBytes: MAX_HEAD_BYTES, maxBodyBytes: MAX_EXECUTE_BODY_BYTES },
    keepAliveTimeoutMs: KEEP_ALIVE_MS,
    onRequest: (request, respond) =>
      route(request, (status, body, requestId) =>
        respond({ status, headers: requestId ? { 'content-type': 'application/json', [REQUEST_ID_HEADER]: requestId } : JSON_HEADERS, body: JSON.stringify(body) }),
      ),
    onBadRequest: (error) => ({ status: error.status, headers: JSON_HEADERS, body: JSON.stringify({ error: 'UHLP_EXECUTE_BAD_REQUEST', details: error.message }) }),
  });

  function route(request: Http1Request, answer: Answer): void {
    if (request.method === 'GET' && request.target === '/healthz') {
      if (warming) answer(503, { status: 'starting' });
      else answer(200, { status: 'ok', busy: inFlight.size >= concurrency, running: inFlight.size });
      return;
    }
    if (request.target !== EXECUTE_PATH) {
      answer(404, { error: 'not_found', details: `${request.method} ${request.target}` });
      return;
    }
    if (request.method !== 'POST') {
      answer(405, { error: 'method_not_allowed', details: 'use POST /execute' });
      return;
    }
    // Timings go back only to a core that traces the execution (it names the trace): an untraced turn's answer stays small.
    handleExecute(request.body, request.headers[REQUEST_ID_HEADER], answer, request.headers[TRACE_ID_HEADER] !== undefined);
  }

  // The /execute contract's own refusals (core-architecture 2.4): its HTTP statuses, 400 and 429, under the
  // registry's codes. They never reach a client as they are: the core answers any as UHLP_SANDBOX_ERROR.
  function handleExecute(raw: Buffer, requestIdHeader: string | undefined, answer: Answer, timed = false): void {
    if (!requestIdHeader) {
      answer(400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'the X-Request-ID header is required (once)' });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      answer(400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'the body is not JSON' }, requestIdHeader);
      return;
    }
    const violation = validateExecuteRequest(body);
    if (violation) {
      answer(400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: `${violation.path}: ${violation.message}` }, requestIdHeader);
      return;
    }
    const request = body as ExecuteRequest;
    if (request.requestId !== requestIdHeader) {
      answer(400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'requestId does not match the X-Request-ID header' }, requestIdHeader);
      return;
    }
    if (inFlight.size >= concurrency) {
      const running = [...inFlight].map((execution) => execution.requestId).join(', ');
      answer(429, { error: 'UHLP_RUNNER_BUSY', details: `busy with ${running}` }, requestIdHeader);
      return;
    }

    const started = performance.now();
    const tools = new ExecutionTools({ endpoint: request.context.mcp_endpoint, token: request.context.mcp_token, startedAt: started, ...(options.mcpPost !== undefined ? { post: options.mcpPost } : {}) });
    const turnTree = reportedTree(request);
    let settled = false;
    const current: InFlight = {
      requestId: request.requestId,
      settle(result) {
        if (settled) return;
        settled = true;
        const { timings, ...metrics } = result.metrics ?? {};
        const response: ExecuteResponse = {
          requestId: request.requestId,
          resultType: result.resultType,
          data: result.data,
          metrics: { ...metrics, ...(timed && timings !== undefined && timings !== null ? { timings: timings as RunnerTimings } : {}), execution_time_ms: Math.round((performance.now() - started) * 1000) / 1000 },
        };
        const mcpCalls = tools.metrics();
        if (mcpCalls.length > 0) response.metrics!.mcp_calls = mcpCalls;
        // What the executor timed (the script's load and run), with every tool call.
        const calls = tools.timings();
        if (timed && calls.length > 0) response.metrics!.timings = { ...response.metrics!.timings, tool_calls: calls };
        const send = (): void => {
          // In flight until answered: the walk is part of the execution, and no other one writes in the tree meanwhile.
          inFlight.delete(current);
          answer(200, response, request.requestId);
        };
        if (turnTree === undefined) return send();
        void walkAndEmpty(turnTree).then(
          (writes) => {
            response.writes = writes;
            send();
          },
          // A walk that failed reports nothing: the core then fails the turn and does not reuse the sandbox.
          () => send(),
        );
      },
    };
    inFlight.add(current);
    let running: Promise<ScriptResult>;
    try {
      running = options.executor(request, tools);
    } catch (thrown) {
      running = Promise.reject(thrown);
    }
    running.then(current.settle, (thrown: unknown) => current.settle(resultFromThrown(thrown)));
  }

  /** The execution's hold on the work tree, when its request asks for a report and the runner has a tree; its directories made. */
  function reportedTree(request: ExecuteRequest): TurnWorkTree | undefined {
    const sessionId = request.context.sessionId;
    if (request.reportWrites !== true || options.workTree === undefined || sessionId === undefined || !SESSION_ID.test(sessionId)) return undefined;
    try {
      return TurnWorkTree.begin(options.workTree, sessionId);
    } catch {
      // A tree the runner cannot write: no report, and the core fails the turn.
      return undefined;
    }
  }

  return {
    server: http1.server,
    failInFlight(error) {
      if (inFlight.size === 0) return false;
      for (const execution of [...inFlight]) execution.settle(resultFromThrown(error));
      return true;
    },
    drain: () => http1.close(),
    async warmUp(url) {
      warming = true;
      try {
        await warmUp(url, options.executor.warmUpRequest);
      } finally {
        warming = false;
      }
    },
  };
}

/**
 * The work a fresh process does on its first execution, done once ahead through one
 * POST /execute of its own: the executor's warm-up request when it has one (the
 * jit-runner's runs a script of its own the whole way, src/runners/jit), else one
 * the server refuses (no request id), which still compiles the contract's request
 * check and the server's path for a POST with a body. A claimed warm pod's first
 * request then costs what the next ones do (src/sandbox/script-push.ts removes the
 * other first-request cost, reading the script). Not `fetch`: Node loads undici on
 * its first call, megabytes a runner whose scripts call no tool never needs, in pods
 * whose memory limit may be 64 MiB.
 */
async function warmUp(url: string, request: ExecuteRequest | undefined): Promise<void> {
  validateExecuteRequest({});
  const { hostname, port } = new URL(url);
  const body = JSON.stringify(request ?? { requestId: 'warm-up' });
  const requestId = request ? `${REQUEST_ID_HEADER}: ${request.requestId}\r\n` : '';
  await new Promise<void>((resolve) => {
    const socket = net.connect(Number(port), hostname, () => {
      socket.end(
        `POST ${EXECUTE_PATH} HTTP/1.1\r\nhost: runner\r\ncontent-type: application/json\r\n${requestId}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
      );
    });
    // Best effort: a runner that cannot reach itself still serves.
    socket.on('data', () => undefined).on('close', () => resolve()).on('error', () => resolve());
    socket.setTimeout(5000, () => socket.destroy());
  });
}

/**
 * What the execution left in the tree, then the tree emptied (the session's
 * directories kept, empty): the core decides from the report whether the turn
 * passes, and deletes the sandbox on a mismatch (component-executor.ts).
 */
async function walkAndEmpty(tree: TurnWorkTree): Promise<NonNullable<ExecuteResponse['writes']>> {
  const found = tree.walk();
  const realized = found instanceof Promise ? await found : found;
  const emptied = tree.discard();
  if (emptied !== undefined) await emptied;
  return { realized: [...realized], emptied: true };
}

/** Answers the request being served: a JSON body, and the request id echoed when given. */
type Answer = (status: number, body: unknown, requestId?: string) => void;

const JSON_HEADERS = { 'content-type': 'application/json' } as const;
