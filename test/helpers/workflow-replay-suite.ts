/**
 * Replaying and forking workflow runs from a step, on the driver given with
 * Redis state: each new run checked step by step against its parent's trace
 * (the steps before N copied, not run again: the provider saw no call for them
 * and the JIT step's nonce is the parent's; the steps from N run again), the
 * parent left as it was, the family on both runs, the command line, and what
 * hostile requests answer.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { jsonOrText } from './workflow-requests.js';
import { waitFor } from './wait-for.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

interface Step {
  readonly index: number;
  readonly at: string;
  readonly node: string;
  readonly status: string;
  readonly output?: unknown;
  readonly snapshot: unknown;
  readonly takenFrom?: { runId: string; index: number };
}

interface Answer {
  readonly status: number;
  readonly json: Record<string, any>;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const json = await jsonOrText(response);
  return { status: response.status, json };
}

export type WorkflowReplaySuiteOptions = DriverSuiteOptions;

export function describeWorkflowReplay(options: WorkflowReplaySuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  describe(`replaying and forking workflow runs (${options.driver} driver, Redis state)`, () => {
    let llm: OpenAiTestServer;
    let core: UhlpProcess;
    const prefix = uniqueKeyPrefix('wf-replay');

    beforeAll(async () => {
      await options.before?.();
      llm = await startOpenAiTestServer();
      // Each model call answers with what it was asked: a step's output names its input.
      llm.handle((request) => reply.text(`done: ${lastPrompt(request)}`));
      core = await startUhlpDev(copyFixture('workflow-e2e'), ['--driver', options.driver], startTimeoutMs, undefined, {
        UHLP_LLM_BASE_URL: llm.baseUrl,
        UHLP_LLM_MAX_RETRIES: '0',
        UHLP_STATE: TEST_REDIS_URL,
        UHLP_STATE_PREFIX: prefix,
      });
    }, startTimeoutMs + 30_000);

    afterAll(async () => {
      await core?.stop();
      await llm?.close();
    });

    const api = (path: string): string => `${core.operatorUrl}/_uhlp/console/api${path}`;
    const consoleHeaders = { 'x-uhlp-console': '1' };

    async function run(id: string): Promise<Record<string, any>> {
      return (await (await fetch(`${core.url}/_uhlp/runs/${id}`)).json()) as Record<string, any>;
    }

    async function trace(id: string): Promise<{ steps: Step[]; parent?: Record<string, unknown>; revision: string }> {
      return (await (await fetch(`${core.url}/_uhlp/runs/${id}/trace`)).json()) as { steps: Step[]; parent?: Record<string, unknown>; revision: string };
    }

    async function ended(id: string): Promise<Record<string, any>> {
      let view: Record<string, any> = {};
      await waitFor(
        async () => {
          view = await run(id);
          return view['status'] !== 'running';
        },
        { timeoutMs: 60_000, what: `run ${id} to end` },
      );
      return view;
    }

    /** An original run of the replayable workflow: first (agent), stamp (JIT), second (agent), done (end). */
    async function original(text: string): Promise<{ id: string; steps: Step[]; result: Record<string, any> }> {
      const response = await fetch(`${core.url}/flow/replayable`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, one: 'one', two: 'two' }) });
      expect(response.status).toBe(200);
      const id = response.headers.get('x-uhlp-run-id')!;
      const result = (await response.json()) as Record<string, any>;
      const { steps } = await trace(id);
      expect(steps.map((step) => [step.index, step.node, step.status])).toEqual([
        [0, 'first', 'completed'],
        [1, 'stamp', 'completed'],
        [2, 'second', 'completed'],
        [3, 'done', 'completed'],
      ]);
      return { id, steps, result };
    }

    /** The model calls made for `text` since `since` (an index into the provider's requests). */
    const callsFor = (text: string, since: number): string[] => llm.requests.slice(since).map(lastPrompt).filter((asked) => asked.includes(text));

    it('replays a run from a middle step: the steps before it taken from the parent, the rest run again; the parent intact', async () => {
      const parent = await original('replay-me');
      const parentBefore = await run(parent.id);
      const since = llm.requests.length;
      const asked = performance.now();
      const started = await post(api(`/runs/${parent.id}/replay`), { fromStep: 2 }, consoleHeaders);
      const answeredMs = performance.now() - asked;
      expect(started.status).toBe(202);
      const child = started.json['run'] as Record<string, any>;
      expect(child['id']).not.toBe(parent.id);
      expect(child['parent']).toMatchObject({ runId: parent.id, step: 2, kind: 'replay', by: 'loopback' });
      const done = await ended(child['id']);
      expect(done['status']).toBe('completed');
      console.log(`replay from step 2 on the ${options.driver} driver: answered in ${answeredMs.toFixed(0)} ms, the new run completed ${(performance.now() - asked).toFixed(0)} ms after the request`);
      const { steps, parent: provenance } = await trace(child['id']);
      expect(provenance).toMatchObject({ runId: parent.id, step: 2, kind: 'replay' });
      // Step by step against the parent's trace.
      expect(steps.map((step) => step.index)).toEqual([0, 1, 2, 3]);
      for (const index of [0, 1]) {
        const { takenFrom, ...copied } = steps[index]!;
        expect(takenFrom).toEqual({ runId: parent.id, index });
        expect(copied).toEqual(parent.steps[index]);
      }
      for (const index of [2, 3]) {
        expect(steps[index]!.takenFrom).toBeUndefined();
        expect(steps[index]!.node).toBe(parent.steps[index]!.node);
        expect(Date.parse(steps[index]!.at)).toBeGreaterThan(Date.parse(parent.steps[3]!.at));
      }
      // Only step 2's model call was made again; the JIT step was not run (its nonce is the parent's).
      expect(callsFor('replay-me', since)).toEqual(['Step two of: replay-me']);
      expect(done['result']).toEqual(parent.result);
      expect(done['result'].stamped.nonce).toBe(parent.result['stamped'].nonce);
      // The parent is as it was, and lists its child.
      const parentAfter = await run(parent.id);
      const { children, updatedAt: _u1, ...rest } = parentAfter;
      const { children: _none, updatedAt: _u2, ...restBefore } = parentBefore;
      expect(rest).toEqual(restBefore);
      expect(children).toEqual([expect.objectContaining({ runId: child['id'], step: 2, kind: 'replay', by: 'loopback' })]);
      expect((await trace(parent.id)).steps).toEqual(parent.steps);
    }, 120_000);

    it('replays from the JIT step: it runs again (a new nonce), the model call before it does not', async () => {
      const parent = await original('replay-jit');
      const since = llm.requests.length;
      const started = await post(api(`/runs/${parent.id}/replay`), { fromStep: 1 }, consoleHeaders);
      expect(started.status).toBe(202);
      const done = await ended(started.json['run']['id']);
      expect(done['status']).toBe('completed');
      const { steps } = await trace(done['id']);
      expect(steps.map((step) => [step.index, step.node, step.takenFrom?.index ?? null])).toEqual([
        [0, 'first', 0],
        [1, 'stamp', null],
        [2, 'second', null],
        [3, 'done', null],
      ]);
      expect(callsFor('replay-jit', since)).toEqual(['Step two of: replay-jit']);
      expect(done['result'].first).toBe(parent.result['first']);
      expect(done['result'].stamped.nonce).not.toBe(parent.result['stamped'].nonce);
    }, 120_000);

    it("forks a run from a middle step with an edited blackboard, checked against the workflow's state.schema", async () => {
      const parent = await original('fork-me');
      const since = llm.requests.length;
      const started = await post(api(`/runs/${parent.id}/fork`), { fromStep: 2, set: { input: { two: 'forked' } } }, consoleHeaders);
      expect(started.status).toBe(202);
      expect(started.json['run']).toMatchObject({ parent: { runId: parent.id, step: 2, kind: 'fork' } });
      const done = await ended(started.json['run']['id']);
      expect(done['status']).toBe('completed');
      const { steps } = await trace(done['id']);
      expect(steps.slice(0, 2).map((step) => step.takenFrom)).toEqual([
        { runId: parent.id, index: 0 },
        { runId: parent.id, index: 1 },
      ]);
      // The edit reached the step run again, and only it.
      expect(callsFor('fork-me', since)).toEqual(['Step forked of: fork-me']);
      expect(done['result']).toMatchObject({ first: parent.result['first'], second: 'done: Step forked of: fork-me' });
      expect(done['blackboard'].input).toMatchObject({ text: 'fork-me', one: 'one', two: 'forked' });
      expect((await run(parent.id))['blackboard'].input.two).toBe('two');
      // A fork breaking the schema is refused, and makes no run.
      const refused = await post(api(`/runs/${parent.id}/fork`), { fromStep: 2, set: { input: { two: 7 } } }, consoleHeaders);
      expect(refused.status).toBe(422);
      expect(refused.json).toMatchObject({ code: 'UHLP_WORKFLOW_FORK_STATE_INVALID', details: { errors: [expect.stringContaining('/input/two')] } });
      const whole = await post(api(`/runs/${parent.id}/fork`), { fromStep: 2, blackboard: [1] }, consoleHeaders);
      expect(whole.json).toMatchObject({ code: 'UHLP_WORKFLOW_REPLAY_INVALID', details: { field: 'blackboard' } });
      expect((await run(parent.id))['children']).toHaveLength(1);
    }, 120_000);

    it('shows the family: a replay of a replay, its parent and its children, in the runs list', async () => {
      const parent = await original('family');
      const first = await post(api(`/runs/${parent.id}/replay`), { fromStep: 2, currentRevision: true }, consoleHeaders);
      const child = await ended(first.json['run']['id']);
      expect(child['revision']).toBe((await run(parent.id))['revision']);
      const second = await post(api(`/runs/${child['id']}/replay`), { fromStep: 3 - 1 }, consoleHeaders);
      const grandchild = await ended(second.json['run']['id']);
      // Steps the child took from its parent stay marked as the parent's.
      const { steps } = await trace(grandchild['id']);
      expect(steps.slice(0, 2).map((step) => step.takenFrom?.runId)).toEqual([parent.id, parent.id]);
      expect(grandchild['parent']).toMatchObject({ runId: child['id'] });
      expect((await run(child['id']))['children']).toEqual([expect.objectContaining({ runId: grandchild['id'], kind: 'replay' })]);
      const page = (await (await fetch(api(`/runs?app=flow&component=replayable&limit=200`), { headers: consoleHeaders })).json()) as { runs: Array<Record<string, any>> };
      expect(page.runs.find((summary) => summary['id'] === child['id'])?.['parent']).toMatchObject({ runId: parent.id, step: 2, kind: 'replay' });
    }, 120_000);

    it('replays and forks from the command line on the operator listener', async () => {
      const parent = await original('from-cli');
      const exec = promisify(execFile);
      const replayed = await exec(process.execPath, [UHLP_BIN, 'runs', 'replay', parent.id, '--from-step', '2', '--url', core.operatorUrl]);
      const replay = JSON.parse(replayed.stdout) as Record<string, any>;
      expect(replay).toMatchObject({ parent: { runId: parent.id, step: 2, kind: 'replay' } });
      const forked = await exec(process.execPath, [UHLP_BIN, 'runs', 'fork', parent.id, '--from-step', '2', '--set', '{"input": {"two": "cli"}}', '--url', core.operatorUrl]);
      const fork = JSON.parse(forked.stdout) as Record<string, any>;
      expect((await ended(fork['id']))['result']).toMatchObject({ second: 'done: Step cli of: from-cli' });
      expect((await ended(replay['id']))['status']).toBe('completed');
      const refused = await exec(process.execPath, [UHLP_BIN, 'runs', 'replay', parent.id, '--from-step', '9', '--url', core.operatorUrl]).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(refused?.code).not.toBe(0);
      expect(refused?.stderr).toContain('UHLP_WORKFLOW_STEP_OUT_OF_RANGE');
    }, 120_000);

    it('refuses hostile requests with stable codes, making no run', async () => {
      const parent = await original('hostile');
      const url = api(`/runs/${parent.id}/replay`);
      const cases: Array<[unknown, number, string, Record<string, unknown>]> = [
        [{ fromStep: 4 }, 422, 'UHLP_WORKFLOW_STEP_OUT_OF_RANGE', { first: 0, last: 3 }],
        [{ fromStep: 99 }, 422, 'UHLP_WORKFLOW_STEP_OUT_OF_RANGE', { step: 99 }],
        // The end step rode in one checkpoint with the step before it: no state of its own was kept.
        [{ fromStep: 3 }, 409, 'UHLP_WORKFLOW_CHECKPOINT_UNAVAILABLE', { reason: 'not-kept', checkpointed: [0, 1, 2] }],
        [{ fromStep: -1 }, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'fromStep' }],
        [{ fromStep: 1.5 }, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'fromStep' }],
        [{ fromStep: '1' }, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'fromStep' }],
        [{}, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'fromStep' }],
        [{ fromStep: 1, set: {} }, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'set' }],
        [{ fromStep: 1, currentRevision: 'yes' }, 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'currentRevision' }],
        ['not json', 400, 'UHLP_WORKFLOW_REPLAY_INVALID', { field: 'body' }],
      ];
      for (const [body, status, code, details] of cases) {
        const refused = await post(url, body, consoleHeaders);
        expect(refused.status, JSON.stringify(body)).toBe(status);
        expect(refused.json, JSON.stringify(body)).toMatchObject({ code, details });
      }
      const fork = await post(api(`/runs/${parent.id}/fork`), { fromStep: 2, set: { a: 1 }, blackboard: {} }, consoleHeaders);
      expect(fork.json).toMatchObject({ code: 'UHLP_WORKFLOW_REPLAY_INVALID' });
      expect((await post(api('/runs/RUN-20260101T000000000Z-0123456789ABCDEFGHJK/replay'), { fromStep: 0 }, consoleHeaders)).json).toMatchObject({ code: 'UHLP_WORKFLOW_RUN_NOT_FOUND' });
      // Without the console's header (what a page of another site sends): refused before anything runs.
      expect((await post(url, { fromStep: 1 })).status).toBe(403);
      // The apps listener serves no operator route: an app's client cannot replay a run, its own or another app's.
      const onApps = await post(`${core.url}/_uhlp/console/api/runs/${parent.id}/replay`, { fromStep: 1 }, consoleHeaders);
      expect(onApps.json).toMatchObject({ code: 'UHLP_NOT_ON_THIS_LISTENER' });
      expect((await post(`${core.url}/_uhlp/runs/${parent.id}/replay`, { fromStep: 1 })).status).toBe(404);
      expect((await run(parent.id))['children']).toEqual([]);
    }, 120_000);
  });
}
