/**
 * Cancel and double texting on the Docker driver with Redis state: a run cut
 * mid-model-call (its llm-orchestrator container removed, the provider's
 * request closed), and a session's second request with `doubleTexting:
 * interrupt` cutting the active run's container and going on in a new run.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from '../helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from '../helpers/redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';
import { sendToWorkflow, startAtModelCall, type RunAtModelCall } from '../helpers/workflow-requests.js';
import { docker, requireDocker } from './docker-env.js';

/** The bound a cancel is held to: from its request to the run ended and its model call closed. */
const CANCEL_BOUND_MS = 2_000;

describe('cancel and double texting on the Docker driver (Redis state)', () => {
  let llm: OpenAiTestServer;
  let core: UhlpProcess;
  let redis: Redis;
  const prefix = uniqueKeyPrefix('wf-cancel-docker');

  beforeAll(async () => {
    await requireDocker();
    llm = await startOpenAiTestServer();
    llm.handle((request) => (lastPrompt(request).includes('hang') ? reply.hang() : reply.text('answered')));
    const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
    core = await startUhlpDev(copyFixture('workflow-texting'), ['--driver', 'docker'], 180_000, undefined, env);
    redis = new Redis(TEST_REDIS_URL);
  }, 200_000);

  afterAll(async () => {
    redis?.disconnect();
    await core?.stop();
    await llm?.close();
  });

  async function startHanging(path: string, text: string, session?: string): Promise<RunAtModelCall & { containers: string[] }> {
    const run = await startAtModelCall({ redis, prefix, llm, url: `${core.url}/texting/${path}`, text, session, timeoutMs: 60_000 });
    const containers = (await docker.listContainers({ filters: JSON.stringify({ label: ['uhlp.dev/app=texting'] }) })).map((info) => info.Id);
    return { ...run, containers };
  }

  it("cuts a run mid-model-call: the provider sees the request closed, the run's container is removed, the run ends cancelled", async () => {
    const run = await startHanging('reject', 'hang-d1');
    const started = performance.now();
    const cancelled = await sendToWorkflow(`${core.url}/_uhlp/runs/${run.runId}/cancel`, { by: 'ada' });
    const elapsed = performance.now() - started;
    expect(cancelled.status).toBe(200);
    expect(cancelled.json).toMatchObject({ id: run.runId, status: 'cancelled', cancellation: { by: 'ada', via: 'http' } });
    expect(elapsed).toBeLessThan(CANCEL_BOUND_MS);
    await waitFor(() => run.call()?.disconnected === true, { timeoutMs: CANCEL_BOUND_MS, what: 'the provider to see the model call closed' });
    expect((await run.answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { by: 'ada' } });
    // The execution's container was destroyed with the cut (warm ones for the pool are new).
    await waitFor(
      async () => {
        const now = new Set((await docker.listContainers({ all: true, filters: JSON.stringify({ label: ['uhlp.dev/app=texting'] }) })).map((info) => info.Id));
        return run.containers.some((id) => !now.has(id));
      },
      { timeoutMs: 10_000, what: "the cut execution's container removed" },
    );
    console.log(`cancel on the Docker driver: ${elapsed.toFixed(0)} ms to the run cancelled`);
  }, 120_000);

  it('interrupt: a second request of the session cuts the active run in its container and answers from a new run with the new input', async () => {
    const opened = await sendToWorkflow(`${core.url}/texting/interrupt`, { text: 'hello' }, 'new');
    expect(opened.status, JSON.stringify(opened.json)).toBe(200);
    const session = opened.sessionId!;
    const active = await startHanging('interrupt', 'hang-d2', session);
    const answered = await sendToWorkflow(`${core.url}/texting/interrupt`, { text: 'again' }, session);
    expect(answered.status, JSON.stringify(answered.json)).toBe(200);
    expect(active.call()?.disconnected).toBe(true);
    expect((await active.answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { via: 'interrupt' } });
    const run = (await (await fetch(`${core.url}/_uhlp/runs/${answered.runId}`)).json()) as { blackboard: Record<string, unknown> };
    expect(run.blackboard).toMatchObject({ input: { text: 'again' }, interrupted: { runId: active.runId } });
  }, 120_000);
});
