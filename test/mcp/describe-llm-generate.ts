/**
 * `core.llm.generate` end to end inside the core, run against each runtime
 * store (memory in src/mcp/tools/llm-tool.test.ts, Redis in
 * test/mcp/llm-generate-redis.test.ts): the contract's shapes on the wire to a
 * real OpenAI-compatible HTTP server, capability checks, the daily token budget
 * (refusal, Retry-After seconds, charged with the real usage), the answer cache
 * (a hit spends nothing), the metrics and the evidence.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CapabilitiesSpec } from '../../src/apps/schema/app-definition-schema.js';
import { FileLedger } from '../../src/ledger/file-ledger.js';
import { hashPayload } from '../../src/ledger/ledger-entry.js';
import { verifyLedgers } from '../../src/ledger/ledger-verify.js';
import { createLlmService } from '../../src/llm/llm-service.js';
import { createOpenAiCompatibleProvider } from '../../src/llm/openai-compatible-provider.js';
import { silentLogger } from '../../src/logger.js';
import { type ExecutionGrant, McpTokenService } from '../../src/mcp/mcp-token-service.js';
import type { ToolServices } from '../../src/mcp/tool-definition.js';
import { invokeTool } from '../../src/mcp/tool-invoker.js';
import { type Metrics, createMetrics } from '../../src/metrics.js';
import type { RuntimeStore } from '../../src/state/runtime-store.js';
import { createSessionIdGenerator } from '../../src/state/session-id.js';
import { type OpenAiTestServer, reply, startOpenAiTestServer } from '../helpers/openai-test-server.js';

export interface LlmStoreFixture {
  readonly store: RuntimeStore;
  readonly cleanup: () => Promise<void>;
}

/** 2026-05-04T23:00:00Z: one hour before the UTC day ends. */
const LATE_EVENING = Date.parse('2026-05-04T23:00:00.000Z');

