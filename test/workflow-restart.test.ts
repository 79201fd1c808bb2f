/**
 * A workflow run whose core dies mid-run goes on in the next core that
 * shares its Redis state: the new core finds the running run nobody holds,
 * resumes it at its pinned revision from its last checkpoint, and no
 * completed node runs again.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, descendants, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';

describe('a workflow run across a core restart (Redis state)', () => {
  let llm: OpenAiTestServer;
  let first: UhlpProcess | undefined;
  let second: UhlpProcess | undefined;
  const definitions = copyFixture('workflow-e2e');
  const env = (): Record<string, string> => ({ UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix });
  const prefix = uniqueKeyPrefix('wf-restart');

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
  });

  afterAll(async () => {
    await first?.stop();
    await second?.stop();
    await llm?.close();
  });

  it('is resumed by the next core from its last checkpoint', async () => {
    let seconds = 0;
    llm.handle((request) => {
      if (lastPrompt(request).startsWith('Step one')) return reply.text('first done');
      // The first try of the second step never answers: its core stops meanwhile.
      return ++seconds === 1 ? reply.hang() : reply.text('second done');
    });
    first = await startUhlpDev(definitions, ['--driver', 'process'], 60_000, undefined, env());
    const pending = fetch(`${first.url}/flow/durable`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'job', one: 'one', two: 'two' }) }).then(
      async (response) => ({ status: response.status, runId: response.headers.get('x-uhlp-run-id'), text: await response.text() }),
      (error: unknown) => ({ status: 0, runId: null, text: String(error) }),
    );
    await llm.waitForRequests(2, 20_000);
    // A crash, not a drain: a core stopped with SIGTERM would first finish the runs it drives.
    const left = descendants(first.child.pid!);
    await first.stop('SIGKILL');
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone with its core already.
      }
    }
    const cut = await pending;
    // The client of the stopped core got no result (the connection closed, or an error answer).
    expect(cut.status === 0 || cut.status >= 500).toBe(true);

    // The run is left running for the next core: it is among the active runs in Redis.
    const redis = new Redis(TEST_REDIS_URL);
    let runId: string;
    try {
      const active = await redis.zrange(`${prefix}runs:active`, '0', '-1');
      expect(active).toHaveLength(1);
      runId = active[0]!;
    } finally {
      redis.disconnect();
    }
    if (cut.runId !== null) expect(cut.runId).toBe(runId);

    second = await startUhlpDev(definitions, ['--driver', 'process'], 60_000, undefined, env());
    // The new core picks the run up by itself and drives it to its end.
    await waitFor(async () => ((await (await fetch(`${second!.url}/_uhlp/runs/${runId}`)).json()) as { status: string }).status === 'completed', { timeoutMs: 40_000 });
    const run = (await (await fetch(`${second.url}/_uhlp/runs/${runId}`)).json()) as { result: unknown };
    expect(run.result).toEqual({ first: 'first done', copied: { first: 'first done' }, second: 'second done' });
    expect(llm.requests.filter((request) => lastPrompt(request).startsWith('Step one'))).toHaveLength(1);
    const trace = (await (await fetch(`${second.url}/_uhlp/runs/${runId}/trace`)).json()) as { steps: Array<{ node: string }> };
    expect(trace.steps.map((step) => step.node)).toEqual(['first', 'copy', 'second', 'done']);
  }, 120_000);
});
