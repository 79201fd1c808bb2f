/**
 * An OpenAI-compatible chat-completions server for tests: a real HTTP server
 * on 127.0.0.1, port 0, that answers `POST /v1/chat/completions` the way
 * OpenAI, vLLM, Ollama and llama.cpp do — plain JSON completions, server-sent
 * event streams when the request says `stream: true` (text deltas, tool-call
 * deltas by index, usage in a last chunk when `stream_options.include_usage`
 * asks for it, `data: [DONE]`), tool calls, usage, errors with Retry-After,
 * answers that never come, dropped connections and malformed bodies; and
 * `POST /v1/embeddings` (a deterministic vector per text). The test
 * scripts what it answers and reads what it was sent.
 *
 * ```ts
 * const llm = await startOpenAiTestServer();
 * llm.enqueue(reply.error(429, { retryAfter: 1 }), reply.text('{"priority":"high"}'));
 * const provider = createOpenAiCompatibleProvider({ baseUrl: llm.baseUrl, model: 'small' });
 * await provider.generate({ prompt: 'triage this', maxTokens: 64 });
 * expect(llm.requests).toHaveLength(2);
 * expect(llm.requests[1]!.body.messages).toEqual([{ role: 'user', content: 'triage this' }]);
 * await llm.close();
 * ```
 *
 * A request takes the next queued reply; when the queue is empty, the handler
 * (`handle`) decides; with neither, the server answers 500 with a message that
 * says so, which a test sees as UHLP_LLM_UPSTREAM_ERROR. Point a core at it
 * with `UHLP_LLM_BASE_URL=${llm.baseUrl}`.
 */
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { localEmbedding } from '../../src/shared/local-embedding.js';

/** A tool call of a scripted completion; the id is made up when left out. */
export interface TestToolCall {
  readonly id?: string;
  readonly name: string;
  /** JSON text as the model would write it (sent as is), or an object (sent as its JSON). */
  readonly arguments: string | Record<string, unknown>;
}

export interface CompletionReply {
  readonly type: 'completion';
  /** The assistant's text; null (or left out with tool calls) for a tool-call-only answer. */
  readonly text?: string | null;
  readonly toolCalls?: readonly TestToolCall[];
  /** @defaultValue `tool_calls` with tool calls, else `stop` */
  readonly finishReason?: string;
  /** @defaultValue the model the request named */
  readonly model?: string;
  /** Token counts; null sends no usage at all. @defaultValue four characters a token of the request and the answer */
  readonly usage?: { readonly prompt: number; readonly completion: number } | null;
  /** Answer plain JSON even to a streaming request, as servers that ignore `stream` do. @defaultValue false */
  readonly ignoreStream?: boolean;
  /** Characters of text (and of tool-call arguments) per stream chunk. @defaultValue 4 */
  readonly chunkChars?: number;
  /** Extra response headers. */
  readonly headers?: Readonly<Record<string, string>>;
}

