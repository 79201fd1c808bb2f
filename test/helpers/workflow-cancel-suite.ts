/**
 * Cancelling workflow runs on the driver given with Redis state, two cores
 * sharing it: a run cut mid-model-call (the provider sees its request closed),
 * on the core that drives it and through another core (the cancel mark in
 * Redis), a run's on_cancel node, a paused run cancelled at once, and what a
 * cancel of an ended run, a bad body or an unknown run answers, and the
 * cancel read back from the ledger of the core it came to.
 */
import { execFile } from 'node:child_process';
import { loadavg } from 'node:os';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerEntries } from './ledger-entries.js';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer, type RecordedRequest } from './openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { jsonOrText } from './workflow-requests.js';
import { waitFor } from './wait-for.js';
import { canonicalJson } from '../../src/shared/canonical-json.js';
import { sha256 } from '../../src/ledger/ledger-entry.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

/** The bound this suite holds a cancel to: from the cancel's request to the run ended and its model call closed. */
const CANCEL_BOUND_MS = 2_000;

interface Answer {
  readonly status: number;
  readonly runId: string | null;
  readonly json: Record<string, any>;
}

async function send(url: string, body?: unknown): Promise<Answer> {
  const response = await fetch(url, {
    method: 'POST',
    ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  const json = await jsonOrText(response);
  return { status: response.status, runId: response.headers.get('x-uhlp-run-id'), json };
}

export type WorkflowCancelSuiteOptions = DriverSuiteOptions;

export function describeWorkflowCancel(options: WorkflowCancelSuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  /** A Docker core starts a container to replace each cut execution's; on a loaded machine that takes longer than a process sandbox. */
  const reachTimeoutMs = options.driver === 'docker' ? 60_000 : 30_000;
  const testTimeoutMs = reachTimeoutMs + 30_000;
  describe(`cancelling workflow runs (${options.driver} driver, Redis state, two cores)`, () => {
    let llm: OpenAiTestServer;
    let here: UhlpProcess;
    let there: UhlpProcess;
    let redis: Redis;
    const prefix = uniqueKeyPrefix('wf-cancel');

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      // Every model call hangs: a run is always cut mid-call.
      llm.handle(() => reply.hang());
      const env = { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix };
      // One after the other: two cores starting at once on a loaded machine take longer than twice one.
      here = await startUhlpDev(copyFixture('workflow-e2e'), ['--driver', options.driver], startTimeoutMs, undefined, env);
      there = await startUhlpDev(copyFixture('workflow-e2e'), ['--driver', options.driver], startTimeoutMs, undefined, env);
      redis = new Redis(TEST_REDIS_URL);
    }, 2 * startTimeoutMs + 10_000);

    afterAll(async () => {
      redis?.disconnect();
      await Promise.all([here?.stop(), there?.stop()]);
      await llm?.close();
    });

    /** Starts a run on `core` whose model call hangs; answers its id and the pending answer of the request that started it. */
    async function startHanging(core: UhlpProcess, path: string, text: string): Promise<{ runId: string; answer: Promise<Answer>; call: () => RecordedRequest | undefined }> {
      const before = new Set(await redis.zrange(`${prefix}runs:active`, '0', '-1'));
      const answer = send(`${core.url}/flow/${path}`, { text, one: 'one' });
      let runId: string | undefined;
      await waitFor(
        async () => {
          runId = (await redis.zrange(`${prefix}runs:active`, '0', '-1')).find((id) => !before.has(id));
          return runId !== undefined && llm.requests.some((request) => lastPrompt(request).includes(text));
        },
        { timeoutMs: reachTimeoutMs, what: 'the run to reach its model call' },
      ).catch(async (error: Error) => {
        // What the core's pools held and its last words, to tell a slow sandbox start from a lost run.
        const pools = (await (await fetch(`${core.url}/metrics`)).text()).split('\n').filter((line) => line.startsWith('uhlp_pool_sandboxes{app="flow"'));
        throw new Error(`${error.message} (run ${runId ?? 'not listed'}; ${pools.join('; ')}; the core's stderr ends: ${core.stderr().slice(-1_500)})`);
      });
      return { runId: runId!, answer, call: () => llm.requests.find((request) => lastPrompt(request).includes(text)) };
    }

    it('cuts a run mid-model-call on the core that drives it: the provider sees the request closed, the run ends cancelled with who asked', async () => {
      const run = await startHanging(here, 'hanging', 'cut-here');
      const started = performance.now();
      const cancelled = await send(`${here.url}/_uhlp/runs/${run.runId}/cancel`, { by: 'ada' });
      const elapsed = performance.now() - started;
      expect(cancelled.status).toBe(200);
      expect(cancelled.json).toMatchObject({ id: run.runId, status: 'cancelled', cancellation: { by: 'ada', via: 'http' }, error: { code: 'UHLP_WORKFLOW_CANCELLED' } });
      expect(Date.parse(cancelled.json['cancellation'].at)).toBeGreaterThan(Date.now() - 60_000);
      expect(elapsed).toBeLessThan(CANCEL_BOUND_MS);
      await waitFor(() => run.call()?.disconnected === true, { timeoutMs: CANCEL_BOUND_MS, what: 'the provider to see the model call closed' });
      // The client that started the run is answered, not left hanging.
      const answer = await run.answer;
      expect(answer.status).toBe(409);
      expect(answer.json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { by: 'ada' } });
      expect(answer.runId).toBe(run.runId);
      // The cut step added nothing to the trace; the run is no longer active.
      const trace = (await (await fetch(`${here.url}/_uhlp/runs/${run.runId}/trace`)).json()) as { status: string; steps: unknown[] };
      expect(trace).toMatchObject({ status: 'cancelled', steps: [] });
      expect(await redis.zrange(`${prefix}runs:active`, '0', '-1')).not.toContain(run.runId);
      // Twice: the run has ended.
      const again = await send(`${here.url}/_uhlp/runs/${run.runId}/cancel`, {});
      expect(again.status).toBe(409);
      expect(again.json).toMatchObject({ code: 'UHLP_WORKFLOW_RUN_ENDED', details: { status: 'cancelled', cancelledBy: 'ada' } });
    }, testTimeoutMs);

    it('cuts a run driven by another core through the cancel mark in Redis, within the bound', async () => {
      const run = await startHanging(here, 'hanging', 'cut-there');
      const started = performance.now();
      const cancelled = await send(`${there.url}/_uhlp/runs/${run.runId}/cancel`, { by: 'bob' });
      const elapsed = performance.now() - started;
      expect(cancelled.status).toBe(200);
      expect(cancelled.json).toMatchObject({ status: 'cancelled', cancellation: { by: 'bob' } });
      expect(elapsed).toBeLessThan(CANCEL_BOUND_MS);
      await waitFor(() => run.call()?.disconnected === true, { timeoutMs: CANCEL_BOUND_MS, what: 'the provider to see the model call closed' });
      expect((await run.answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { by: 'bob' } });
      console.log(`${options.driver} driver: cancel through another core: ${elapsed.toFixed(0)} ms to the run cancelled (load average ${loadavg()[0]!.toFixed(1)})`);
    }, testTimeoutMs);

    it("runs the workflow's on_cancel node after the cut, and ends the run cancelled with what that node answered", async () => {
      const run = await startHanging(here, 'undoable', 'undo-me');
      const cancelled = await send(`${there.url}/_uhlp/runs/${run.runId}/cancel`);
      expect(cancelled.status).toBe(200);
      expect(cancelled.json).toMatchObject({ status: 'cancelled', cancellation: { by: 'client', via: 'http' }, result: { undone: { text: 'undo-me' } } });
      await waitFor(() => run.call()?.disconnected === true, { timeoutMs: CANCEL_BOUND_MS, what: 'the provider to see the model call closed' });
      const trace = (await (await fetch(`${here.url}/_uhlp/runs/${run.runId}/trace`)).json()) as { steps: Array<{ node: string; status: string }> };
      expect(trace.steps.map((step) => [step.node, step.status])).toEqual([
        ['undo', 'completed'],
        ['reverted', 'completed'],
      ]);
      expect((await run.answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED' });
    }, testTimeoutMs);

    it('cancels a paused run at once; it can no longer be resumed', async () => {
      const paused = await send(`${here.url}/flow/granted`, {});
      expect(paused.status).toBe(202);
      const runId = paused.runId!;
      const started = performance.now();
      const cancelled = await send(`${there.url}/_uhlp/runs/${runId}/cancel`, { by: 'carol' });
      const elapsed = performance.now() - started;
      expect(elapsed).toBeLessThan(CANCEL_BOUND_MS);
      expect(cancelled.status).toBe(200);
      expect(cancelled.json).toMatchObject({ status: 'cancelled', cancellation: { by: 'carol' } });
      expect(cancelled.json['paused']).toBeUndefined();
      const resumed = await send(`${here.url}/_uhlp/runs/${runId}/resume`, { approved: true });
      expect(resumed.status).toBe(409);
      expect(resumed.json).toMatchObject({ code: 'UHLP_WORKFLOW_RUN_NOT_PAUSED' });
      console.log(`${options.driver} driver: cancel of a paused run through another core: ${elapsed.toFixed(0)} ms (load average ${loadavg()[0]!.toFixed(1)})`);
    }, testTimeoutMs);

    it('cancels a run from the command line, and says when the run has ended', async () => {
      const paused = await send(`${here.url}/flow/granted`, {});
      const runId = paused.runId!;
      const run = promisify(execFile);
      const { stdout } = await run(process.execPath, [UHLP_BIN, 'runs', 'cancel', runId, '--url', there.url, '--by', 'dan']);
      expect(JSON.parse(stdout)).toMatchObject({ id: runId, status: 'cancelled', cancellation: { by: 'dan', via: 'http' } });
      const refused = await run(process.execPath, [UHLP_BIN, 'runs', 'cancel', runId, '--url', there.url]).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.code).not.toBe(0);
      expect(refused?.stderr).toContain('UHLP_WORKFLOW_RUN_ENDED');
    }, testTimeoutMs);

    it("writes each cancel to the app's ledger, the refused one with its code, and the ledger verifies", async () => {
      const paused = await send(`${here.url}/flow/granted`, {});
      const runId = paused.runId!;
      expect((await send(`${there.url}/_uhlp/runs/${runId}/cancel`, { by: 'erin' })).status).toBe(200);
      expect((await send(`${there.url}/_uhlp/runs/${runId}/cancel`, { by: 'erin' })).status).toBe(409);
      // The ledger keeps the hash of each entry's query: the cancel's is known from what it names.
      const hashOf = (by: string): string => sha256(canonicalJson({ source: 'internal', cancel: { runId, app: 'flow', by, via: 'http' } }));
      const cancels = (): Array<{ status: string; session_id: string }> =>
        ledgerEntries(there.dataDir).filter((entry) => entry['entry_type'] === 'L-EXEC' && entry['query_hash'] === hashOf('erin')) as Array<{ status: string; session_id: string }>;
      await waitFor(() => cancels().length === 2, { timeoutMs: 10_000, what: 'both cancels in the ledger' });
      expect(cancels().map((entry) => entry.status)).toEqual(['cancelled', 'UHLP_WORKFLOW_RUN_ENDED']);
      // On the core the cancel came to, not the one that drove the run.
      expect(ledgerEntries(here.dataDir).some((entry) => entry['query_hash'] === hashOf('erin'))).toBe(false);
      const verified = await promisify(execFile)(process.execPath, [UHLP_BIN, 'ledger', 'verify', '--data-dir', there.dataDir]);
      expect(verified.stdout + verified.stderr).not.toMatch(/does not verify/);
    }, testTimeoutMs);

    it('refuses hostile cancel bodies and unknown runs, changing nothing', async () => {
      const paused = await send(`${here.url}/flow/granted`, {});
      const runId = paused.runId!;
      for (const [body, field] of [
        ['not json', 'body'],
        [[1], 'body'],
        [{ by: 'x'.repeat(257) }, 'by'],
        [{ by: 3 }, 'by'],
        [{ approved: true }, 'approved'],
        [{ __proto__: { by: 'x' }, status: 'completed' }, 'status'],
      ] as const) {
        const refused = await send(`${here.url}/_uhlp/runs/${runId}/cancel`, body);
        expect(refused.status, JSON.stringify(body)).toBe(400);
        expect(refused.json).toMatchObject({ details: { field } });
      }
      expect(((await (await fetch(`${here.url}/_uhlp/runs/${runId}`)).json()) as { status: string }).status).toBe('paused');
      expect((await send(`${here.url}/_uhlp/runs/RUN-20260101T000000000Z-0123456789ABCDEFGHJK/cancel`, {})).json).toMatchObject({ code: 'UHLP_WORKFLOW_RUN_NOT_FOUND' });
      expect((await send(`${here.url}/_uhlp/runs/..%2F..%2Fetc/cancel`, {})).status).toBe(404);
    }, testTimeoutMs);
  });
}
