/**
 * The jit-runner's HTTP server: `POST /execute` per the contract, `GET /healthz`
 * for readiness probes. The pool leases a sandbox to at most `concurrency`
 * executions at once; one more is refused with 429, the contract's "overloaded"
 * answer.
 */
import http from 'node:http';
import {
  EXECUTE_PATH,
  REQUEST_ID_HEADER,
  validateExecuteRequest,
  type ExecuteRequest,
  type ExecuteResponse,
} from '../contract/execute-contract.js';
import { ScriptLoadError, ScriptLoader } from './script-loader.js';
import { resultFromThrown, resultFromValue, runnerErrorResult, type ScriptResult } from './script-result.js';
import { ExecutionTools } from './tools-client.js';

/** Largest /execute body the runner reads; the core's ingress limit is far below it. */
const MAX_EXECUTE_BODY_BYTES = 64 * 1024 * 1024;

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
  readonly server: http.Server;
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

  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/healthz') {
      sendJson(res, 200, { status: 'ok', busy: inFlight.size >= concurrency, running: inFlight.size });
      return;
    }
    if (req.url !== EXECUTE_PATH) {
      sendJson(res, 404, { error: 'not_found', details: `${req.method} ${req.url}` });
      return;
    }
    if (req.method !== 'POST') {
      sendJson(res, 405, { error: 'method_not_allowed', details: 'use POST /execute' });
      return;
    }
    const headerId = req.headers[REQUEST_ID_HEADER];
    const requestIdHeader = typeof headerId === 'string' ? headerId : undefined;
    readBody(req).then(
      (raw) => handleExecute(raw, requestIdHeader, res),
      (error: Error) => sendJson(res, 400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: error.message }, requestIdHeader),
    );
  });
  server.keepAliveTimeout = 60_000;

  function handleExecute(raw: Buffer, requestIdHeader: string | undefined, res: http.ServerResponse): void {
    if (!requestIdHeader) {
      sendJson(res, 400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'the X-Request-ID header is required' });
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw.toString('utf8'));
    } catch {
      sendJson(res, 400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'the body is not JSON' }, requestIdHeader);
      return;
    }
    const violation = validateExecuteRequest(body);
    if (violation) {
      sendJson(res, 400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: `${violation.path}: ${violation.message}` }, requestIdHeader);
      return;
    }
    const request = body as ExecuteRequest;
    if (request.requestId !== requestIdHeader) {
      sendJson(res, 400, { error: 'UHLP_EXECUTE_BAD_REQUEST', details: 'requestId does not match the X-Request-ID header' }, requestIdHeader);
      return;
    }
    if (inFlight.size >= concurrency) {
      const running = [...inFlight].map((execution) => execution.requestId).join(', ');
      sendJson(res, 429, { error: 'UHLP_RUNNER_BUSY', details: `busy with ${running}` }, requestIdHeader);
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
        sendJson(res, 200, response, request.requestId);
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

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_EXECUTE_BODY_BYTES) {
        reject(new Error(`the body is over ${MAX_EXECUTE_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, requestId?: string): void {
  if (res.headersSent || res.destroyed) return;
  const payload = JSON.stringify(body);
  const headers: http.OutgoingHttpHeaders = {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(payload),
  };
  if (requestId) headers[REQUEST_ID_HEADER] = requestId;
  res.writeHead(status, headers);
  res.end(payload);
}
