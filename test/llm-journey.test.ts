/**
 * An LLM component through `uhlp dev`, over real HTTP: the core routes it to a
 * pool with `runner: llm`, the process driver starts the llm-orchestrator in
 * bubblewrap, the orchestrator reads the templates through the core's MCP
 * endpoint and asks core.llm.generate, answered by the scripted provider
 * (UHLP_LLM_SCRIPT_FILE). No tool calls and no output schema: those need the
 * core's LLM layer of issue 13 (tests/sandbox/orchestrator-suite.ts covers them
 * against a fake MCP server).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_ANSWER, llmFixture, TRIAGE_ANSWER, TRIAGE_REQUEST } from './helpers/llm-fixture.js';
import { startUhlpDev, type UhlpProcess } from './helpers/uhlp-process.js';

let core: UhlpProcess;

beforeAll(async () => {
  const { dir, env } = llmFixture();
  core = await startUhlpDev(dir, [], 60_000, undefined, env);
}, 90_000);

afterAll(async () => {
  await core?.stop();
});

async function call(pathname: string, init: RequestInit = {}): Promise<{ status: number; json: Record<string, any> }> {
  const response = await fetch(`${core.url}${pathname}`, init);
  return { status: response.status, json: (await response.json()) as Record<string, any> };
}

describe('an LLM component end to end', () => {
  it('renders the templates with the request, the header and an include and import, and answers the model', async () => {
    const answer = await call('/h/tickets/42?lang=en', TRIAGE_REQUEST);
    expect(answer).toEqual({ status: 200, json: { text: TRIAGE_ANSWER } });
    // Another ticket renders another prompt: the script's default.
    const other = await call('/h/tickets/7?lang=en', { method: 'POST', headers: { 'content-type': 'application/json', 'x-user': 'ada' }, body: '{"title":"slow"}' });
    expect(other).toEqual({ status: 200, json: { text: DEFAULT_ANSWER } });
  });

  it('answers 500 UHLP_PROMPT_TEMPLATE_ERROR naming the file, the line and the cause', async () => {
    const { status, json } = await call('/h/broken');
    expect(status).toBe(500);
    expect(json).toMatchObject({
      code: 'UHLP_PROMPT_TEMPLATE_ERROR',
      details: { file: 'prompts/broken.njk', line: 2, cause: expect.stringMatching(/^template not found: prompts\/missing\.njk: .*UHLP_DEFINITION_FILE_NOT_FOUND/) },
    });
  });

  it('refuses a template that reaches for process, and keeps serving', async () => {
    const { status, json } = await call('/h/hostile');
    expect(status).toBe(500);
    expect(json).toMatchObject({ code: 'UHLP_PROMPT_TEMPLATE_INVALID', details: { file: 'prompts/hostile.njk', line: 1, column: 11, cause: 'the attribute "constructor" is not allowed in templates' } });
    const after = await call('/h/tickets/7', { method: 'POST', body: 'plain text', headers: { 'content-type': 'text/plain' } });
    expect(after).toEqual({ status: 200, json: { text: DEFAULT_ANSWER } });
  });

  it('counts the LLM call among the MCP calls the turn made', async () => {
    const metrics = await (await fetch(`${core.url}/metrics`)).text();
    expect(metrics).toMatch(/uhlp_mcp_calls_total\{[^}]*app="helpdesk"[^}]*tool="core\.llm\.generate"[^}]*\} [1-9]/);
  });
});
