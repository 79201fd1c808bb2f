/**
 * A resumed workflow run passes its flow gate again, on the process driver with
 * Redis state shared by two cores: a run paused at an approval holds no slot;
 * its approval's answer, on the other core, waits while another run of the
 * same key holds the key's only slot, goes on once it is free, and then holds
 * it until the run ends, so that a new event of the key waits in turn. A
 * decision that waited past the gate's maxWaitMs is refused with 429 and not
 * recorded: the run stays paused, and a later answer resumes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';
import { sendToWorkflow } from './helpers/workflow-requests.js';
import { dropKeys } from './sources/redis-keys.js';

describe('a resumed workflow run takes its flow slot again (process driver, Redis state, two cores)', () => {
  let llm: OpenAiTestServer;
  let here: UhlpProcess;
  let there: UhlpProcess;
  const prefix = uniqueKeyPrefix('wf-resume-flow');
  /** Model calls whose prompt says `hold-<key>` wait until the test lets `<key>` go. */
  const gates = new Map<string, () => void>();

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle(async (request) => {
      const held = /hold-([a-z0-9]+)/.exec(lastPrompt(request));
      if (held) await new Promise<void>((resolve) => gates.set(held[1]!, resolve));
      return reply.text('answered');
    });
    const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
    // One definitions directory: both cores serve the same commit, the revision runs are pinned to.
    const definitions = copyFixture('workflow-resume-flow');
    here = await startUhlpDev(definitions, ['--driver', 'process'], 180_000, undefined, env);
    there = await startUhlpDev(definitions, ['--driver', 'process'], 180_000, undefined, env);
  }, 400_000);

  afterAll(async () => {
    for (const release of gates.values()) release();
    await Promise.all([here?.stop(), there?.stop()]);
    await llm?.close();
    await dropKeys(prefix);
  });

  const asked = (text: string): boolean => llm.requests.some((request) => lastPrompt(request).includes(text));

  async function release(key: string): Promise<void> {
    await waitFor(() => gates.has(key), { timeoutMs: 30_000, what: `the model call of hold-${key}` });
    gates.get(key)!();
    gates.delete(key);
  }

  /** Events of this core waiting at the route's concurrency gate now. */
  async function waiting(core: UhlpProcess, route: string): Promise<number> {
    const text = await (await fetch(`${core.url}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`uhlp_flow_waiting{app="tickets",route="http POST ${route}",kind="concurrency"}`));
    return Number(line?.split(' ').at(-1) ?? 0);
  }

  async function resume(core: UhlpProcess, runId: string): Promise<{ status: number; json: Record<string, any> }> {
    const response = await fetch(`${core.url}/_uhlp/runs/${runId}/resume`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ approved: true }) });
    return { status: response.status, json: (await response.json()) as Record<string, any> };
  }

  async function record(core: UhlpProcess, runId: string): Promise<Record<string, any>> {
    return (await (await fetch(`${core.url}/_uhlp/runs/${runId}`)).json()) as Record<string, any>;
  }

  it("waits for the key's slot on the other core before it goes on, and holds it until it ends", async () => {
    const paused = await sendToWorkflow(`${here.url}/tickets/tickets/T-1`, { first: 'a1', second: 'hold-a2' });
    expect(paused.status, JSON.stringify(paused.json)).toBe(202);
    const a = paused.runId!;

    // The paused run holds no slot: another run of the key starts, and holds it in its model call.
    const b = sendToWorkflow(`${here.url}/tickets/tickets/T-1`, { first: 'hold-b1', second: 'b2' });
    await waitFor(() => gates.has('b1'), { timeoutMs: 30_000, what: "the second run's model call" });

    // The approval's answer, on the other core, waits at the gate: the run does not go on beside the other one.
    const resumed = resume(there, a);
    await waitFor(async () => (await waiting(there, '/tickets/:ticket')) === 1, { timeoutMs: 10_000, what: 'the resumed run waiting at the gate' });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(asked('hold-a2')).toBe(false);
    expect((await record(here, a)).status).toBe('paused');

    // Once the other run pauses (at its own approval), the resumed run goes on.
    await release('b1');
    expect((await b).status).toBe(202);
    await waitFor(() => gates.has('a2'), { timeoutMs: 30_000, what: "the resumed run's model call" });

    // It holds the slot until it ends: a new event of the key waits meanwhile.
    const c = sendToWorkflow(`${here.url}/tickets/tickets/T-1`, { first: 'hold-c1', second: 'c2' });
    await waitFor(async () => (await waiting(here, '/tickets/:ticket')) === 1, { timeoutMs: 10_000, what: 'the new event waiting at the gate' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(asked('hold-c1')).toBe(false);
    await release('a2');
    const answer = await resumed;
    expect(answer.status, JSON.stringify(answer.json)).toBe(200);
    expect((await record(there, a)).status).toBe('completed');
    await release('c1');
    expect((await c).status).toBe(202);
  }, 120_000);

  it('refuses a decision that waited past maxWaitMs with 429 and leaves the run paused, to be answered later', async () => {
    const paused = await sendToWorkflow(`${here.url}/tickets/impatient/I-1`, { first: 'p1', second: 'p2' });
    expect(paused.status, JSON.stringify(paused.json)).toBe(202);
    const p = paused.runId!;
    const holding = sendToWorkflow(`${there.url}/tickets/impatient/I-1`, { first: 'hold-q1', second: 'q2' });
    await waitFor(() => gates.has('q1'), { timeoutMs: 30_000, what: "the holding run's model call" });

    const refused = await resume(there, p);
    expect(refused.status, JSON.stringify(refused.json)).toBe(429);
    expect(refused.json).toMatchObject({ code: 'UHLP_FLOW_WAIT_TIMEOUT', details: { route: 'http POST /impatient/:ticket', kind: 'concurrency' } });
    const still = await record(here, p);
    expect(still.status).toBe('paused');
    expect(still.approvals ?? {}).toEqual({});
    expect(asked('Second: p2')).toBe(false);

    await release('q1');
    expect((await holding).status).toBe(202);
    const answered = await resume(here, p);
    expect(answered.status, JSON.stringify(answered.json)).toBe(200);
    expect(asked('Second: p2')).toBe(true);
  }, 120_000);
});
