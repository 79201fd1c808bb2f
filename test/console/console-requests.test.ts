/// <reference lib="dom" />
/**
 * The console's requests page and a turn's view, a dead letter's message and the inbox's context, in
 * Debian's Chromium (playwright-core) against a real `uhlp dev`: an app whose one route answers and
 * another throws a message with markup in it, a queue whose every delivery throws one too, and the
 * example helpdesk's workflow paused at its approval. Every message and stack is shown as text.
 */
import { cpSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, launchConsoleBrowser, type ConsoleBrowser } from '../helpers/console-browser.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from '../helpers/openai-test-server.js';
import { copyFixture, REPO_ROOT, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

const TRACE_TEMPLATE = 'http://jaeger.test:16686/trace/{traceId}';

describe('the requests page in Chromium against uhlp dev', () => {
  let core: UhlpProcess;
  let llm: OpenAiTestServer;
  let browser: ConsoleBrowser;
  let page: Page;

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle(async (request) => {
      const last = String(request.body.messages?.at(-1)?.['content'] ?? '');
      if (last.includes('HELPDESK-CLASSIFY')) return reply.text(JSON.stringify({ category: /crash|broken/i.test(/Message: (.*)$/m.exec(last)?.[1] ?? '') ? 'bug' : 'question' }));
      if (last.includes('HELPDESK-JUDGE')) return reply.text(JSON.stringify({ score: 0.9, critique: 'Clear.' }));
      return reply.text('Thanks for asking!');
    });
    const repo = copyFixture('console-requests');
    cpSync(path.join(REPO_ROOT, 'examples', 'apps', 'helpdesk'), path.join(repo, 'apps', 'helpdesk'), { recursive: true });
    core = await startUhlpDev(repo, ['--driver', 'process'], 90_000, undefined, {
      UHLP_LLM_BASE_URL: llm.baseUrl,
      UHLP_LLM_TIMEOUT_MS: '20000',
      UHLP_LLM_MAX_RETRIES: '0',
      UHLP_TRACE_URL_TEMPLATE: TRACE_TEMPLATE,
    });
    browser = await launchConsoleBrowser();
    page = browser.page;
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await core?.stop();
    await llm?.close();
  });

  const visit = async (route: string): Promise<void> => {
    await page.goto('about:blank');
    await page.goto(`${core.operatorUrl}/_uhlp/console/#/${route}`);
  };
  const api = async (pathname: string): Promise<any> => {
    const response = await fetch(`${core.operatorUrl}/_uhlp/console/api${pathname}`, { headers: { 'x-uhlp-console': '1' } });
    return response.json();
  };
  const pwned = (): Promise<unknown> => page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned);

  it('lists the turns of every source, filters them, and shows a failed one with its stack as text', async () => {
    for (let i = 0; i < 3; i++) expect((await fetch(`${core.url}/probe/fine`)).status).toBe(200);
    const failed = await fetch(`${core.url}/probe/boom`, { headers: { 'x-trace-id': 'trace/1?x=<b>' } });
    expect(failed.status).toBe(500);
    const failedId = failed.headers.get('x-request-id')!;
    expect((await fetch(`${core.url}/probe/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ job: 1 }) })).status).toBe(200);
    await waitFor(async () => (await api('/requests?source=queue')).turns.length > 0, { timeoutMs: 20_000, what: 'the queue turn in the journal' });

    await visit('requests');
    const rows = page.locator('table.requests tbody tr');
    await rows.first().waitFor({ timeout: 15_000 });
    const sources = await page.locator('table.requests tbody tr td:nth-child(2)').allTextContents();
    expect(sources).toEqual(expect.arrayContaining(['http', 'queue']));

    // Filters: the app, then server errors only.
    await page.getByLabel('App').fill('probe');
    await page.getByLabel('App').press('Enter');
    await page.getByLabel('App').blur();
    await waitFor(async () => (await page.locator('table.requests tbody tr td:nth-child(3)').allTextContents()).every((text) => text.startsWith('probe')), { what: 'only probe rows' });
    await page.getByLabel('Status').fill('5xx');
    await page.getByLabel('Status').blur();
    await page.locator(`tr[data-request="${failedId}"]`).waitFor();
    await waitFor(async () => (await rows.count()) === 2, { what: 'the two failed turns of probe (boom, the doomed delivery)' });
    expect(page.url()).toContain('status=5xx');

    await page.locator(`tr[data-request="${failedId}"] a`).click();
    const message = page.getByTestId('error-message');
    await message.waitFor({ timeout: 15_000 });
    expect(await message.textContent()).toBe('<img src=x onerror=window.__pwned=1> went <b>boom</b>');
    expect(await page.getByTestId('error-stack').textContent()).toMatch(/at boom \(scripts\/probe\.mjs:\d+/);
    expect(await page.locator('main img, main b, main script').count()).toBe(0);
    expect(await pwned()).toBeUndefined();
    // Its timing, a meter per stage, and its trace, linked through the configured template with the id encoded.
    expect(await page.locator('table.timing meter').count()).toBe(5);
    expect(await page.getByRole('link', { name: 'trace/1?x=<b>' }).getAttribute('href')).toBe('http://jaeger.test:16686/trace/trace%2F1%3Fx%3D%3Cb%3E');
    // The enqueuing turn's tool call, on its own view.
    const enqueued = (await api('/requests?app=probe&route=enqueue')).turns[0];
    expect(enqueued).toMatchObject({ source: 'http', status: 200, toolCalls: 1, calls: [{ kind: 'tool', name: 'core.queue.publish', outcome: 'ok' }] });
    // Its ledger entries, in words.
    await page.locator('.ledger-entry h3', { hasText: 'Execution' }).waitFor();
    await expect(page.locator('.ledger-entry').first().textContent()).resolves.toContain(failedId);
    expect(await axeViolations(page), 'axe on a request').toEqual([]);
    await visit('requests');
    await rows.first().waitFor({ timeout: 15_000 });
    expect(await axeViolations(page), 'axe on the requests page').toEqual([]);
  });

  it("shows a dead letter's message as text", async () => {
    await waitFor(async () => (await api('/queues')).queues.some((queue: any) => queue.name === 'doomed' && queue.deadLetters > 0), { timeoutMs: 20_000, what: 'a dead letter on probe/doomed' });
    await visit('queues');
    await page.getByRole('button', { name: 'Show dead letters of doomed' }).click();
    const letter = page.locator('.dead-letter').first();
    await letter.waitFor();
    expect(await letter.locator('p.error').textContent()).toBe('<img src=x onerror=window.__pwned=2> refused {"job":1}');
    expect(await letter.locator('pre.error').textContent()).toMatch(/at doom \(scripts\/probe\.mjs:\d+/);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await pwned()).toBeUndefined();
  });

  it("shows what an approval is about in the inbox: the run's input and its blackboard", async () => {
    const paused = await fetch(`${core.url}/helpdesk/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'The app crashes on save <img src=x onerror=window.__pwned=3>' }) });
    expect(paused.status).toBe(202);
    const { runId } = (await paused.json()) as { runId: string };
    await visit('inbox');
    const item = page.locator(`.inbox-item[data-run="${runId}"]`);
    await item.waitFor({ timeout: 15_000 });
    await expect(item.getByLabel(`input of ${runId}`).textContent()).resolves.toContain('The app crashes on save <img src=x onerror=window.__pwned=3>');
    await expect(item.getByLabel(`blackboard of ${runId}`).textContent()).resolves.toContain('"bug"');
    expect(await page.locator('main img').count()).toBe(0);
    expect(await pwned()).toBeUndefined();
    // The run's turns are requests too: its HTTP turn (linked to the run, its model calls counted), and the steps it ran.
    const turns = (await api('/requests?app=helpdesk')).turns;
    expect(turns.map((turn: any) => turn.source)).toEqual(expect.arrayContaining(['http', 'workflow-step']));
    const started = turns.find((turn: any) => turn.source === 'http' && turn.runId === runId);
    expect(started, JSON.stringify(turns)).toBeDefined();
    expect(started.modelCalls).toBeGreaterThan(0);
    expect(started.calls).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'model', outcome: 'ok' })]));
  });
});
