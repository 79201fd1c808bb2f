/**
 * The jit-runner's HTTP server: `POST /execute` per the contract, `GET /healthz`
 * for readiness probes. The pool leases a sandbox to at most `concurrency`
 * executions at once; one more is refused with 429, the contract's "overloaded"
 * answer.
 *
 * It is a plain socket server with its own small parser (http1-request-parser.ts),
 * not node:http: every request through the core costs one exchange here, and
 * node:http's request and response streams were most of the runner's own time.
 * Requests on one connection are answered in order, one at a time.
 */
import net from 'node:net';
import {
  EXECUTE_PATH,
  REQUEST_ID_HEADER,
  validateExecuteRequest,
  type ExecuteRequest,
  type ExecuteResponse,
} from '../contract/execute-contract.js';
import { Http1RequestParser, HttpRequestError, type ParsedRequest } from './http1-request-parser.js';
import { ScriptLoadError, ScriptLoader } from './script-loader.js';
import { resultFromThrown, resultFromValue, runnerErrorResult, type ScriptResult } from './script-result.js';
import { ExecutionTools } from './tools-client.js';

/** Largest /execute body the runner reads; the core's ingress limit is far below it. */
const MAX_EXECUTE_BODY_BYTES = 64 * 1024 * 1024;
/** Request line and headers; the core's are a few hundred bytes. */
const MAX_HEAD_BYTES = 16 * 1024;
/** An idle keep-alive connection is closed after this long (the core reconnects). */
const KEEP_ALIVE_MS = 60_000;

export interface RunnerServerOptions {
  /** Root of the definitions revisions (read-only). */
  definitionsRoot: string;
  /** Called with what the script threw outside of any await chain. */
  onFatal?: (error: unknown) => void;
  /** How tool calls reach the core; a Unix-socket fetch in containers. @defaultValue globalThis.fetch */
  mcpFetch?: typeof fetch;
  /** Executions run at once; one more gets 429. @defaultValue 1 */
  concurrency?: number;
}

export interface RunnerServer {
  readonly server: net.Server;
  /**
   * Answers the requests in flight (if any) with a script exception. Used when a
   * script throws asynchronously outside its promise chain, before the process
   * exits; which of the executions threw cannot be told, so all of them fail.
   */
  failInFlight(error: unknown): boolean;
}

interface InFlight {
  requestId: string;
  settle(result: ScriptResult): void;
}

