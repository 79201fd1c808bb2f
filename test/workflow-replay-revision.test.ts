/**
 * Replaying a run after a new Git commit changed its workflow, on the process
 * driver with Redis state: with `currentRevision: true` the replay runs the
 * app's new revision (its changed step asks the provider the new prompt);
 * without it the replay stays on the parent's pinned revision (the old
 * prompt), though the core serves the new one.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitAll } from './helpers/git-repo.js';
import { lastPrompt, reply, startOpenAiTestServer, type OpenAiTestServer } from './helpers/openai-test-server.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './helpers/redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';
import { waitFor } from './helpers/wait-for.js';
import { dropKeys } from './sources/redis-keys.js';

describe('replaying a run after its workflow changed (process driver, Redis state)', () => {
  let llm: OpenAiTestServer;
  let core: UhlpProcess;
  let defs: string;
  const prefix = uniqueKeyPrefix('wf-replay-revision');

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle((request) => reply.text(`done: ${lastPrompt(request)}`));
    defs = copyFixture('workflow-e2e');
    core = await startUhlpDev(defs, ['--driver', 'process'], 180_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0', UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix });
  }, 250_000);

  afterAll(async () => {
    await core?.stop();
    await llm?.close();
    await dropKeys(prefix);
  });

  const consoleHeaders = { 'content-type': 'application/json', 'x-uhlp-console': '1' };
  const run = async (id: string): Promise<Record<string, any>> => (await (await fetch(`${core.url}/_uhlp/runs/${id}`)).json()) as Record<string, any>;
  async function ended(id: string): Promise<Record<string, any>> {
    let view: Record<string, any> = {};
    await waitFor(async () => (view = await run(id))['status'] !== 'running', { timeoutMs: 60_000, what: `run ${id} to end` });
    return view;
  }
  async function replay(id: string, body: Record<string, unknown>): Promise<Record<string, any>> {
    const response = await fetch(`${core.operatorUrl}/_uhlp/console/api/runs/${id}/replay`, { method: 'POST', headers: consoleHeaders, body: JSON.stringify(body) });
    const json = (await response.json()) as Record<string, any>;
    expect(response.status, JSON.stringify(json)).toBe(202);
    return ended(json['run']['id']);
  }
  const asked = (text: string): string[] => llm.requests.map(lastPrompt).filter((prompt) => prompt.includes(text));

  it('runs the new revision with currentRevision: true, and the pinned one without it', async () => {
    const started = await fetch(`${core.url}/flow/replayable`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'revised-run', one: 'one', two: 'two' }) });
    expect(started.status).toBe(200);
    const parent = await run(started.headers.get('x-uhlp-run-id')!);
    const pinned = parent['revision'] as string;

    // A new commit changes the workflow: its step `second` asks another prompt.
    const app = path.join(defs, 'apps', 'flow');
    writeFileSync(path.join(app, 'prompts', 'revised.njk'), 'Revised step {{ inputs.n }} of: {{ inputs.text }}\n');
    const workflow = path.join(app, 'workflows', 'replayable.yaml');
    const before = readFileSync(workflow, 'utf8');
    const after = before.replace('second: { type: agent, prompt: prompts/step.njk', 'second: { type: agent, prompt: prompts/revised.njk');
    expect(after).not.toBe(before);
    writeFileSync(workflow, after);
    const revision = commitAll(defs, 'the second step asks another prompt');
    await waitFor(async () => ((await (await fetch(`${core.url}/readyz`)).json()) as Record<string, unknown>)['revision'] === revision, { timeoutMs: 30_000, what: 'the new revision served' });
    expect(revision).not.toBe(pinned);

    const current = await replay(parent['id'], { fromStep: 2, currentRevision: true });
    expect(current['status']).toBe('completed');
    expect(current['revision']).toBe(revision);
    expect(asked('Revised step two of: revised-run')).toHaveLength(1);
    expect(JSON.stringify(current['result'])).toContain('Revised step two of: revised-run');

    const kept = await replay(parent['id'], { fromStep: 2 });
    expect(kept['status']).toBe('completed');
    expect(kept['revision']).toBe(pinned);
    // The pinned revision's prompt, asked once by the parent and once by this replay; the new one not again.
    expect(asked('Step two of: revised-run')).toHaveLength(2);
    expect(asked('Revised step two of: revised-run')).toHaveLength(1);
    expect(JSON.stringify(kept['result'])).not.toContain('Revised');
  }, 180_000);
});
