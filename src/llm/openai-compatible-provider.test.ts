// Against a real OpenAI-compatible HTTP server on 127.0.0.1, port 0 (test/helpers/openai-test-server.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type OpenAiTestServer, reply, startOpenAiTestServer } from '../../test/helpers/openai-test-server.js';
import { UhlpError } from '../shared/errors.js';
import type { LlmProvider } from './llm-provider.js';
import { type OpenAiCompatibleProviderOptions, createOpenAiCompatibleProvider, retryAfterMs } from './openai-compatible-provider.js';

const KEY = 'sk-test-secret-123';

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
  let llm: OpenAiTestServer;
  let delays: number[];

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
  });

  afterAll(async () => {
    await llm.close();
  });

  beforeEach(() => {
    llm.reset();
    delays = [];
  });

  function provider(options: Partial<OpenAiCompatibleProviderOptions> = {}): LlmProvider {
    return createOpenAiCompatibleProvider({
      baseUrl: `${llm.baseUrl}/`,
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

  it('sends a chat completion and returns text, tool calls, finish reason, model and usage', async () => {
    llm.enqueue(reply.text('Bonjour', { model: 'gpt-test-0613', usage: { prompt: 11, completion: 4 } }));
    const result = await provider().generate({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Translate to French.' },
        { role: 'user', content: 'Hello' },
      ],
      maxTokens: 64,
      temperature: 0.2,
    });
    expect(result).toEqual({ text: 'Bonjour', toolCalls: [], finishReason: 'stop', model: 'gpt-test-0613', usage: { prompt: 11, completion: 4 } });
    expect(llm.requests).toHaveLength(1);
    expect(llm.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions', headers: { authorization: `Bearer ${KEY}` } });
    expect(llm.requests[0]!.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Translate to French.' },
        { role: 'user', content: 'Hello' },
      ],
      max_tokens: 64,
      temperature: 0.2,
    });
  });

  it('turns a prompt and a system text into messages and uses the configured model', async () => {
    llm.enqueue(reply.text('ok'));
    await provider().generate({ system: 'Be brief.', prompt: 'Say ok', maxTokens: 5 });
    expect(llm.requests[0]?.body).toEqual({
      model: 'gpt-default',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Say ok' },
      ],
      max_tokens: 5,
    });
  });

  it('offers tools, reads tool calls, and sends assistant tool calls and tool results back the OpenAI way', async () => {
    const tools = [
      { name: 'core_kv_get', description: 'Reads a key.', parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] } },
      { name: 'lookup', parameters: { type: 'object' } },
    ];
    llm.enqueue(
      reply.toolCalls([
        { id: 'call_a', name: 'core_kv_get', arguments: '{"key":"ctr:visits"}' },
        { id: 'call_b', name: 'lookup', arguments: { q: 'x' } },
      ]),
    );
    const first = await provider().generate({ prompt: 'How many visits?', tools, maxTokens: 50 });
    expect(first).toMatchObject({
      text: null,
      finishReason: 'tool_calls',
      toolCalls: [
        { id: 'call_a', name: 'core_kv_get', arguments: '{"key":"ctr:visits"}' },
        { id: 'call_b', name: 'lookup', arguments: '{"q":"x"}' },
      ],
    });
    expect(llm.requests[0]!.body.tools).toEqual([
      { type: 'function', function: { name: 'core_kv_get', description: 'Reads a key.', parameters: tools[0]!.parameters } },
      { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } },
    ]);

    llm.enqueue(reply.text('There were 3 visits.'));
    const second = await provider().generate({
      messages: [
        { role: 'user', content: 'How many visits?' },
        { role: 'assistant', content: null, toolCalls: first.toolCalls },
        { role: 'tool', toolCallId: 'call_a', content: '{"value":3}' },
        { role: 'tool', toolCallId: 'call_b', content: '{"error":"no"}' },
      ],
      tools,
      maxTokens: 50,
    });
    expect(second).toMatchObject({ text: 'There were 3 visits.', toolCalls: [], finishReason: 'stop' });
    expect(llm.requests[1]!.body.messages).toEqual([
      { role: 'user', content: 'How many visits?' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'core_kv_get', arguments: '{"key":"ctr:visits"}' } },
          { id: 'call_b', type: 'function', function: { name: 'lookup', arguments: '{"q":"x"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"value":3}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"error":"no"}' },
    ]);
  });

  it.each([
    ['json_schema', { type: 'json_schema', json_schema: { name: 'triage', schema: { type: 'object', required: ['priority'] }, strict: false } }],
    ['json_object', { type: 'json_object' }],
    ['none', undefined],
  ] as const)('asks for structured output as %s', async (mode, expected) => {
    llm.enqueue(reply.text('{"priority":"high"}'));
    const result = await provider({ structuredOutput: mode }).generate({
      prompt: 'triage',
      responseSchema: { name: 'triage', schema: { type: 'object', required: ['priority'] } },
      maxTokens: 20,
    });
    expect(result.text).toBe('{"priority":"high"}');
    expect(llm.requests[0]!.body.response_format).toEqual(expected);
  });

  it('streams: sends stream options and assembles text deltas, tool-call deltas by index and the usage of the last chunk', async () => {
    llm.enqueue(
      reply.text('The quick brown fox jumps over the lazy dog, twice: ünïcödé ✓.', { usage: { prompt: 21, completion: 13 }, chunkChars: 3 }),
      reply.toolCalls(
        [
          { id: 'call_1', name: 'core_kv_get', arguments: '{"key":"a long key name to split"}' },
          { id: 'call_2', name: 'lookup', arguments: '{"q":"second"}' },
        ],
        { text: 'Let me look.', chunkChars: 2, usage: { prompt: 30, completion: 9 } },
      ),
    );
    const streaming = provider({ stream: true });
    const text = await streaming.generate({ prompt: 'fox', maxTokens: 50 });
    expect(text).toEqual({
      text: 'The quick brown fox jumps over the lazy dog, twice: ünïcödé ✓.',
      toolCalls: [],
      finishReason: 'stop',
      model: 'gpt-default',
      usage: { prompt: 21, completion: 13 },
    });
    expect(llm.requests[0]!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(llm.requests[0]!.headers.accept).toContain('text/event-stream');

    const calls = await streaming.generate({ prompt: 'look', tools: [{ name: 'core_kv_get', parameters: {} }, { name: 'lookup', parameters: {} }], maxTokens: 50 });
    expect(calls).toEqual({
      text: 'Let me look.',
      toolCalls: [
        { id: 'call_1', name: 'core_kv_get', arguments: '{"key":"a long key name to split"}' },
        { id: 'call_2', name: 'lookup', arguments: '{"q":"second"}' },
      ],
      finishReason: 'tool_calls',
      model: 'gpt-default',
      usage: { prompt: 30, completion: 9 },
    });
  });

  it('streaming: reads a plain JSON answer from a server that ignores stream, and estimates usage a server does not send', async () => {
    llm.enqueue(reply.text('plain', { ignoreStream: true, usage: { prompt: 2, completion: 1 } }), reply.text('12345678', { usage: null }));
    expect((await provider({ stream: true }).generate({ prompt: 'x', maxTokens: 5 })).usage).toEqual({ prompt: 2, completion: 1 });
    expect((await provider({ stream: true }).generate({ prompt: 'abcd', maxTokens: 5 })).usage).toEqual({ prompt: 1, completion: 2 });
  });

  it.each([
    ['a chunk that is not JSON', 'data: {"choices": [\n\n', 'UHLP_LLM_BAD_RESPONSE'],
    ['a stream cut before its end', 'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\n', 'UHLP_LLM_BAD_RESPONSE'],
    ['an error event in the middle', 'data: {"choices":[{"index":0,"delta":{"content":"Hel"}}]}\n\ndata: {"error":{"message":"model crashed"}}\n\n', 'UHLP_LLM_UPSTREAM_ERROR'],
    ['a tool call without a name', 'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n', 'UHLP_LLM_BAD_RESPONSE'],
  ])('streaming: answers %s with %s', async (_name, body, code) => {
    llm.enqueue(reply.raw(body, { headers: { 'content-type': 'text/event-stream' } }));
    expect((await failure(provider({ stream: true }).generate({ prompt: 'x', maxTokens: 5 }))).code).toBe(code);
  });

  it('streaming: takes CRLF line ends, comments and multi-line data as the SSE format allows', async () => {
    const body =
      ': keep-alive\r\n\r\n' +
      'event: message\r\ndata: {"model":"m-1","choices":[{"index":0,"delta":{"content":"a"}}]}\r\n\r\n' +
      'data: {"choices":[{"index":0,\r\ndata: "delta":{"content":"b"},"finish_reason":"stop"}]}\r\n\r\n' +
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\r\n\r\ndata: [DONE]\r\n\r\n';
    llm.enqueue(reply.raw(body, { headers: { 'content-type': 'text/event-stream' } }));
    expect(await provider({ stream: true }).generate({ prompt: 'x', maxTokens: 5 })).toEqual({
      text: 'ab',
      toolCalls: [],
      finishReason: 'stop',
      model: 'm-1',
      usage: { prompt: 3, completion: 2 },
    });
  });

  it('retries a 429 after the Retry-After it was given, streaming or not', async () => {
    for (const stream of [false, true]) {
      llm.reset();
      delays = [];
      llm.enqueue(reply.error(429, { retryAfter: 2, message: 'slow down' }), reply.text('done'));
      const result = await provider({ stream }).generate({ prompt: 'x', maxTokens: 5 });
      expect(result.text).toBe('done');
      expect(llm.requests).toHaveLength(2);
      expect(delays).toEqual([2000]);
    }
  });

  it('waits for real: a 429 with Retry-After 1 then an answer takes about a second', async () => {
    llm.enqueue(reply.error(429, { retryAfter: 1 }), reply.text('after the wait'));
    const started = performance.now();
    const result = await createOpenAiCompatibleProvider({ baseUrl: llm.baseUrl, model: 'm' }).generate({ prompt: 'x', maxTokens: 5 });
    expect(result.text).toBe('after the wait');
    expect(performance.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('honours Retry-After on a 503 too', async () => {
    llm.enqueue(reply.error(503, { retryAfter: 1 }), reply.error(502), reply.text('up again'));
    expect((await provider({ stream: true }).generate({ prompt: 'x', maxTokens: 5 })).text).toBe('up again');
    expect(delays).toEqual([1000, 150]);
  });

  it('retries 5xx with exponential backoff and jitter', async () => {
    llm.enqueue(reply.error(503), reply.error(500), reply.error(502), reply.text('finally'));
    const result = await provider().generate({ prompt: 'x', maxTokens: 5 });
    expect(result.text).toBe('finally');
    // Half fixed, half random (0.5 here): 100 -> 75, 200 -> 150, 400 -> 300.
    expect(delays).toEqual([75, 150, 300]);
  });

  it('retries a dropped connection', async () => {
    llm.enqueue(reply.drop(), reply.text('back'));
    expect((await provider().generate({ prompt: 'x', maxTokens: 5 })).text).toBe('back');
    expect(delays).toHaveLength(1);
  });

  it('gives up on 429 after maxRetries with UHLP_LLM_RATE_LIMITED', async () => {
    llm.handle(() => reply.error(429, { message: 'quota' }));
    const error = await failure(provider({ maxRetries: 2 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_RATE_LIMITED');
    expect(error.statusCode).toBe(429);
    expect(error.details).toMatchObject({ upstreamStatus: 429, upstreamMessage: 'quota', attempts: 3 });
    expect(llm.requests).toHaveLength(3);
  });

  it('fails at once when Retry-After is longer than maxRetryAfterMs', async () => {
    llm.enqueue(reply.error(429, { retryAfter: 3600 }));
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_RATE_LIMITED');
    expect(llm.requests).toHaveLength(1);
    expect(delays).toEqual([]);
  });

  it('gives up on 5xx after maxRetries with UHLP_LLM_UPSTREAM_ERROR', async () => {
    llm.handle(() => reply.raw('internal', { status: 500, headers: { 'content-type': 'text/plain' } }));
    const error = await failure(provider({ maxRetries: 1 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_UPSTREAM_ERROR');
    expect(error.details).toMatchObject({ upstreamStatus: 500, upstreamMessage: 'internal', attempts: 2 });
  });

  it('does not retry a refused key and never reveals it', async () => {
    llm.enqueue(reply.error(401, { message: `Incorrect API key provided: ${KEY}` }));
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_AUTH_FAILED');
    expect(llm.requests).toHaveLength(1);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain(KEY);
  });

  it('does not retry a request the server calls invalid', async () => {
    llm.enqueue(reply.error(400, { message: 'max_tokens is too large' }));
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_REQUEST_REJECTED');
    expect(error.statusCode).toBe(422);
    expect(error.details).toMatchObject({ upstreamStatus: 400, upstreamMessage: 'max_tokens is too large' });
    expect(llm.requests).toHaveLength(1);
  });

  it.each([
    ['not JSON', 'this is not json'],
    ['no choices', JSON.stringify({ id: 'x', choices: [] })],
    ['a null content without tool calls', JSON.stringify({ choices: [{ message: { role: 'assistant', content: null }, finish_reason: 'stop' }] })],
    ['a content that is not a string', JSON.stringify({ choices: [{ message: { role: 'assistant', content: 5 } }] })],
    ['tool calls that are not a list', JSON.stringify({ choices: [{ message: { role: 'assistant', content: null, tool_calls: 'x' } }] })],
    ['a tool call without a name', JSON.stringify({ choices: [{ message: { role: 'assistant', content: null, tool_calls: [{ id: 'c', function: {} }] } }] })],
    ['JSON null', 'null'],
  ])('answers %s with UHLP_LLM_BAD_RESPONSE', async (_name, body) => {
    llm.enqueue(reply.raw(body));
    expect((await failure(provider().generate({ prompt: 'x', maxTokens: 5 }))).code).toBe('UHLP_LLM_BAD_RESPONSE');
  });

  it('refuses an answer over maxResponseBytes, and quotes only the start of a huge error body', async () => {
    llm.enqueue(reply.text('x'.repeat(10_000)));
    expect((await failure(provider({ maxResponseBytes: 4096 }).generate({ prompt: 'x', maxTokens: 5 }))).details).toMatchObject({ maxResponseBytes: 4096 });
    llm.enqueue(reply.raw('y'.repeat(1_000_000), { status: 400, headers: { 'content-type': 'text/plain' } }));
    const error = await failure(provider().generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_REQUEST_REJECTED');
    expect((error.details as { upstreamMessage: string }).upstreamMessage).toHaveLength(500);
  });

  it('keeps a null text with a length or content_filter finish, and makes up tool call ids a server left out', async () => {
    llm.enqueue(
      reply.raw(JSON.stringify({ choices: [{ message: { role: 'assistant', content: null }, finish_reason: 'content_filter' }] })),
      reply.raw(JSON.stringify({ choices: [{ message: { role: 'assistant', content: '', tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }] } }] })),
    );
    expect(await provider().generate({ prompt: 'x', maxTokens: 5 })).toMatchObject({ text: null, toolCalls: [], finishReason: 'content_filter' });
    expect(await provider().generate({ prompt: 'x', maxTokens: 5 })).toMatchObject({
      text: null,
      toolCalls: [{ id: 'call_0', name: 'f', arguments: '{"a":1}' }],
      finishReason: 'tool_calls',
    });
  });

  it('times out a server that does not answer, without retrying, and closes the connection', async () => {
    llm.enqueue(reply.hang());
    const error = await failure(provider({ timeoutMs: 100 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_TIMEOUT');
    expect(error.statusCode).toBe(504);
    expect(llm.requests).toHaveLength(1);
    await expect.poll(() => llm.requests[0]!.disconnected).toBe(true);
  });

  it('times out a stream that starts and stalls', async () => {
    llm.enqueue(reply.hang({ afterHeaders: true }));
    const error = await failure(provider({ stream: true, timeoutMs: 150 }).generate({ prompt: 'x', maxTokens: 5 }));
    expect(error.code).toBe('UHLP_LLM_TIMEOUT');
    expect(llm.requests).toHaveLength(1);
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
    llm.enqueue(reply.hang());
    const controller = new AbortController();
    const call = provider().generate({ prompt: 'x', maxTokens: 5, signal: controller.signal });
    const reason = new Error('client went away');
    await llm.waitForRequests(1);
    controller.abort(reason);
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