export function createRunnerServer(options: RunnerServerOptions): RunnerServer {
  const loader = new ScriptLoader(options.definitionsRoot);
  const concurrency = options.concurrency ?? 1;
  const inFlight = new Set<InFlight>();

  // Half-open: a client that ends its side after a request still gets the answer.
  const server = net.createServer({ allowHalfOpen: true }, (socket) => serveConnection(socket, (request, answer) => route(request, answer)));

  function route(request: ParsedRequest, answer: Answer): void {
    if (request.method === 'GET' && request.target === '/healthz') {
      answer(200, { status: 'ok', busy: inFlight.size >= concurrency, running: inFlight.size });
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
    handleExecute(request.body, request.requestId, answer);
  }

  function handleExecute(raw: Buffer, requestIdHeader: string | undefined, answer: Answer): void {
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
    const tools = new ExecutionTools({ endpoint: request.context.mcp_endpoint, token: request.context.mcp_token, fetch: options.mcpFetch });
    let settled = false;
    const current: InFlight = {
      requestId: request.requestId,
      settle(result) {
        if (settled) return;
        settled = true;
        inFlight.delete(current);
        const response: ExecuteResponse = {
          requestId: request.requestId,
          resultType: result.resultType,
          data: result.data,
          metrics: { execution_time_ms: Math.round((performance.now() - started) * 1000) / 1000 },
        };
        const mcpCalls = tools.metrics();
        if (mcpCalls.length > 0) response.metrics!.mcp_calls = mcpCalls;
        answer(200, response, request.requestId);
      },
    };
    inFlight.add(current);
    run(request, tools).then(current.settle, (thrown: unknown) => current.settle(resultFromThrown(thrown)));
  }

  async function run(request: ExecuteRequest, tools: ExecutionTools): Promise<ScriptResult> {
    const task = request.context.taskDetails;
    if (!task || task.handler !== 'JIT' || !task.script) {
      return runnerErrorResult('UHLP_EXECUTE_BAD_REQUEST', 'context.taskDetails must name a JIT script');
    }
    let fn;
    try {
      fn = await loader.load({
        appId: request.context.appId,
        revision: task.revision,
        script: task.script,
        exportName: task.function,
      });
    } catch (error) {
      if (error instanceof ScriptLoadError) return runnerErrorResult(error.code, error.message);
      throw error;
    }
    // Scripts get the context as sent, plus `tools` (ctx.tools.call) bound to this execution's token.
    const value = await fn(request.requestData, { ...request.context, tools: { call: (name: string, args?: Record<string, unknown>) => tools.call(name, args) } });
    return resultFromValue(value);
  }

  return {
    server,
    failInFlight(error) {
      if (inFlight.size === 0) return false;
      for (const execution of [...inFlight]) execution.settle(resultFromThrown(error));
      return true;
    },
  };
}

/** Answers the request being served: a JSON body, and the request id echoed when given. */
type Answer = (status: number, body: unknown, requestId?: string) => void;

const REASONS: Record<number, string> = {
  200: 'OK',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Content Too Large',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  505: 'HTTP Version Not Supported',
};

/**
 * Reads requests from one connection and hands them to `handle` one at a time;
 * the next is parsed once the previous one is answered, so answers go out in
 * order. A request that cannot be parsed is answered with its status, and the
 * connection is closed.
 */
function serveConnection(socket: net.Socket, handle: (request: ParsedRequest, answer: Answer) => void): void {
  const parser = new Http1RequestParser({ maxHeadBytes: MAX_HEAD_BYTES, maxBodyBytes: MAX_EXECUTE_BODY_BYTES });
  let busy = false;
  let pumping = false;
  let ended = false;
  let peerEnded = false;

  const write = (status: number, body: unknown, requestId: string | undefined, close: boolean): void => {
    if (socket.destroyed || ended) return;
    const payload = JSON.stringify(body);
    let head = `HTTP/1.1 ${status} ${REASONS[status] ?? 'Unknown'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(payload)}\r\n`;
    // The parser lets no CR, LF or other control character into a header value.
    if (requestId) head += `${REQUEST_ID_HEADER}: ${requestId}\r\n`;
    if (close) head += 'connection: close\r\n';
    socket.write(`${head}\r\n${payload}`);
    if (close) {
      ended = true;
      socket.end();
    }
  };

  const pump = (): void => {
    if (pumping) return;
    pumping = true;
    try {
      while (!busy && !ended) {
        // A client that does not read its answers is not read from either.
        if (socket.writableNeedDrain) {
          socket.pause();
          socket.once('drain', () => {
            socket.resume();
            pump();
          });
          return;
        }
        let request: ParsedRequest | undefined;
        try {
          request = parser.next();
        } catch (error) {
          if (!(error instanceof HttpRequestError)) throw error;
          write(error.status, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: error.message }, undefined, true);
          return;
        }
        if (request === undefined) {
          if (peerEnded) {
            ended = true;
            socket.end();
          }
          return;
        }
        busy = true;
        const keepAlive = request.keepAlive;
        let answered = false;
        handle(request, (status, body, requestId) => {
          if (answered) return;
          answered = true;
          write(status, body, requestId, !keepAlive);
          busy = false;
          pump();
        });
      }
    } finally {
      pumping = false;
    }
  };

  socket.on('data', (chunk: Buffer) => {
    parser.push(chunk);
    pump();
  });
  // A client that went away needs no answer; an execution still running finishes unheard.
  socket.on('error', () => socket.destroy());
  socket.on('end', () => {
    peerEnded = true;
    pump();
  });
  // Idle, or sending a request too slowly: closed. A running execution has its own timeout, in the core.
  socket.setTimeout(KEEP_ALIVE_MS, () => {
    if (!busy) socket.destroy();
  });
}
