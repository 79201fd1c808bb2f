/**
 * The floor of a workflow's first streamed byte on this machine: the same hops
 * between the same kinds of processes, with nothing of uhlp in them. A front
 * process (the core's place) takes `POST /streamed` on the core's HTTP/1.1
 * server and answers server-sent events; it asks a brain process (the
 * orchestrator's place, its child) on a Unix socket, which at once asks the
 * front back for a completion on the front's own Unix socket; the front sends
 * the streamed completion to the OpenAI-compatible server (undici, as the
 * core's provider) and writes the provider's first piece to the client as a
 * NODE_STREAM event; the rest ends the answer. Each hop is one kept-alive
 * HTTP/1.1 exchange, as in uhlp: client -> front -> brain -> front -> provider
 * -> front -> client. No routing, run records, tokens, templates, MCP,
 * checkpoints, ledger or metrics.
 *
 * `GET /greet/<id>` makes the same hops for an LLM component's plain turn (the
 * floor of its CPU per turn, bench/llm-dispatch.ts) with the same messages, so
 * that the floor moves the same bytes over the same transports as the core
 * does: the front sends the brain an /execute of the core's shape and size
 * (greetExecuteBody), the brain parses it and asks the front back with the
 * orchestrator's `core.llm.generate` JSON-RPC POST (its headers and `_meta`),
 * the front parses that, sends the provider the same completion request, and
 * answers the JSON-RPC result the core answers (text and structured content);
 * the brain answers the runner's /execute result (data and metrics), and the
 * front answers the client the component's `{"text"}`. Each message is parsed
 * and written as the processes of the core's path do, with none of their
 * checks, records or bookkeeping.
 *
 *   tsx bench/lib/bare-stream-relay.ts <provider base URL>   (prints {"port": N} once listening)
 */
import { spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { Http1Server } from '../../src/shared/http1/http1-server.js';
import { startBareChild, type BareChild } from './bare-child.js';

const LIMITS = { maxHeadBytes: 16 * 1024, maxBodyBytes: 1024 * 1024 };
const loader = new URL('../../node_modules/tsx/dist/loader.mjs', import.meta.url).href;

/** Starts the front (and through it the brain) as child processes, in front of `baseUrl`; the pid is the front's, the brain its child. */
export function startBareStreamRelay(baseUrl: string): Promise<BareChild> {
  return startBareChild(import.meta.url, ['front', baseUrl], 'the bare stream relay');
}

/** Pieces pushed by one side and read as a stream by the server. */
class Pieces {
  private readonly queued: string[] = [];
  private ended = false;
  private wake: (() => void) | undefined;

  push(piece: string): void {
    this.queued.push(piece);
    this.wake?.();
  }

  end(): void {
    this.ended = true;
    this.wake?.();
  }

  async *chunks(): AsyncGenerator<string> {
    for (;;) {
      if (this.queued.length > 0) {
        yield this.queued.splice(0).join('');
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
  }
}

async function front(baseUrl: string): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-bare-stream-'));
  const frontSocket = path.join(dir, 'front.sock');
  const brainSocket = path.join(dir, 'brain.sock');
  const endpoint = `${baseUrl.replace(/\/+$/, '')}/chat/completions`;
  const streams = new Map<string, Pieces>();
  let next = 0;
  // What the core's /execute carries every turn: the revision, the execution's token, the session and its turn.
  const revision = randomBytes(20).toString('hex');
  const token = `uhlp_mcp_${randomBytes(32).toString('base64url')}`;
  const session = `SES-20261129T210340593Z-${randomBytes(10).toString('hex').toUpperCase()}`;
  let turn = 1;

  // The brain's calls back: one streamed completion, its first piece to the client at once.
  const back = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      if (req.path === '/mcp') {
        // A plain turn's core.llm.generate: one completion, its JSON read whole, answered as the core answers the tool call.
        const rpc = JSON.parse(req.body.toString()) as GenerateCall;
        const args = rpc.params.arguments;
        const plain = JSON.stringify({ model: 'small', messages: args.messages, max_tokens: args.maxTokens });
        request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: plain })
          .then(async (answer) => {
            const completion = (await answer.body.json()) as Completion;
            const content = {
              text: completion.choices[0]!.message.content,
              toolCalls: [],
              finishReason: completion.choices[0]!.finish_reason,
              model: args.model ?? 'small',
              usage: { prompt: completion.usage.prompt_tokens, completion: completion.usage.completion_tokens },
              cached: false,
            };
            const result = { content: [{ type: 'text', text: JSON.stringify(content) }], structuredContent: content, resultType: 'complete', _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'uhlp-core', version: '0.1.0' } } };
            respond({ status: 200, headers: { 'content-type': 'application/json', 'x-request-id': randomUUID() }, body: JSON.stringify({ result, jsonrpc: '2.0', id: rpc.id }) });
          })
          .catch(() => respond({ status: 502 }));
        return;
      }
      const { id } = JSON.parse(req.body.toString()) as { id: string };
      const pieces = streams.get(id)!;
      const body = JSON.stringify({ model: 'small', stream: true, messages: [{ role: 'user', content: 'Say something.' }] });
      request(endpoint, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'text/event-stream' }, body })
        .then(async (answer) => {
          let text = '';
          for await (const chunk of answer.body) {
            if (text === '') pieces.push(`event: NODE_STREAM\ndata: ${JSON.stringify({ stream_id: 'default', chunk: String(chunk).slice(0, 64) })}\n\n`);
            text += String(chunk);
          }
          respond({ status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bytes: text.length }) });
        })
        .catch(() => respond({ status: 502 }));
    },
  });
  await back.listen({ path: frontSocket });

  const brain = spawn(process.execPath, ['--import', loader, fileURLToPath(import.meta.url), 'brain', brainSocket, frontSocket], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    brain.stdout!.once('data', () => resolve());
    brain.once('exit', (code) => reject(new Error(`the bare brain exited with ${code}`)));
  });
  const toBrain = new Agent({ connect: { socketPath: brainSocket } });

  const server = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      const id = String(next++);
      if (req.path.startsWith('/greet/')) {
        const requestId = randomUUID();
        const body = greetExecuteBody(requestId, req.path, req.path.slice('/greet/'.length), revision, token, session, turn++);
        request('http://brain/execute', { method: 'POST', dispatcher: toBrain, headers: { 'content-type': 'application/json', accept: 'application/json', 'x-request-id': requestId }, body })
          .then(async (answer) => {
            const result = (await answer.body.json()) as { data: unknown };
            respond({ status: answer.statusCode, headers: { 'content-type': 'application/json; charset=utf-8', 'x-request-id': requestId }, body: JSON.stringify(result.data) });
          })
          .catch(() => respond({ status: 502 }));
        return;
      }
      const pieces = new Pieces();
      streams.set(id, pieces);
      respond({ status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, stream: { chunks: pieces.chunks() } });
      request('http://brain/execute', { method: 'POST', dispatcher: toBrain, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id }) })
        .then(async (answer) => {
          const result = await answer.body.text();
          pieces.push(`event: RESULT\ndata: ${result}\n\n`);
        })
        .catch(() => pieces.push('event: RESULT\ndata: {"status":502}\n\n'))
        .finally(() => {
          streams.delete(id);
          pieces.end();
        });
    },
  });
  const address = (await server.listen({ host: '127.0.0.1', port: 0 })) as AddressInfo;
  process.on('SIGTERM', () => {
    brain.kill('SIGTERM');
    process.exit(0);
  });
  process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);
}