export interface ErrorReply {
  readonly type: 'error';
  readonly status: number;
  /** Sent as OpenAI's `{error: {message, type, code}}`. @defaultValue `test server error <status>` */
  readonly message?: string;
  /** The Retry-After header: seconds, or an HTTP date. @defaultValue none */
  readonly retryAfter?: number | string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface HangReply {
  readonly type: 'hang';
  /**
   * Send the 200 headers (and, to a streaming request, the first chunk) before
   * hanging: a model that starts and stalls. @defaultValue false: nothing at all
   */
  readonly afterHeaders?: boolean;
}

export interface RawReply {
  readonly type: 'raw';
  /** @defaultValue 200 */
  readonly status?: number;
  /** @defaultValue `content-type: application/json` */
  readonly headers?: Readonly<Record<string, string>>;
  /** Sent as is: broken JSON, a broken event stream, anything. */
  readonly body: string;
}

export interface DropReply {
  readonly type: 'drop';
}

export type TestReply = CompletionReply | ErrorReply | HangReply | RawReply | DropReply;

/** Builders of replies, so tests read as what the model does. */
export const reply = {
  /** A text answer. */
  text: (text: string, options: Omit<CompletionReply, 'type' | 'text'> = {}): CompletionReply => ({ type: 'completion', text, ...options }),
  /** An answer that only calls tools. */
  toolCalls: (toolCalls: readonly TestToolCall[], options: Omit<CompletionReply, 'type' | 'toolCalls'> = {}): CompletionReply => ({
    type: 'completion',
    toolCalls,
    ...options,
  }),
  /** An HTTP error in OpenAI's shape. */
  error: (status: number, options: Omit<ErrorReply, 'type' | 'status'> = {}): ErrorReply => ({ type: 'error', status, ...options }),
  /** No answer, ever (until the client gives up or the server closes). */
  hang: (options: Omit<HangReply, 'type'> = {}): HangReply => ({ type: 'hang', ...options }),
  /** Any body, e.g. one that is not JSON. */
  raw: (body: string, options: Omit<RawReply, 'type' | 'body'> = {}): RawReply => ({ type: 'raw', body, ...options }),
  /** The connection is closed without an answer. */
  drop: (): DropReply => ({ type: 'drop' }),
};

/** One request the server got. */
/** The text of a recorded chat request's last message: what a test's handler usually decides on. */
export function lastPrompt(request: RecordedRequest): string {
  const messages = request.body.messages ?? [];
  return String(messages[messages.length - 1]?.['content'] ?? '');
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The body as JSON (an OpenAI chat request); `{}` when it was not a JSON object. */
  readonly body: ChatRequestBody;
  readonly rawBody: string;
  /** The client closed the connection before the answer was complete (its timeout, an abort). */
  readonly disconnected: boolean;
}

/** The fields of a chat request tests look at; the rest is there too. */
export interface ChatRequestBody {
  readonly model?: string;
  readonly messages?: ReadonlyArray<Record<string, unknown>>;
  readonly tools?: ReadonlyArray<Record<string, unknown>>;
  readonly response_format?: Record<string, unknown>;
  readonly stream?: boolean;
  readonly stream_options?: { readonly include_usage?: boolean };
  readonly max_tokens?: number;
  readonly temperature?: number;
  readonly [field: string]: unknown;
}

export type ReplyHandler = (request: RecordedRequest) => TestReply | Promise<TestReply>;

export interface OpenAiTestServer {
  /** `http://127.0.0.1:<port>/v1`: the base URL a provider takes. */
  readonly baseUrl: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Replies for the next requests, in order. */
  enqueue(...replies: TestReply[]): this;
  /** Decides the reply of a request when the queue is empty. */
  handle(handler: ReplyHandler): this;
  /** Resolves once `count` requests have arrived; rejects after `timeoutMs` (default 5000). */
  waitForRequests(count: number, timeoutMs?: number): Promise<readonly RecordedRequest[]>;
  /** Forgets queued replies, the handler and recorded requests. */
  reset(): void;
  /** Closes every connection (hanging ones too) and the server. */
  close(): Promise<void>;
}

const CHAT_PATH = '/v1/chat/completions';
const EMBEDDINGS_PATH = '/v1/embeddings';

export interface OpenAiTestServerOptions {
  /** Keep every request in `requests`; a benchmark under load turns it off. @defaultValue true */
  readonly record?: boolean;
  /** The vector `/v1/embeddings` answers for a text. @defaultValue the local hash embedding (src/shared/local-embedding.ts) */
  readonly embed?: (text: string) => number[];
}

/** Starts a server on 127.0.0.1 with a free port. */
export async function startOpenAiTestServer(options: OpenAiTestServerOptions = {}): Promise<OpenAiTestServer> {
  const queue: TestReply[] = [];
  let handler: ReplyHandler | undefined;
  let requests: RecordedRequest[] = [];
  const waiters = new Set<() => void>();
  let completionIds = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const recorded = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: parseBody(rawBody), rawBody, disconnected: false };
      if (options.record !== false) requests.push(recorded);
      res.on('close', () => {
        if (!res.writableFinished) recorded.disconnected = true;
      });
      for (const wake of [...waiters]) wake();
      if (req.method === 'POST' && (req.url ?? '').split('?')[0] === EMBEDDINGS_PATH) {
        const input = recorded.body['input'];
        const texts = typeof input === 'string' ? [input] : Array.isArray(input) && input.every((item) => typeof item === 'string') ? (input as string[]) : undefined;
        if (texts === undefined) {
          sendJson(res, 400, { error: { message: 'input must be a string or a list of strings', type: 'invalid_request_error', code: null } });
          return;
        }
        const embed = options.embed ?? localEmbedding;
        sendJson(res, 200, {
          object: 'list',
          model: recorded.body.model ?? 'test-embedding',
          data: texts.map((text, index) => ({ object: 'embedding', index, embedding: embed(text) })),
          usage: { prompt_tokens: texts.join(' ').length, total_tokens: texts.join(' ').length },
        });
        return;
      }
      if (req.method !== 'POST' || (req.url ?? '').split('?')[0] !== CHAT_PATH) {
        sendJson(res, 404, { error: { message: `no route ${req.method} ${req.url}`, type: 'invalid_request_error', code: 'not_found' } });
        return;
      }
      void decide(recorded).then(
        (chosen) => answer(res, recorded.body, chosen, `chatcmpl-test-${++completionIds}`),
        (error: unknown) => sendJson(res, 500, { error: { message: `test server handler failed: ${String(error)}`, type: 'server_error' } }),
      );
    });
  });

  async function decide(request: RecordedRequest): Promise<TestReply> {
    const queued = queue.shift();
    if (queued !== undefined) return queued;
    if (handler !== undefined) return handler(request);
    return reply.error(500, { message: 'openai test server: no reply queued and no handler' });
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  const api: OpenAiTestServer = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get requests() {
      return requests;
    },
    enqueue(...replies) {
      queue.push(...replies);
      return api;
    },
    handle(next) {
      handler = next;
      return api;
    },
    async waitForRequests(count, timeoutMs = 5000) {
      if (requests.length >= count) return requests;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`openai test server: ${requests.length} of ${count} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        const check = (): void => {
          if (requests.length < count) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(requests);
        };
        waiters.add(check);
      });
    },
    reset() {
      queue.length = 0;
      handler = undefined;
      requests = [];
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return api;
}

function parseBody(text: string): ChatRequestBody {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as ChatRequestBody) : {};
  } catch {
    return {};
  }
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...headers });
  res.end(text);
}

function answer(res: http.ServerResponse, request: ChatRequestBody, chosen: TestReply, id: string): void {
  switch (chosen.type) {
    case 'drop':
      res.socket?.destroy();
      return;
    case 'hang':
      if (chosen.afterHeaders === true) {
        if (request.stream === true) {
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
          res.write(event(chunk(id, request.model ?? 'test-model', { role: 'assistant', content: '' })));
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.flushHeaders();
        }
      }
      return;
    case 'raw':
      res.writeHead(chosen.status ?? 200, { 'content-type': 'application/json', ...chosen.headers });
      res.end(chosen.body);
      return;
    case 'error': {
      const headers: Record<string, string> = { ...chosen.headers };
      if (chosen.retryAfter !== undefined) headers['retry-after'] = String(chosen.retryAfter);
      const message = chosen.message ?? `test server error ${chosen.status}`;
      sendJson(res, chosen.status, { error: { message, type: chosen.status === 429 ? 'rate_limit_error' : 'server_error', code: null } }, headers);
      return;
    }
    case 'completion':
      if (request.stream === true && chosen.ignoreStream !== true) stream(res, request, chosen, id);
      else sendJson(res, 200, completion(request, chosen, id), chosen.headers);
  }
}

interface Answer {
  readonly model: string;
  readonly text: string | null;
  readonly toolCalls: Array<{ id: string; name: string; arguments: string }>;
  readonly finishReason: string;
  readonly usage: { prompt: number; completion: number } | null;
}

function answerOf(request: ChatRequestBody, chosen: CompletionReply, id: string): Answer {
  const toolCalls = (chosen.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `call_${id.slice(-6)}_${index}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
  }));
  const text = chosen.text ?? (toolCalls.length > 0 ? null : '');
  const promptChars = (request.messages ?? []).map((message) => (typeof message['content'] === 'string' ? message['content'] : '')).join('\n').length;
  const completionChars = (text ?? '').length + toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, 0);
  return {
    model: chosen.model ?? request.model ?? 'test-model',
    text,
    toolCalls,
    finishReason: chosen.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: chosen.usage === null ? null : (chosen.usage ?? { prompt: Math.ceil(promptChars / 4), completion: Math.ceil(completionChars / 4) }),
  };
}