export function describeLlmGenerate(name: string, makeStore: () => Promise<LlmStoreFixture>): void {
  describe(`core.llm.generate with the ${name} runtime store`, () => {
    let llm: OpenAiTestServer;
    let fixture: LlmStoreFixture;
    let store: RuntimeStore;
    let metrics: Metrics;
    let services: ToolServices;
    let now: number;
    const tokens = new McpTokenService();

    beforeAll(async () => {
      llm = await startOpenAiTestServer();
    });

    afterAll(async () => {
      tokens.close();
      await llm.close();
    });

    beforeEach(async () => {
      llm.reset();
      fixture = await makeStore();
      store = fixture.store;
      metrics = createMetrics({ defaultMetrics: false });
      now = LATE_EVENING;
      const provider = createOpenAiCompatibleProvider({ baseUrl: llm.baseUrl, maxRetries: 1, initialBackoffMs: 1, timeoutMs: 1000 });
      services = {
        kv: store.kv,
        llm: createLlmService({ provider, store: store.llm, metrics, logger: silentLogger(), now: () => now }),
        spine: undefined,
        revisionsRoot: '/nonexistent',
        scratchDir: async () => '/nonexistent',
        hostEnv: {},
        logger: silentLogger(),
      };
    });

    afterEach(async () => {
      await fixture.cleanup();
    });

    const LLM: CapabilitiesSpec = { llm: { models: ['small', 'large'], maxTokens: 100 } };
    const BUDGET: CapabilitiesSpec = { llm: { models: ['small'], maxTokens: 100, tokensPerDay: 100 } };

    function grant(capabilities: CapabilitiesSpec, appId = 'shop', componentId = 'triage'): ExecutionGrant {
      return tokens.resolve(tokens.mint({ appId, componentId, requestId: `req-${appId}`, revision: 'abc1234', capabilities, configuration: {} }, 60_000));
    }

    async function generate(g: ExecutionGrant, args: Record<string, unknown>): Promise<any> {
      const result = await invokeTool({ services, metrics, logger: silentLogger() }, g, 'core.llm.generate', args, new AbortController().signal);
      return result.isError === true ? { error: result.structuredContent } : result.structuredContent;
    }

    async function metric(metricName: string, labels: Record<string, string>): Promise<number | undefined> {
      const found = (await metrics.registry.getMetricsAsJSON()).find((m) => m.name === metricName);
      const values = (found?.values ?? []) as Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>;
      return values.find((v) => Object.entries(labels).every(([key, wanted]) => v.labels[key] === wanted))?.value;
    }

    it('sends the contract to the provider the OpenAI way and answers its shape', async () => {
      llm.enqueue(reply.toolCalls([{ id: 'call_9', name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }], { usage: { prompt: 40, completion: 7 }, model: 'small-2026-01' }));
      const g = grant(LLM);
      const answer = await generate(g, {
        model: 'large',
        system: 'You triage tickets.',
        messages: [
          { role: 'user', content: 'Ticket: printer on fire' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'c0', name: 'core_log', arguments: '{}' }] },
          { role: 'tool', toolCallId: 'c0', content: '{"logged":true}' },
        ],
        maxTokens: 5000,
        temperature: 0.3,
        tools: [{ name: 'core_kv_get', description: 'Reads a key.', parameters: { type: 'object', properties: { key: { type: 'string' } } } }],
        responseSchema: { name: 'triage', schema: { type: 'object', required: ['priority'] } },
      });
      expect(answer).toEqual({
        text: null,
        toolCalls: [{ id: 'call_9', name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }],
        finishReason: 'tool_calls',
        model: 'small-2026-01',
        usage: { prompt: 40, completion: 7 },
        cached: false,
      });
      expect(llm.requests[0]!.body).toEqual({
        model: 'large',
        messages: [
          { role: 'system', content: 'You triage tickets.' },
          { role: 'user', content: 'Ticket: printer on fire' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c0', type: 'function', function: { name: 'core_log', arguments: '{}' } }] },
          { role: 'tool', tool_call_id: 'c0', content: '{"logged":true}' },
        ],
        // Clamped to the capability's maxTokens.
        max_tokens: 100,
        temperature: 0.3,
        tools: [{ type: 'function', function: { name: 'core_kv_get', description: 'Reads a key.', parameters: { type: 'object', properties: { key: { type: 'string' } } } } }],
        response_format: { type: 'json_schema', json_schema: { name: 'triage', schema: { type: 'object', required: ['priority'] }, strict: false } },
      });
      // /execute's metrics.mcp_calls carries the tokens, as before.
      expect(g.calls.summary()).toEqual([{ tool: 'core.llm.generate', count: 1, total_duration_ms: expect.any(Number), token_usage: { prompt: 40, completion: 7 } }]);
    });

    it('refuses what the capability does not allow, and bad requests naming the field, before any provider call', async () => {
      expect(await generate(grant({}), { prompt: 'x' })).toMatchObject({ error: { code: 'UHLP_CAPABILITY_DENIED', status: 403, details: { capability: 'llm', rule: 'absent' } } });
      expect(await generate(grant(LLM), { prompt: 'x', model: 'gpt-4o' })).toMatchObject({
        error: { code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'llm', rule: 'models', model: 'gpt-4o' } },
      });
      expect(await generate(grant(LLM), { prompt: 'x', tools: [{ name: 'core.kv.get', parameters: {} }] })).toMatchObject({
        error: { code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'tools.0.name' } },
      });
      expect(await generate(grant(LLM), { prompt: 'x', cacheTtlSeconds: 0 })).toMatchObject({ error: { code: 'UHLP_MCP_INVALID_ARGUMENTS', details: { field: 'cacheTtlSeconds' } } });
      expect(await generate(grant(LLM), { prompt: 'x', messages: [{ role: 'user', content: 'y' }] })).toMatchObject({
        error: { code: 'UHLP_LLM_INVALID_REQUEST', status: 400, details: { field: 'messages' } },
      });
      expect(await generate(grant(LLM), { messages: [{ role: 'tool', toolCallId: 'nope', content: '{}' }] })).toMatchObject({
        error: { code: 'UHLP_LLM_INVALID_REQUEST', details: { field: 'messages[0].toolCallId' } },
      });
      expect(await generate(grant(LLM), { messages: [{ role: 'robot', content: 'x' }] })).toMatchObject({
        error: { code: 'UHLP_LLM_INVALID_REQUEST', message: expect.stringContaining('system, user, assistant or tool'), details: { field: 'messages[0].role' } },
      });
      expect(await generate(grant(LLM), { messages: [{ role: 'user', content: 'x', toolCallId: 'c' }] })).toMatchObject({
        error: { code: 'UHLP_LLM_INVALID_REQUEST', details: { field: 'messages[0].toolCallId' } },
      });
      expect(llm.requests).toHaveLength(0);
    });

    it('charges the budget with the real usage and refuses past it with 429 and the seconds until the UTC day ends', async () => {
      const g = grant(BUDGET);
      llm.enqueue(reply.text('one', { usage: { prompt: 60, completion: 30 } }), reply.text('two', { usage: { prompt: 8, completion: 4 } }));
      expect(await generate(g, { prompt: 'first' })).toMatchObject({ text: 'one', usage: { prompt: 60, completion: 30 } });
      expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(90);
      // 90 of 100 spent: still admitted, and charged what it really took (past the budget).
      expect(await generate(g, { prompt: 'second' })).toMatchObject({ text: 'two' });
      expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(102);

      now += 30 * 60_000 + 500; // 23:30:00.500: 1799.5 s left in the day
      const refused = await generate(g, { prompt: 'third' });
      expect(refused).toEqual({
        error: {
          code: 'UHLP_LLM_BUDGET_EXCEEDED',
          status: 429,
          message: expect.stringContaining('100'),
          details: { tokensPerDay: 100, spent: 102, day: '2026-05-04', retryAfterSeconds: 1800 },
        },
      });
      expect(llm.requests).toHaveLength(2);
      // Another app has its own budget.
      llm.enqueue(reply.text('other app', { usage: { prompt: 1, completion: 1 } }));
      expect(await generate(grant(BUDGET, 'blog'), { prompt: 'x' })).toMatchObject({ text: 'other app' });
      // A new UTC day starts from zero.
      now = Date.parse('2026-05-05T00:00:01.000Z');
      llm.enqueue(reply.text('a new day', { usage: { prompt: 1, completion: 1 } }));
      expect(await generate(g, { prompt: 'fourth' })).toMatchObject({ text: 'a new day' });
      expect(await store.llm.getLlmTokens('shop', '2026-05-05')).toBe(2);
      expect(await metric('uhlp_llm_calls_total', { app: 'shop', component: 'triage', model: 'small', outcome: 'UHLP_LLM_BUDGET_EXCEEDED' })).toBe(1);
      // The refusal is the tool call's status in the evidence; no LLM call was made for it.
      const external = g.calls.snapshot().externalCalls;
      expect(external.filter((call) => call.kind === 'llm')).toHaveLength(3);
      expect(external.filter((call) => call.kind === 'mcp').map((call) => call.status)).toEqual(['ok', 'ok', 'UHLP_LLM_BUDGET_EXCEEDED', 'ok']);
    });

    it('answers a repeated temperature-0 request from the cache: no provider call, no tokens, no budget', async () => {
      const g = grant(BUDGET);
      const request = { prompt: 'classify: refund please', temperature: 0, cacheTtlSeconds: 600, responseSchema: { name: 'c', schema: { type: 'object' } } };
      llm.enqueue(reply.text('{"kind":"refund"}', { usage: { prompt: 20, completion: 5 }, model: 'small-v1' }));
      const first = await generate(g, request);
      expect(first).toEqual({ text: '{"kind":"refund"}', toolCalls: [], finishReason: 'stop', model: 'small-v1', usage: { prompt: 20, completion: 5 }, cached: false });
      const second = await generate(g, request);
      expect(second).toEqual({ ...first, usage: { prompt: 0, completion: 0 }, cached: true });
      expect(llm.requests).toHaveLength(1);
      expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(25);
      expect(await metric('uhlp_llm_cache_hits_total', { app: 'shop', component: 'triage' })).toBe(1);
      expect(await metric('uhlp_llm_tokens_total', { app: 'shop', component: 'triage', model: 'small', kind: 'prompt' })).toBe(20);
      expect(g.calls.summary()[0]).toMatchObject({ count: 2, token_usage: { prompt: 20, completion: 5 } });
      const [fresh, hit] = g.calls.snapshot().externalCalls.filter((call) => call.kind === 'llm');
      expect(hit).toMatchObject({ cached: true, tokens: { prompt: 0, completion: 0 }, answer_hash: fresh!.answer_hash, prompt_hash: fresh!.prompt_hash });

      // Even past the budget, a cached answer is served: it costs nothing.
      await store.llm.addLlmTokens('shop', '2026-05-04', 1000, 60_000);
      expect(await generate(g, request)).toMatchObject({ cached: true });
      // Anything else in the request is another entry; so is another app.
      llm.enqueue(reply.text('x'), reply.text('y'));
      expect(await generate(grant(LLM), { ...request, maxTokens: 50 })).toMatchObject({ cached: false });
      expect(await generate(grant(LLM, 'blog'), request)).toMatchObject({ cached: false });
      expect(llm.requests).toHaveLength(3);
    });

    it('does not cache above temperature 0, without a TTL, or without a temperature', async () => {
      llm.handle(() => reply.text('fresh'));
      const g = grant(LLM);
      for (const args of [
        { prompt: 'p', temperature: 0.7, cacheTtlSeconds: 600 },
        { prompt: 'p', temperature: 0 },
        { prompt: 'p', cacheTtlSeconds: 600 },
      ]) {
        expect(await generate(g, args)).toMatchObject({ cached: false });
        expect(await generate(g, args)).toMatchObject({ cached: false });
      }
      expect(llm.requests).toHaveLength(6);
      expect(await metric('uhlp_llm_cache_hits_total', { app: 'shop', component: 'triage' })).toBeUndefined();
    });

    it('caches tool-call answers too, and expires entries after their TTL', async () => {
      llm.enqueue(reply.toolCalls([{ id: 'call_1', name: 'lookup', arguments: '{}' }]), reply.text('later'));
      const g = grant(LLM);
      const request = { prompt: 'look it up', temperature: 0, cacheTtlSeconds: 1, tools: [{ name: 'lookup', parameters: {} }] };
      const first = await generate(g, request);
      expect(await generate(g, request)).toEqual({ ...first, usage: { prompt: 0, completion: 0 }, cached: true });
      await expect.poll(async () => (await generate(g, request)).cached, { timeout: 5000, interval: 100 }).toBe(false);
    });

    it('passes provider failures through as tool errors with their code and status, in metrics and evidence', async () => {
      const g = grant(LLM);
      llm.enqueue(reply.error(500), reply.error(503));
      expect(await generate(g, { prompt: 'x' })).toMatchObject({ error: { code: 'UHLP_LLM_UPSTREAM_ERROR', status: 502, details: { upstreamStatus: 503, attempts: 2 } } });
      llm.enqueue(reply.error(429, { retryAfter: 3600 }));
      expect(await generate(g, { prompt: 'x' })).toMatchObject({ error: { code: 'UHLP_LLM_RATE_LIMITED', status: 429 } });
      llm.enqueue(reply.hang());
      expect(await generate(g, { prompt: 'x' })).toMatchObject({ error: { code: 'UHLP_LLM_TIMEOUT', status: 504 } });
      llm.enqueue(reply.raw('{"choices": "no"}'));
      expect(await generate(g, { prompt: 'x' })).toMatchObject({ error: { code: 'UHLP_LLM_BAD_RESPONSE', status: 502 } });
      for (const outcome of ['UHLP_LLM_UPSTREAM_ERROR', 'UHLP_LLM_RATE_LIMITED', 'UHLP_LLM_TIMEOUT', 'UHLP_LLM_BAD_RESPONSE']) {
        expect(await metric('uhlp_llm_calls_total', { app: 'shop', component: 'triage', model: 'small', outcome })).toBe(1);
      }
      const llmCalls = g.calls.snapshot().externalCalls.filter((call) => call.kind === 'llm');
      expect(llmCalls.map((call) => call.status)).toEqual(['UHLP_LLM_UPSTREAM_ERROR', 'UHLP_LLM_RATE_LIMITED', 'UHLP_LLM_TIMEOUT', 'UHLP_LLM_BAD_RESPONSE']);
      expect(llmCalls.every((call) => call.answer_hash === undefined && call.prompt_hash === hashPayload([{ role: 'user', content: 'x' }]))).toBe(true);
      expect(await store.llm.getLlmTokens('shop', '2026-05-04')).toBe(0);
    });

    it('counts tokens, calls and durations with bounded labels, and records evidence with hashes of the messages and the answer', async () => {
      const g = grant(LLM, 'shop', 'summarize');
      llm.enqueue(reply.text('Short.', { usage: { prompt: 12, completion: 3 }, model: 'small-0613-with-a-version' }));
      await generate(g, { prompt: 'Summarize: a long text', system: 'Be short.' });
      expect(await metric('uhlp_llm_tokens_total', { app: 'shop', component: 'summarize', model: 'small', kind: 'prompt' })).toBe(12);
      expect(await metric('uhlp_llm_tokens_total', { app: 'shop', component: 'summarize', model: 'small', kind: 'completion' })).toBe(3);
      expect(await metric('uhlp_llm_calls_total', { app: 'shop', component: 'summarize', model: 'small', outcome: 'ok' })).toBe(1);
      const text = await metrics.registry.metrics();
      expect(text).toContain('uhlp_llm_call_duration_seconds_count{app="shop",component="summarize",model="small"} 1');
      // The model the server named (with its version) never becomes a label.
      expect(text).not.toContain('small-0613-with-a-version');

      const [llmCall, mcpCall] = g.calls.snapshot().externalCalls;
      expect(llmCall).toEqual({
        kind: 'llm',
        target: 'openai-compatible',
        status: 'ok',
        duration_ms: expect.any(Number),
        model: 'small',
        prompt_hash: hashPayload([
          { role: 'system', content: 'Be short.' },
          { role: 'user', content: 'Summarize: a long text' },
        ]),
        answer_hash: hashPayload({ text: 'Short.', toolCalls: [] }),
        tokens: { prompt: 12, completion: 3 },
        cached: false,
      });
      expect(mcpCall).toMatchObject({ kind: 'mcp', target: 'core.llm.generate', status: 'ok' });
    });

    it('writes the evidence of LLM calls (a call, a cache hit, a failure) into a ledger line that verifies', async () => {
      const g = grant(LLM, 'shop', 'summarize');
      llm.enqueue(reply.text('cached "answer" ✓', { usage: { prompt: 9, completion: 4 } }), reply.error(400, { message: 'bad' }));
      await generate(g, { prompt: 'p', temperature: 0, cacheTtlSeconds: 60 });
      await generate(g, { prompt: 'p', temperature: 0, cacheTtlSeconds: 60 });
      await generate(g, { prompt: 'refused upstream' });
      const record = g.calls.snapshot();
      expect(record.externalCalls.map((call) => [call.kind, call.status, call.cached])).toEqual([
        ['llm', 'ok', false],
        ['mcp', 'ok', undefined],
        ['llm', 'ok', true],
        ['mcp', 'ok', undefined],
        ['llm', 'UHLP_LLM_REQUEST_REJECTED', undefined],
        ['mcp', 'UHLP_LLM_REQUEST_REJECTED', undefined],
      ]);

      const dataDir = await mkdtemp(path.join(os.tmpdir(), 'uhlp-llm-ledger-'));
      try {
        const ledger = new FileLedger({ dataDir, tier: 'development' });
        const sessionId = createSessionIdGenerator()();
        await ledger.startSession(sessionId);
        await ledger.recordTurn({ sessionId, turnNumber: 1, status: 'ok', queryHash: hashPayload({ q: 1 }), resultHash: hashPayload('r'), externalCalls: record.externalCalls });
        const file = path.join(dataDir, 'planes', 'development', 'sessions', sessionId, 'ledger', 'evidence.jsonl');
        const line = JSON.parse((await readFile(file, 'utf8')).trim()) as { external_calls: unknown[] };
        expect(line.external_calls).toEqual(record.externalCalls);
        expect(line.external_calls[0]).toMatchObject({ kind: 'llm', model: 'small', tokens: { prompt: 9, completion: 4 }, prompt_hash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) });
        const report = await verifyLedgers(dataDir, { full: true });
        expect(report.problems).toEqual([]);
        expect(report.entriesChecked).toBe(2);
      } finally {
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });
}
