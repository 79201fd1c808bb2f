/**
 * Double texting on the driver given with Redis state, two cores sharing it:
 * what a request continuing a stored session does while a run of that session
 * is active, for each `doubleTexting` mode of a workflow component — reject
 * (409 naming the active run), enqueue (waits in order across cores, starts
 * when the active run ends), interrupt (the active run's model call is cut and
 * the new run goes on with its blackboard and the new input) and rollback (the
 * active run is cancelled and a fresh run starts). And a cancel that cuts a
 * JIT step core.component.invoke runs in its own sandbox.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';
import { sendToWorkflow, startAtModelCall, type RunAtModelCall } from './workflow-requests.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

export type DoubleTextingSuiteOptions = DriverSuiteOptions;

export function describeDoubleTexting(options: DoubleTextingSuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  describe(`double texting on session-bound workflow routes (${options.driver} driver, Redis state, two cores)`, () => {
    let llm: OpenAiTestServer;
    let here: UhlpProcess;
    let there: UhlpProcess;
    let redis: Redis;
    const prefix = uniqueKeyPrefix('wf-texting');
    /** Model calls whose prompt says `hold-<key>` wait until the test lets `<key>` go. */
    const gates = new Map<string, () => void>();

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      llm.handle(async (request) => {
        const text = lastPrompt(request);
        const held = /hold-([a-z0-9]+)/.exec(text);
        if (held) {
          await new Promise<void>((resolve) => gates.set(held[1]!, resolve));
          return reply.text(`answered ${held[1]}`);
        }
        if (text.includes('hang')) return reply.hang();
        return reply.text('answered');
      });
      const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
      here = await startUhlpDev(copyFixture('workflow-texting'), ['--driver', options.driver], startTimeoutMs, undefined, env);
      there = await startUhlpDev(copyFixture('workflow-texting'), ['--driver', options.driver], startTimeoutMs, undefined, env);
      redis = new Redis(TEST_REDIS_URL);
    }, 2 * startTimeoutMs + 10_000);

    afterAll(async () => {
      for (const release of gates.values()) release();
      redis?.disconnect();
      await Promise.all([here?.stop(), there?.stop()]);
      await llm?.close();
    });

    /** A stored session, opened by a run that ends at once. */
    async function openSession(core: UhlpProcess, path: string): Promise<string> {
      const opened = await sendToWorkflow(`${core.url}/texting/${path}`, { text: 'hello' }, 'new');
      // A refusal says what the core's pools held at the time.
      const pools = opened.status === 200 ? '' : (await (await fetch(`${core.url}/metrics`)).text()).split('\n').filter((line) => line.startsWith('uhlp_pool_sandboxes{app="texting"')).join('; ');
      const active = opened.status === 200 ? [] : await redis.zrange(`${prefix}runs:active`, '0', '-1');
      expect(opened.status, `${JSON.stringify(opened.json)} ${pools}; active runs: ${active.join(', ')}`).toBe(200);
      return opened.sessionId!;
    }

    /** Sends `text` in the session and waits until its run's model call is in flight. */
    function startActive(core: UhlpProcess, path: string, session: string, text: string): Promise<RunAtModelCall> {
      return startAtModelCall({ redis, prefix, llm, url: `${core.url}/texting/${path}`, text, session });
    }

    async function release(key: string): Promise<void> {
      await waitFor(() => gates.has(key), { timeoutMs: 30_000, what: `the model call of hold-${key}` });
      gates.get(key)!();
      gates.delete(key);
    }

    async function record(core: UhlpProcess, runId: string): Promise<Record<string, any>> {
      return (await (await fetch(`${core.url}/_uhlp/runs/${runId}`)).json()) as Record<string, any>;
    }

    const queued = (session: string): Promise<number> => redis.zcard(`${prefix}session-queue:${session}`);

    it('reject: a second request of the session, on another core, gets 409 with the active run; once it ended the next one runs', async () => {
      const session = await openSession(here, 'reject');
      const active = await startActive(here, 'reject', session, 'hold-r1');
      const refused = await sendToWorkflow(`${there.url}/texting/reject`, { text: 'second' }, session);
      expect(refused.status).toBe(409);
      expect(refused.json).toMatchObject({ code: 'UHLP_WORKFLOW_SESSION_BUSY', details: { sessionId: session, runId: active.runId, status: 'running', doubleTexting: 'reject' } });
      // Another session is not held up by it.
      expect((await sendToWorkflow(`${there.url}/texting/reject`, { text: 'elsewhere' }, await openSession(there, 'reject'))).status).toBe(200);
      await release('r1');
      expect((await active.answer).status).toBe(200);
      const next = await sendToWorkflow(`${there.url}/texting/reject`, { text: 'third' }, session);
      expect(next.status, JSON.stringify(next.json)).toBe(200);
      // A session that does not exist is refused before anything waits or is cancelled.
      const unknown = await sendToWorkflow(`${here.url}/texting/reject`, { text: 'x' }, 'SES-00000000000000000000000000');
      expect(unknown.json).toMatchObject({ code: 'UHLP_SESSION_NOT_FOUND' });
    }, 120_000);

    it('enqueue: requests wait for the active run in arrival order across both cores, each starting when the one before ended', async () => {
      const session = await openSession(here, 'enqueue');
      const first = await startActive(here, 'enqueue', session, 'hold-e1');
      const second = sendToWorkflow(`${there.url}/texting/enqueue`, { text: 'hold-e2' }, session);
      await waitFor(async () => (await queued(session)) === 1, { timeoutMs: 10_000, what: 'the second request queued' });
      const third = sendToWorkflow(`${here.url}/texting/enqueue`, { text: 'hold-e3' }, session);
      await waitFor(async () => (await queued(session)) === 2, { timeoutMs: 10_000, what: 'the third request queued' });
      const started = (key: string): boolean => llm.requests.some((request) => lastPrompt(request).includes(`hold-${key}`));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect([started('e2'), started('e3')]).toEqual([false, false]);

      await release('e1');
      expect((await first.answer).status).toBe(200);
      await waitFor(() => started('e2'), { timeoutMs: 10_000, what: 'the second run to start' });
      expect(started('e3')).toBe(false);
      await release('e2');
      const secondAnswer = await second;
      expect(secondAnswer.status, JSON.stringify(secondAnswer.json)).toBe(200);
      expect(JSON.stringify(secondAnswer.json)).toContain('answered e2');
      await waitFor(() => started('e3'), { timeoutMs: 10_000, what: 'the third run to start' });
      await release('e3');
      const thirdAnswer = await third;
      expect(thirdAnswer.status).toBe(200);
      expect(JSON.stringify(thirdAnswer.json)).toContain('answered e3');
      expect(await queued(session)).toBe(0);
    }, 120_000);

    it("interrupt: the active run's model call is cut through the other core, and the new run goes on with its blackboard and the new input", async () => {
      const session = await openSession(here, 'interrupt');
      const active = await startActive(here, 'interrupt', session, 'hang-i1');
      const next = sendToWorkflow(`${there.url}/texting/interrupt`, { text: 'hold-i2' }, session);
      await waitFor(() => active.call()?.disconnected === true, { timeoutMs: 5_000, what: "the interrupted run's model call closed" });
      const interrupted = await active.answer;
      expect(interrupted.status).toBe(409);
      expect(interrupted.json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { via: 'interrupt', by: `session ${session}` } });
      await release('i2');
      const answered = await next;
      expect(answered.status, JSON.stringify(answered.json)).toBe(200);
      expect(JSON.stringify(answered.json)).toContain('answered i2');
      const run = await record(there, answered.runId!);
      expect(run['blackboard']).toMatchObject({ input: { text: 'hold-i2' }, interrupted: { runId: active.runId } });
      expect(await record(here, active.runId)).toMatchObject({ status: 'cancelled', cancellation: { via: 'interrupt' } });
    }, 120_000);

    it("a cancel cuts a JIT step that core.component.invoke runs in its own sandbox, not only the run's own execution", async () => {
      const metric = async (pattern: RegExp): Promise<number> => {
        const text = await (await fetch(`${here.url}/metrics`)).text();
        return Number(pattern.exec(text)?.[1] ?? 0);
      };
      const busy = /uhlp_pool_sandboxes\{app="texting",pool="steps",state="busy"\} (\d+)/;
      const destroyed = /uhlp_sandbox_destroyed_total\{app="texting",pool="steps",cause="[^"]+"\} (\d+)/;
      const destroyedBefore = await metric(destroyed);
      const before = new Set(await redis.zrange(`${prefix}runs:active`, '0', '-1'));
      const answer = sendToWorkflow(`${here.url}/texting/stepping`, { text: 'nap' }, 'new');
      await waitFor(async () => (await metric(busy)) === 1, { timeoutMs: 30_000, what: 'the step running in its sandbox' });
      const runId = (await redis.zrange(`${prefix}runs:active`, '0', '-1')).find((id) => !before.has(id))!;
      const started = performance.now();
      const cancelled = await fetch(`${there.url}/_uhlp/runs/${runId}/cancel`, { method: 'POST' });
      expect(cancelled.status).toBe(200);
      // The step's sandbox is destroyed with the cut, long before the step's 25 s were up.
      await waitFor(async () => (await metric(destroyed)) > destroyedBefore && (await metric(busy)) === 0, { timeoutMs: 5_000, what: "the step's sandbox cut" });
      console.log(`cancel to the JIT step's sandbox destroyed on the ${options.driver} driver: ${(performance.now() - started).toFixed(0)} ms`);
      expect((await answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED' });
    }, 120_000);

    it('rollback: the active run is cancelled and a fresh run answers the new input, carrying nothing of it', async () => {
      const session = await openSession(here, 'rollback');
      const active = await startActive(here, 'rollback', session, 'hang-b1');
      const answered = await sendToWorkflow(`${there.url}/texting/rollback`, { text: 'fresh' }, session);
      expect(answered.status, JSON.stringify(answered.json)).toBe(200);
      expect((await active.answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { via: 'rollback' } });
      expect(active.call()?.disconnected).toBe(true);
      const run = await record(there, answered.runId!);
      expect(run['blackboard']).toMatchObject({ input: { text: 'fresh' } });
      expect(run['blackboard']['interrupted']).toBeUndefined();
      expect(await record(here, active.runId)).toMatchObject({ status: 'cancelled', cancellation: { via: 'rollback' } });
    }, 120_000);
  });
}
