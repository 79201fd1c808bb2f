// An OpenAI-compatible chat-completions server started by the test on 127.0.0.1, port 0.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { UhlpError } from '../errors.js';
import { type OpenAiCompatibleProviderOptions, createOpenAiCompatibleProvider, retryAfterMs } from './openai-compatible-provider.js';

interface Reply {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Never answer. */
  readonly hang?: boolean;
}

interface Received {
  readonly path: string;
  readonly authorization: string | undefined;
  readonly body: Record<string, unknown>;
}

const KEY = 'sk-test-secret-123';

function completion(text: string, model = 'gpt-test-0613'): Reply {
  return {
    status: 200,
    body: { id: 'c1', object: 'chat.completion', model, choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage: { prompt_tokens: 11, completion_tokens: 4, total_tokens: 15 } },
  };
}

async function failure(promise: Promise<unknown>): Promise<UhlpError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(UhlpError);
    return error as UhlpError;
  }
  throw new Error('expected a failure');
}

describe('OpenAI-compatible provider', () => {
  let server: http.Server;
  let baseUrl: string;
  let replies: Reply[];
  let received: Received[];
  let delays: number[];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        received.push({ path: req.url ?? '', authorization: req.headers.authorization, body: JSON.parse(text) as Record<string, unknown> });
        const reply = replies.length > 1 ? replies.shift() : replies[0];
        if (reply === undefined || reply.hang === true) return;
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {}));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  beforeEach(() => {
    replies = [];
    received = [];
    delays = [];
  });

  function provider(options: Partial<OpenAiCompatibleProviderOptions> = {}) {
    return createOpenAiCompatibleProvider({
      baseUrl,
      apiKey: KEY,
      model: 'gpt-default',
      maxRetries: 3,
      initialBackoffMs: 100,
      maxBackoffMs: 1000,
      random: () => 0.5,
      delay: async (ms) => {
        delays.push(ms);
      },
      ...options,
    });
  }

  it('sends a chat completion and returns text, model and usage', async () => {
    replies = [completion('Bonjour')];
    const result = await provider().generate({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Translate to French.' },
        { role: 'user', content: 'Hello' },
      ],
      maxTokens: 64,
      temperature: 0.2,
    });
    expect(result).toEqual({ text: 'Bonjour', model: 'gpt-test-0613', usage: { prompt: 11, completion: 4 } });
    expect(received).toEqual([
      {
        path: '/v1/chat/completions',
        authorization: `Bearer ${KEY}`,
        body: {
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system', content: 'Translate to French.' },
            { role: 'user', content: 'Hello' },
          ],
          max_tokens: 64,
          temperature: 0.2,
        },
      },
    ]);
  });

  it('turns a prompt into one user message and uses the configured model', async () => {
    replies = [completion('ok')];
    await provider().generate({ prompt: 'Say ok', maxTokens: 5 });
    expect(received[0]?.body).toEqual({ model: 'gpt-default', messages: [{ role: 'user', content: 'Say ok' }], max_tokens: 5 });
  });

  it('retries a 429 after the Retry-After it was given', async () => {
    replies = [{ status: 429, headers: { 'retry-after': '2' }, body: { error: { message: 'slow down' } } }, completion('done')];
    const result = await provider().generate({ prompt: 'x', maxTokens: 5 });
    expect(result.text).toBe('done');
    expect(received).toHaveLength(2);
    expect(delays).toEqual([2000]);
  });

  it('retries 5xx with exponential backoff and jitter', async () => {
    replies = [{ status: 503 }, { status: 500 }, { status: 502 }, completion('finally')];
    const result = await provider().generate({ prompt: 'x', maxTokens: 5 });
    expect(result.text).toBe('finally');
    // Half fixed, half random (0.5 here): 100 -> 75, 200 -> 150, 400 -> 300.
    expect(delays).toEqual([75, 150, 300]);
  });

  it('gives up on 429 after maxRetries with UHLP_LLM_RATE_LIMITED', async () => {
    replies = [{ status: 429, body: { error: { message: 'quota' } } }];
    const error = await failure(provider({ maxRetries: 2 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_RATE_LIMITED');
    expect(error.statusCode).toBe(429);
    expect(error.details).toMatchObject({ upstreamStatus: 429, upstreamMessage: 'quota', attempts: 3 });
    expect(received).toHaveLength(3);
  });

  it('fails at once when Retry-After is longer than maxRetryAfterMs', async () => {
    replies = [{ status: 429, headers: { 'retry-after': '3600' } }];
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_RATE_LIMITED');
    expect(received).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('gives up on 5xx after maxRetries with UHLP_LLM_UPSTREAM_ERROR', async () => {
    replies = [{ status: 500, body: 'internal' }];
    const error = await failure(provider({ maxRetries: 1 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_UPSTREAM_ERROR');
    expect(error.details).toMatchObject({ upstreamStatus: 500, upstreamMessage: 'internal', attempts: 2 });
  });

  it('does not retry a refused key and never reveals it', async () => {
    replies = [{ status: 401, body: { error: { message: `Incorrect API key provided: ${KEY}` } } }];
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_AUTH_FAILED');
    expect(received).toHaveLength(1);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(KEY);
  });

  it('does not retry a request the server calls invalid', async () => {
    replies = [{ status: 400, body: { error: { message: 'max_tokens is too large' } } }];
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_REQUEST_REJECTED');
    expect(error.statusCode).toBe(422);
    expect(error.details).toMatchObject({ upstreamStatus: 400, upstreamMessage: 'max_tokens is too large' });
    expect(received).toHaveLength(1);
  });

  it.each([
    ['not JSON', 'this is not json'],
    ['no choices', { id: 'x', choices: [] }],
    ['a null content', { choices: [{ message: { role: 'assistant', content: null } }] }],
  ])('answers %s with UHLP_LLM_BAD_RESPONSE', async (_name, body) => {
    replies = [{ status: 200, body }];
    expect((await failure(provider().generate({ prompt: 'x', maxTokens: 5 }))).code).toBe('UHLP_LLM_BAD_RESPONSE');
  });

  it('times out a server that does not answer, without retrying', async () => {
    replies = [{ status: 200, hang: true }];
    const error = await failure(provider({ timeoutMs: 100 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_TIMEOUT');
    expect(received).toHaveLength(1);
  });

  it('retries a server that cannot be reached, then fails with UHLP_LLM_UPSTREAM_ERROR', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const error = await failure(provider({ baseUrl: `http://127.0.0.1:${port}/v1`, maxRetries: 2 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_UPSTREAM_ERROR');
    expect(error.details).toMatchObject({ cause: 'ECONNREFUSED', attempts: 3 });
    expect(delays).toHaveLength(2);
  });

  it('stops when the caller aborts, with the caller reason', async () => {
    replies = [{ status: 200, hang: true }];
    const controller = new AbortController();
    const call = provider().generate({ prompt: 'x', maxTokens: 5, signal: controller.signal });
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 50);
    await expect(call).rejects.toBe(reason);
  });

  it('refuses a base URL that is not http(s)', () => {
    expect(() => createOpenAiCompatibleProvider({ baseUrl: 'ftp://example.com' })).toThrow(expect.objectContaining({ code: 'UHLP_CONFIG_INVALID' }));
  });

  it('reads Retry-After as seconds, as an HTTP date, and OpenAI retry-after-ms', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs({ 'retry-after': '3' }, now)).toBe(3000);
    expect(retryAfterMs({ 'retry-after': 'Thu, 01 Jan 2026 00:00:05 GMT' }, now)).toBe(5000);
    expect(retryAfterMs({ 'retry-after-ms': '250', 'retry-after': '3' }, now)).toBe(250);
    expect(retryAfterMs({ 'retry-after': 'soon' }, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
  });
});
