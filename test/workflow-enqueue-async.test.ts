/**
 * `enqueue` with an async answer, on the process driver with Redis state: a
 * request of a session whose run is active that says `Prefer: respond-async`
 * is answered 202 at once with its run's location (`status: queued`, its
 * place in the queue), which it polls: queued while it waits, then the run
 * once it started, and its result once it ended. Without the preference the
 * request is held until its run ended, as before.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';
import { sendToWorkflow } from './helpers/workflow-requests.js';
import { dropKeys } from './sources/redis-keys.js';

describe('enqueue answering 202 to a client that prefers an async answer (process driver, Redis state)', () => {
  let llm: OpenAiTestServer;
  let core: UhlpProcess;
  const prefix = uniqueKeyPrefix('wf-enqueue-async');
  const gates = new Map<string, () => void>();

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle(async (request) => {
      const held = /hold-([a-z0-9]+)/.exec(lastPrompt(request));
      if (held) await new Promise<void>((resolve) => gates.set(held[1]!, resolve));
      return reply.text(held ? `answered ${held[1]}` : 'answered');
    });
    core = await startUhlpDev(copyFixture('workflow-texting'), ['--driver', 'process'], 180_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix });
  }, 250_000);

  afterAll(async () => {
    for (const release of gates.values()) release();
    await core?.stop();
    await llm?.close();
    await dropKeys(prefix);
  });

  const view = async (location: string): Promise<{ status: number; json: Record<string, any> }> => {
    const response = await fetch(`${core.url}${location}`);
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  };

  it('answers 202 with the run to poll, which is queued, then runs, then has its result', async () => {
    const opened = await sendToWorkflow(`${core.url}/texting/enqueue`, { text: 'hello' }, 'new');
    expect(opened.status).toBe(200);
    const session = opened.sessionId!;
    const active = sendToWorkflow(`${core.url}/texting/enqueue`, { text: 'hold-x1' }, session);
    await waitFor(() => gates.has('x1'), { timeoutMs: 30_000, what: "the active run's model call" });

    const started = performance.now();
    const response = await fetch(`${core.url}/texting/enqueue`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-uhlp-session-id': session, prefer: 'wait=5, respond-async' },
      body: JSON.stringify({ text: 'hold-x2' }),
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(response.status).toBe(202);
    expect(response.headers.get('preference-applied')).toBe('respond-async');
    const location = response.headers.get('location')!;
    const body = (await response.json()) as Record<string, any>;
    expect(body).toMatchObject({ status: 'queued', sessionId: session, position: 0 });
    expect(location).toBe(`/_uhlp/runs/${body['runId']}`);
    expect(response.headers.get('x-uhlp-run-id')).toBe(body['runId']);

    expect((await view(location)).json).toMatchObject({ runId: body['runId'], status: 'queued', sessionId: session });
    // A run id nobody queued is still unknown.
    expect((await view('/_uhlp/runs/RUN-20260101T000000000Z-00000000000000000000')).status).toBe(404);

    gates.get('x1')!();
    gates.delete('x1');
    expect((await active).status).toBe(200);
    await waitFor(() => gates.has('x2'), { timeoutMs: 30_000, what: 'the queued run to start' });
    expect((await view(location)).json).toMatchObject({ id: body['runId'], status: 'running' });
    gates.get('x2')!();
    gates.delete('x2');
    await waitFor(async () => (await view(location)).json['status'] === 'completed', { timeoutMs: 30_000, what: 'the queued run to end' });
    expect(JSON.stringify((await view(location)).json['result'])).toContain('answered x2');

    // Without the preference, a request that finds the slot free runs and answers as before.
    const plain = await sendToWorkflow(`${core.url}/texting/enqueue`, { text: 'plain' }, session);
    expect(plain.status).toBe(200);
  }, 120_000);
});