function wireUsage(usage: { prompt: number; completion: number }): Record<string, number> {
  return { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion };
}

function completion(request: ChatRequestBody, chosen: CompletionReply, id: string): Record<string, unknown> {
  const made = answerOf(request, chosen, id);
  const message: Record<string, unknown> = { role: 'assistant', content: made.text };
  if (made.toolCalls.length > 0) {
    message['tool_calls'] = made.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } }));
  }
  return {
    id,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: made.model,
    choices: [{ index: 0, message, finish_reason: made.finishReason }],
    ...(made.usage !== null ? { usage: wireUsage(made.usage) } : {}),
  };
}

function chunk(id: string, model: string, delta: Record<string, unknown>, finishReason: string | null = null): Record<string, unknown> {
  return { id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model, choices: [{ index: 0, delta, finish_reason: finishReason }] };
}

function event(data: unknown): string {
  return `data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

function pieces(text: string, size: number): string[] {
  if (text === '') return [];
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** The answer as OpenAI streams it: role first, then text pieces, then each tool call (id and name, then argument pieces), then the finish reason, the usage, [DONE]. */
function stream(res: http.ServerResponse, request: ChatRequestBody, chosen: CompletionReply, id: string): void {
  const made = answerOf(request, chosen, id);
  const size = Math.max(1, chosen.chunkChars ?? 4);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...chosen.headers });
  let body = event(chunk(id, made.model, { role: 'assistant', content: made.text === null ? null : '' }));
  for (const piece of pieces(made.text ?? '', size)) body += event(chunk(id, made.model, { content: piece }));
  made.toolCalls.forEach((call, index) => {
    body += event(chunk(id, made.model, { tool_calls: [{ index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } }] }));
    for (const piece of pieces(call.arguments, size)) body += event(chunk(id, made.model, { tool_calls: [{ index, function: { arguments: piece } }] }));
  });
  body += event(chunk(id, made.model, {}, made.finishReason));
  if (request.stream_options?.include_usage === true && made.usage !== null) {
    body += event({ id, object: 'chat.completion.chunk', created: Math.floor(Date.now() / 1000), model: made.model, choices: [], usage: wireUsage(made.usage) });
  }
  body += event('[DONE]');
  // Written in several writes, so that a client really assembles chunks that arrive apart.
  const third = Math.ceil(body.length / 3);
  res.write(body.slice(0, third));
  res.write(body.slice(third, 2 * third));
  res.end(body.slice(2 * third));
}
