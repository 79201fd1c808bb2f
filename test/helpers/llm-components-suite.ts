/**
 * LLM components end to end, on each driver: `uhlp dev` pointed at a real
 * OpenAI-compatible HTTP server (openai-test-server.ts), the llm-orchestrator in
 * its sandbox, templates read through MCP, `core.llm.generate` through the
 * core's provider. What the server is sent, and what the client gets back.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

export interface LlmComponentsSuiteOptions {
  readonly driver: 'process' | 'docker';
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}

export function describeLlmComponents(options: LlmComponentsSuiteOptions): void {
  describe(`LLM components on the ${options.driver} driver, against an OpenAI-compatible server`, () => {
    let core: UhlpProcess;
    let llm: OpenAiTestServer;

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      core = await startUhlpDev(copyFixture('llm-e2e'), ['--driver', options.driver], options.startTimeoutMs ?? 60_000, undefined, {
        UHLP_LLM_BASE_URL: llm.baseUrl,
        // Longer than the pool's timeout: a model that never answers costs the sandbox its life.
        UHLP_LLM_TIMEOUT_MS: '20000',
        UHLP_LLM_MAX_RETRIES: '2',
        UHLP_LLM_MODELS: 'large=acme-large-2',
      });
    }, (options.startTimeoutMs ?? 60_000) + 30_000);

    afterAll(async () => {
      await core?.stop();
      await llm?.close();
    });

    beforeEach(() => llm.reset());

    async function call(pathname: string, init: RequestInit = {}): Promise<{ status: number; json: any; headers: Headers }> {
      const response = await fetch(`${core.url}${pathname}`, init);
      const text = await response.text();
      let json: unknown = text;
      try {
        json = JSON.parse(text);
      } catch {
        // Kept as text: an httpResponse body.
      }
      return { status: response.status, json, headers: response.headers };
    }
    const post = (body: unknown, headers: Record<string, string> = {}): RequestInit => ({
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });

    it('renders every template variable and an include, and sends the mapped model', async () => {
      llm.enqueue(reply.text('rendered'));
      const answer = await call('/desk/render/42?lang=fr', post({ title: 'Broken login' }, { 'x-user': 'ada', 'X-UHLP-Session': 'new' }));
      expect(answer).toMatchObject({ status: 200, json: { text: 'rendered' } });
      const sid = answer.headers.get('x-uhlp-session-id');
      const sent = llm.requests[0]!.body;
      expect(sent.model).toBe('acme-large-2');
      expect(sent.messages).toEqual([
        { role: 'system', content: 'You answer for Acme.' },
        {
          role: 'user',
          content: `params=42 query=fr header=ada body=Broken login method=POST config=Acme session=${sid} turn=1 app=desk component=render`,
        },
      ]);
    });

    it('validates the answer against the schema, re-asks once with the errors, then gives up with 502', async () => {
      llm.enqueue(reply.text('it is a billing problem'), reply.text('```json\n{"category":"billing","urgency":"high"}\n```'));
      const fixed = await call('/desk/triage', post({ text: 'double charge' }));
      expect(fixed).toMatchObject({ status: 200, json: { category: 'billing', urgency: 'high' } });
      expect(llm.requests).toHaveLength(2);
      expect(llm.requests[0]!.body.response_format).toMatchObject({ type: 'json_schema' });
      const feedback = llm.requests[1]!.body.messages!;
      expect(feedback.at(-2)).toMatchObject({ role: 'assistant', content: 'it is a billing problem' });
      expect(String(feedback.at(-1)!.content)).toMatch(/did not|invalid|JSON/i);

      llm.enqueue(reply.text('{"category":"spam"}'), reply.text('{"category":"spam"}'));
      const failed = await call('/desk/triage', post({ text: 'buy now' }));
      expect(failed.status).toBe(502);
      expect(failed.json).toMatchObject({ code: 'UHLP_LLM_OUTPUT_INVALID' });
      expect(JSON.stringify(failed.json.details)).toMatch(/category|urgency/);
    });

    it('runs tool calls through MCP with the capabilities, a refusal included, and answers', async () => {
      llm.enqueue(
        reply.toolCalls([{ name: 'core_kv_get', arguments: { key: 'secret:codes' } }]),
        reply.toolCalls([{ name: 'core_kv_get', arguments: { key: 't:ada' } }]),
        reply.text('No code on file for ada.'),
      );
      const answer = await call('/desk/lookup?user=ada', { headers: { 'X-UHLP-Session': 'new' } });
      expect(answer).toMatchObject({ status: 200, json: { text: 'No code on file for ada.' } });
      expect(llm.requests).toHaveLength(3);
      expect(llm.requests[0]!.body.tools).toEqual([expect.objectContaining({ type: 'function', function: expect.objectContaining({ name: 'core_kv_get' }) })]);
      const toolResults = llm.requests[2]!.body.messages!.filter((m) => m.role === 'tool').map((m) => String(m.content));
      expect(toolResults[0]).toMatch(/UHLP_CAPABILITY_DENIED/);
      expect(toolResults[1]).toMatch(/"value":null/);
    });

    it('gives a tool call whose name is no function name back to the model as its result, and answers', async () => {
      llm.enqueue(reply.toolCalls([{ name: 'core.kv.get', arguments: { key: 't:ada' } }]), reply.text('Called it by its function name next time.'));
      const answer = await call('/desk/lookup?user=ada');
      expect(answer).toMatchObject({ status: 200, json: { text: 'Called it by its function name next time.' } });
      expect(llm.requests).toHaveLength(2);
      const sent = llm.requests[1]!.body.messages!;
      const made = sent.find((m) => m.role === 'assistant') as { tool_calls: Array<{ id: string; function: { name: string } }> };
      // Sent back under a function name (as OpenAI takes them), with the error as the call's result.
      expect(made.tool_calls[0]!.function.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
      const result = sent.find((m) => m.role === 'tool')!;
      expect(result.tool_call_id).toBe(made.tool_calls[0]!.id);
      expect(JSON.parse(String(result.content))).toMatchObject({ error: { code: 'UHLP_MCP_TOOL_NOT_FOUND', message: expect.stringContaining('"core_kv_get"') } });
    });

    it('proxies an httpResponse answer', async () => {
      llm.enqueue(reply.text(JSON.stringify({ statusCode: 201, headers: { 'content-type': 'text/plain', 'x-made-by': 'model' }, body: 'Hello, Ada' })));
      const page = await call('/desk/page?name=Ada');
      expect(page.status).toBe(201);
      expect(page.json).toBe('Hello, Ada');
      expect(page.headers.get('x-made-by')).toBe('model');
    });

    it("drops the x-uhlp-* headers of a model's httpResponse: only the core sets them", async () => {
      llm.enqueue(
        reply.text(
          JSON.stringify({
            statusCode: 200,
            headers: { 'content-type': 'text/plain', 'X-UHLP-Session-ID': 'SES-forged', 'x-uhlp-run-id': 'RUN-forged', 'x-uhlp-turn': '7', 'x-made-by': 'model' },
            body: 'Hello, Ada',
          }),
        ),
      );
      // A turn of the app's ambient session: the core names no session, and neither may the model.
      const page = await call('/desk/page?name=Ada');
      expect(page.status).toBe(200);
      expect(page.headers.get('x-made-by')).toBe('model');
      for (const name of ['x-uhlp-session-id', 'x-uhlp-run-id', 'x-uhlp-turn']) expect(page.headers.get(name), name).toBeNull();
    });

    it('answers a repeated request from the cache at temperature 0, without asking the model', async () => {
      llm.enqueue(reply.text('{"category":"bug","urgency":"normal"}'));
      const first = await call('/desk/cached', post({ text: 'crash on start' }));
      const second = await call('/desk/cached', post({ text: 'crash on start' }));
      expect(first).toMatchObject({ status: 200, json: { category: 'bug', urgency: 'normal' } });
      expect(second.json).toEqual(first.json);
      expect(llm.requests).toHaveLength(1);
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      expect(metrics).toMatch(/uhlp_llm_cache_hits_total\{app="desk",component="cached"\} 1/);
    });

    it("retries the provider's 429 and 5xx, honouring Retry-After", async () => {
      llm.enqueue(reply.error(429, { retryAfter: 1 }), reply.error(503), reply.text('third time lucky'));
      const started = Date.now();
      const answer = await call('/desk/render/1?lang=en', post({ title: 'x' }));
      expect(answer).toMatchObject({ status: 200, json: { text: 'third time lucky' } });
      expect(llm.requests).toHaveLength(3);
      expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    });

    it('answers 429 with Retry-After once the app has spent its tokens of the day', async () => {
      llm.enqueue(reply.text('a long enough answer', { usage: { prompt: 30, completion: 30 } }));
      expect((await call('/tight/ask')).status).toBe(200);
      const refused = await call('/tight/ask');
      expect(refused.status).toBe(429);
      expect(refused.json).toMatchObject({ code: 'UHLP_LLM_BUDGET_EXCEEDED' });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(0);
      expect(retryAfter).toBeLessThanOrEqual(86_400);
      expect(llm.requests).toHaveLength(1);
    });

    it('gives 504 for a model that never answers, replaces the sandbox, and keeps serving', async () => {
      llm.enqueue(reply.hang());
      const hung = await call('/desk/render/9?lang=en', post({ title: 'x' }));
      expect(hung.status).toBe(504);
      expect(hung.json.code).toBe('UHLP_SANDBOX_TIMEOUT');
      const destroyed = async (): Promise<boolean> =>
        /uhlp_sandbox_destroyed_total\{app="desk",pool="brain",cause="timeout"\} 1\b/.test(await (await fetch(`${core.url}/metrics`)).text());
      await waitFor(destroyed, { timeoutMs: 20_000, what: 'the timed-out sandbox destroyed' });
      llm.enqueue(reply.text('back'));
      expect(await call('/desk/render/10?lang=en', post({ title: 'x' }))).toMatchObject({ status: 200, json: { text: 'back' } });
    });
  });
}
