/**
 * The core's LLM layer through `uhlp dev` against the OpenAI-compatible test
 * server, configured only by environment variables: a JIT script calls
 * core.llm.generate in a real turn (streaming on the wire), and the turn's
 * ledger evidence, the metrics, the answer cache, the daily budget (429 for
 * the request) and the LLM timeout (504) come out the other end.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type OpenAiTestServer, reply, startOpenAiTestServer } from '../helpers/openai-test-server.js';
import { startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

const APP = `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: brainy }
spec:
  pools: [{ name: main, minWarm: 0, maxSize: 1 }]
  components: [{ id: ask, handler: JIT, pool: main, jit: { script: scripts/ask.mjs, function: ask } }]
  routes: [{ http: { method: POST, path: /ask }, component: ask }]
  capabilities:
    llm: { models: [small], maxTokens: 64, tokensPerDay: 100 }
`;

const SCRIPT = `export async function ask(event, ctx) {
  const input = JSON.parse(event.httpDetails.body || '{}');
  return ctx.tools.call('core.llm.generate', {
    prompt: input.prompt,
    temperature: 0,
    cacheTtlSeconds: 60,
    tools: [{ name: 'core_kv_get', parameters: { type: 'object' } }],
  });
}
`;

let llm: OpenAiTestServer;
let core: UhlpProcess;

beforeAll(async () => {
  llm = await startOpenAiTestServer();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'uhlp-llm-core-'));
  mkdirSync(path.join(dir, 'apps', 'brainy', 'scripts'), { recursive: true });
  writeFileSync(path.join(dir, 'apps', 'brainy', 'app.yaml'), APP);
  writeFileSync(path.join(dir, 'apps', 'brainy', 'scripts', 'ask.mjs'), SCRIPT);
  core = await startUhlpDev(dir, [], 30_000, undefined, {
    UHLP_LLM_BASE_URL: llm.baseUrl,
    UHLP_LLM_STREAM: 'true',
    UHLP_LLM_TIMEOUT_MS: '500',
    UHLP_LLM_MAX_RETRIES: '0',
  });
});

afterAll(async () => {
  await core?.stop();
  await llm?.close();
});

async function ask(prompt: string): Promise<{ status: number; body: any; sessionId: string | null }> {
  const response = await fetch(`${core.url}/brainy/ask`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-uhlp-session': 'new' },
    body: JSON.stringify({ prompt }),
  });
  return { status: response.status, body: await response.json(), sessionId: response.headers.get('x-uhlp-session-id') };
}

describe('core.llm.generate in a core pointed at an OpenAI-compatible server', () => {
  it('streams the call, answers the contract, and writes the LLM call into the turn evidence', async () => {
    llm.enqueue(reply.toolCalls([{ id: 'call_x', name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }], { usage: { prompt: 30, completion: 10 } }));
    const answer = await ask('look it up');
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({
      text: null,
      toolCalls: [{ id: 'call_x', name: 'core_kv_get', arguments: '{"key":"ctr:a"}' }],
      finishReason: 'tool_calls',
      model: 'small',
      usage: { prompt: 30, completion: 10 },
      cached: false,
    });
    expect(llm.requests[0]!.body).toMatchObject({
      model: 'small',
      stream: true,
      stream_options: { include_usage: true },
      temperature: 0,
      max_tokens: 64,
      tools: [{ type: 'function', function: { name: 'core_kv_get', parameters: { type: 'object' } } }],
    });

    const evidenceFile = path.join(core.dataDir, 'planes', 'development', 'sessions', answer.sessionId!, 'ledger', 'evidence.jsonl');
    await waitFor(() => existsSync(evidenceFile) && readFileSync(evidenceFile, 'utf8').includes('L-EVIDENCE'), { what: 'the evidence entry' });
    const entry = JSON.parse(readFileSync(evidenceFile, 'utf8').trim().split('\n').at(-1)!);
    expect(entry.external_calls).toEqual([
      {
        kind: 'llm',
        target: 'openai-compatible',
        status: 'ok',
        duration_ms: expect.any(Number),
        model: 'small',
        prompt_hash: expect.stringMatching(/^sha256:/),
        answer_hash: expect.stringMatching(/^sha256:/),
        tokens: { prompt: 30, completion: 10 },
        cached: false,
      },
      { kind: 'mcp', target: 'core.llm.generate', status: 'ok', duration_ms: expect.any(Number) },
    ]);
  });

  it('answers the same request from the cache, and counts it in the metrics', async () => {
    const again = await ask('look it up');
    expect(again.body).toMatchObject({ cached: true, usage: { prompt: 0, completion: 0 } });
    expect(llm.requests).toHaveLength(1);
    const metrics = await (await fetch(`${core.url}/metrics`)).text();
    expect(metrics).toContain('uhlp_llm_cache_hits_total{app="brainy",component="ask"} 1');
    expect(metrics).toContain('uhlp_llm_tokens_total{app="brainy",component="ask",model="small",kind="prompt"} 30');
    expect(metrics).toContain('uhlp_llm_calls_total{app="brainy",component="ask",model="small",outcome="ok"} 1');
  });

  it('gives the request a 504 when the model does not answer in time', async () => {
    llm.enqueue(reply.hang());
    const timedOut = await ask('never answered');
    expect(timedOut.status).toBe(504);
    expect(timedOut.body).toMatchObject({ code: 'UHLP_LLM_TIMEOUT' });
  });

  it('refuses the request with 429 once the app has spent its tokens of the day', async () => {
    llm.enqueue(reply.text('spent', { usage: { prompt: 50, completion: 20 } }));
    expect((await ask('spend the rest')).status).toBe(200);
    const refused = await ask('one more');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: 'UHLP_LLM_BUDGET_EXCEEDED', details: { tokensPerDay: 100, spent: 110 } });
    expect(refused.body.details.retryAfterSeconds).toBeGreaterThan(0);
    expect(refused.body.details.retryAfterSeconds).toBeLessThanOrEqual(86_400);
    expect(llm.requests).toHaveLength(3);
  });
});