/** The orchestrator's place: each execution asks the front for a completion at once and answers what it got. */
async function brain(listenSocket: string, frontSocket: string): Promise<void> {
  const toFront = new Agent({ connect: { socketPath: frontSocket } });
  const server = new Http1Server({
    limits: LIMITS,
    onBadRequest: (error) => ({ status: error.status }),
    onRequest: (req, respond) => {
      const started = performance.now();
      const execute = JSON.parse(req.body.toString()) as ExecuteCall;
      if (execute.context === undefined) {
        // The streamed turn (POST /streamed): its id passed on as it came.
        request('http://front/generate', { method: 'POST', dispatcher: toFront, headers: { 'content-type': 'application/json' }, body: req.body })
          .then(async (answer) => respond({ status: 200, headers: { 'content-type': 'application/json' }, body: await answer.body.text() }))
          .catch(() => respond({ status: 502 }));
        return;
      }
      // The orchestrator's core.llm.generate: the prompt rendered, the call as tools-client.ts sends it.
      const name = execute.context.taskDetails.llm;
      const call = JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'core.llm.generate',
          arguments: { messages: [{ role: 'user', content: `Say hello to ${execute.requestData.httpDetails.pathParameters['name']}.` }], maxTokens: name.maxTokens, stream: { id: 'default', node: execute.context.componentId } },
          _meta: MCP_META,
        },
      });
      const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        authorization: `Bearer ${execute.context.mcp_token}`,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'core.llm.generate',
      };
      const callStarted = performance.now();
      request('http://localhost/mcp', { method: 'POST', dispatcher: toFront, headers, body: call })
        .then(async (answer) => {
          const rpc = (await answer.body.json()) as { result: { structuredContent: { text: string; usage: { prompt: number; completion: number } } } };
          const content = rpc.result.structuredContent;
          const ended = performance.now();
          const result = {
            requestId: execute.requestId,
            resultType: 'generic',
            data: { text: content.text },
            metrics: { execution_time_ms: ms(ended - started), mcp_calls: [{ tool: 'core.llm.generate', count: 1, total_duration_ms: ms(ended - callStarted), token_usage: content.usage }] },
          };
          respond({ status: 200, headers: { 'content-type': 'application/json', 'x-request-id': execute.requestId }, body: JSON.stringify(result) });
        })
        .catch(() => respond({ status: 502 }));
    },
  });
  await server.listen({ path: listenSocket });
  process.on('SIGTERM', () => process.exit(0));
  process.stdout.write('ready\n');
}

/** The orchestrator's MCP `_meta` envelope (tools-client.ts). */
const MCP_META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'uhlp-runner', version: '0.1.0' },
};

interface ExecuteCall {
  readonly requestId: string;
  readonly requestData: { readonly httpDetails: { readonly pathParameters: Record<string, string> } };
  readonly context?: { readonly componentId: string; readonly mcp_token: string; readonly taskDetails: { readonly llm: { readonly maxTokens: number } } };
}
interface GenerateCall {
  readonly id: number;
  readonly params: { readonly arguments: { readonly messages: unknown[]; readonly maxTokens: number; readonly model?: string } };
}
interface Completion {
  readonly choices: Array<{ message: { content: string }; finish_reason: string }>;
  readonly usage: { prompt_tokens: number; completion_tokens: number };
}

/** The core's /execute for the llm bench's GET /greet/<name> (bench/llm-dispatch.ts), field for field. */
export function greetExecuteBody(requestId: string, path: string, name: string, revision: string, token: string, session: string, turn: number): string {
  return JSON.stringify({
    requestId,
    requestData: {
      httpDetails: { body: '', bodyEncoding: 'utf8', headers: { host: 'uhlp-bench' }, method: 'GET', path, pathParameters: { name }, queryParameters: {}, routePattern: '/greet/:name' },
      source: 'http',
    },
    context: {
      appId: 'bench',
      componentId: 'greet',
      mcp_endpoint: 'http://127.0.0.1:37287/mcp',
      stateConfig: { type: 'mcp_tool', readTool: 'core.state.getDefinitionFileContent', writeTool: 'core.state.applyStateDiff' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'LLM', revision, timeoutMs: 5000, llm: { prompt: 'prompts/greet.njk', maxTokens: 32, maxAttempts: 3, tools: [], maxToolCalls: 8, respond: 'generic', header: false } },
      mcp_token: token,
      sessionId: session,
      workspace: { tmpDir: `tmp/${session}`, outputDir: `output/${session}` },
      turnNumber: turn,
    },
  });
}

/** Microsecond precision, as the runner's metrics. */
function ms(value: number): number {
  return Math.round(value * 1000) / 1000;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv[2] === 'front') await front(process.argv[3]!);
  else await brain(process.argv[3]!, process.argv[4]!);
}
