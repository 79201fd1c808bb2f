/// <reference lib="dom" />
/**
 * The console end to end, in Debian's Chromium driven by playwright-core, against a real `uhlp dev`:
 * the example helpdesk app (a workflow with an approval, and its generated ticket view), a queue app
 * whose message fails once, an LLM component the oracle optimizes, a second app with a view, and an app
 * a later commit breaks. Every model call is answered by the OpenAI-compatible test server.
 *
 * With UHLP_CONSOLE_SCREENSHOTS=<dir> the suite also writes a PNG of each page there
 * (docs/console/ holds the ones the docs show).
 */
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Frame, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, launchConsoleBrowser, type ConsoleBrowser } from '../helpers/console-browser.js';
import { git } from '../helpers/git-repo.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer, type RecordedRequest } from '../helpers/openai-test-server.js';
import { copyFixture, REPO_ROOT, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';
import { waitFor } from '../helpers/wait-for.js';

const SHOTS = process.env['UHLP_CONSOLE_SCREENSHOTS'];
/** A title no page may turn into markup: an image whose error handler marks the page. */
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';

function lastMessage(request: RecordedRequest): string {
  return String(request.body.messages?.at(-1)?.['content'] ?? '');
}

function shout(text: string): { shout: string; n: number } {
  return { shout: text.toUpperCase(), n: text.length };
}

describe('the console in Chromium against uhlp dev', () => {
  let core: UhlpProcess;
  let llm: OpenAiTestServer;
  let browser: ConsoleBrowser;
  let page: Page;
  let repo: string;
  /** Holds helpdesk answers while set: a run stays running until it is released. */
  let answerGate: Promise<void> | undefined;

  beforeAll(async () => {
    llm = await startOpenAiTestServer();
    llm.handle(async (request) => {
      const first = String(request.body.messages?.[0]?.['content'] ?? '');
      const last = lastMessage(request);
      if (first.startsWith('uhlp-oracle-codegen')) {
        return reply.text('```js\nexport default async function (event) {\n  return { shout: event.body.text.toUpperCase(), n: event.body.text.length };\n}\n```', { usage: { prompt: 900, completion: 60 } });
      }
      if (last.includes('HELPDESK-CLASSIFY')) return reply.text(JSON.stringify({ category: /crash|broken/i.test(/Message: (.*)$/m.exec(last)?.[1] ?? '') ? 'bug' : 'question' }));
      if (last.includes('HELPDESK-JUDGE')) return reply.text(JSON.stringify({ score: 0.9, critique: 'Clear.' }));
      if (last.includes('HELPDESK-ANSWER')) {
        await answerGate;
        return reply.text('Thanks for asking! You can do that from your account page under Settings.');
      }
      const text = /characters: (.*)$/m.exec(last)?.[1] ?? '';
      return reply.text(JSON.stringify(shout(text)), { usage: { prompt: 40, completion: 12 } });
    });
    repo = copyFixture('console');
    // The example helpdesk as it ships: its workflow, and its generated ticket view.
    cpSync(path.join(REPO_ROOT, 'examples', 'apps', 'helpdesk'), path.join(repo, 'apps', 'helpdesk'), { recursive: true });
    core = await startUhlpDev(repo, ['--driver', 'process'], 90_000, undefined, {
      UHLP_LLM_BASE_URL: llm.baseUrl,
      UHLP_LLM_TIMEOUT_MS: '20000',
      UHLP_LLM_MAX_RETRIES: '0',
      UHLP_ORACLE_INTERVAL_MS: '100',
    });
    browser = await launchConsoleBrowser();
    page = browser.page;
    if (SHOTS !== undefined) mkdirSync(SHOTS, { recursive: true });
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await core?.stop();
    await llm?.close();
  });

  const consoleUrl = (route: string): string => `${core.operatorUrl}/_uhlp/console/#/${route}`;
  /** A fresh load of a console route (a change of the hash alone would keep the page as it is). */
  const visit = async (route: string): Promise<void> => {
    await page.goto('about:blank');
    await page.goto(consoleUrl(route));
  };
  const api = async (pathname: string, init: RequestInit = {}): Promise<any> => {
    const response = await fetch(`${core.operatorUrl}/_uhlp/console/api${pathname}`, { ...init, headers: { 'x-uhlp-console': '1', 'content-type': 'application/json', ...(init.headers ?? {}) } });
    return response.json();
  };
  const ask = (text: string): Promise<Response> =>
    fetch(`${core.url}/helpdesk/ask`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
  const shot = async (name: string): Promise<void> => {
    if (SHOTS !== undefined) await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  };

  it('shows a run live while it runs, then its timeline', async () => {
    let release!: () => void;
    answerGate = new Promise<void>((resolve) => (release = resolve));
    const answered = ask('How do I reset my password?');
    let runId = '';
    await waitFor(
      async () => {
        const running = await api('/runs?status=running&app=helpdesk');
        runId = running.runs[0]?.id ?? '';
        return runId !== '';
      },
      { timeoutMs: 20_000, what: 'a running helpdesk run in the list' },
    );
    await visit(`runs/${runId}`);
    await page.locator('.badge-running').first().waitFor({ timeout: 15_000 });
    await page.locator('[data-live="live"]').waitFor();
    const lanesWhileRunning = await page.locator('.waterfall .lane').count();
    // The model answers: the page follows the run's stream to its end, without a reload.
    release();
    answerGate = undefined;
    expect((await answered).status).toBe(200);
    await page.locator('.facts .badge-completed').waitFor({ timeout: 20_000 });
    const lanes = await page.locator('.waterfall .lane').count();
    expect(lanes, `lanes while running: ${lanesWhileRunning}, after: ${lanes}`).toBeGreaterThan(lanesWhileRunning);
    // classify, route, answer, judge, done: each a step on the timeline, each with its thought and observation.
    expect(await page.locator('.waterfall .lane-label').allTextContents()).toEqual(expect.arrayContaining([expect.stringContaining('classify'), expect.stringContaining('judge')]));
    await page.locator('.step summary').first().click();
    await expect(page.locator('.step details[open] h4').allTextContents()).resolves.toEqual(expect.arrayContaining(['Thought', 'Action', 'Observation', 'Snapshot']));
    await shot('run');
    await visit('runs');
    await page.locator('table.runs tbody tr a').first().waitFor();
    await shot('runs');
  });

  it('approves a paused run from the inbox, and the run completes', async () => {
    const paused = await ask('The app crashes on save');
    expect(paused.status).toBe(202);
    const { runId } = (await paused.json()) as { runId: string };
    await visit('inbox');
    const item = page.locator(`.inbox-item[data-run="${runId}"]`);
    await item.waitFor({ timeout: 15_000 });
    await expect(item.locator('.prompt').textContent()).resolves.toBe('Open this ticket?');
    await shot('inbox');
    await item.getByLabel('Comment').fill('looks real');
    await item.getByRole('button', { name: 'Approve' }).click();
    await page.getByText(`Approved ${runId}: the run answered 200`).waitFor({ timeout: 20_000 });
    const detail = await api(`/runs/${runId}`);
    expect(detail.run.status).toBe('completed');
    // Who approved is the principal (loopback here), whatever a body could say.
    expect(detail.run.approvals.approve).toMatchObject({ approved: true, by: 'loopback', comment: 'looks real' });
  });

  it('cancels a running run from its page: its model call is cut, the run ends cancelled by the operator', async () => {
    answerGate = new Promise<void>(() => undefined);
    const answered = ask('How do I cancel my plan?');
    let runId = '';
    await waitFor(
      async () => {
        const running = await api('/runs?status=running&app=helpdesk');
        runId = running.runs[0]?.id ?? '';
        return runId !== '' && llm.requests.some((request) => lastMessage(request).includes('HELPDESK-ANSWER') && lastMessage(request).includes('cancel my plan'));
      },
      { timeoutMs: 30_000, what: 'a helpdesk run waiting for its answer' },
    );
    await visit(`runs/${runId}`);
    await page.locator('.facts .badge-running').waitFor({ timeout: 15_000 });
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    // Later answers are not held: the held one is the cut call's.
    answerGate = undefined;
    await page.locator('.facts .badge-cancelled').waitFor({ timeout: 15_000 });
    await expect(page.locator('.cancellation').textContent()).resolves.toContain('Cancelled by loopback (console)');
    expect(await page.getByRole('button', { name: 'Cancel run' }).count()).toBe(0);
    const cut = llm.requests.find((request) => lastMessage(request).includes('HELPDESK-ANSWER') && lastMessage(request).includes('cancel my plan'));
    await waitFor(() => cut?.disconnected === true, { timeoutMs: 5_000, what: 'the provider to see the cut model call closed' });
    const answer = await answered;
    expect(answer.status).toBe(409);
    expect(((await answer.json()) as { code: string }).code).toBe('UHLP_WORKFLOW_CANCELLED');
    await shot('run-cancelled');
    // The list shows it cancelled; a second cancel through the API is refused: the run has ended.
    expect((await api(`/runs/${runId}`)).run).toMatchObject({ status: 'cancelled', cancellation: { by: 'loopback', via: 'console' } });
    const again = await api(`/runs/${runId}/cancel`, { method: 'POST', body: '{}' });
    expect(again.code).toBe('UHLP_WORKFLOW_RUN_ENDED');
  });

  it('cancels a paused run from its page at once', async () => {
    const paused = await ask('The app crashes when I cancel');
    expect(paused.status).toBe(202);
    const { runId } = (await paused.json()) as { runId: string };
    await visit(`runs/${runId}`);
    await page.locator('.facts .badge-paused').waitFor({ timeout: 15_000 });
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.locator('.facts .badge-cancelled').waitFor({ timeout: 15_000 });
    expect(await page.getByRole('button', { name: 'Approve' }).count()).toBe(0);
    expect((await api(`/runs/${runId}`)).run.status).toBe('cancelled');
  });

  it("replays and forks a run from its page, and shows the run's family", async () => {
    const asked = await ask('How do I export my invoices?');
    expect(asked.status).toBe(200);
    const parentId = asked.headers.get('x-uhlp-run-id')!;
    const parentSteps = (await api(`/runs/${parentId}`)).trace.steps as Array<{ index: number; node: string; at: string }>;
    await visit(`runs/${parentId}`);
    await page.locator('.facts .badge-completed').waitFor({ timeout: 15_000 });
    // classify and route ride in one checkpoint: steps 0 (classify), 2 (answer) and 3 (judge) can be started from.
    await expect(page.getByLabel('from step').locator('option').allTextContents()).resolves.toEqual(['#0 classify', '#2 answer', '#3 judge']);
    const callsBefore = llm.requests.length;
    await page.getByLabel('from step').selectOption('2');
    await page.getByRole('button', { name: 'Replay from step' }).click();
    // The new run's page opens: its parent, its first steps taken from it, the rest run again.
    await page.locator('.family-parent').waitFor({ timeout: 15_000 });
    await expect(page.locator('.family-parent').textContent()).resolves.toContain(`A replay of ${parentId} from step 2, by loopback`);
    await page.locator('.facts .badge-completed').waitFor({ timeout: 20_000 });
    await expect(page.locator('.step .taken-from').count()).resolves.toBe(2);
    const replayId = decodeURIComponent(new URL(page.url()).hash.split('/').pop()!);
    const replay = await api(`/runs/${replayId}`);
    expect(replay.trace.steps.slice(0, 2).map((step: { at: string; takenFrom: unknown }) => [step.at, step.takenFrom])).toEqual(
      parentSteps.slice(0, 2).map((step) => [step.at, { runId: parentId, index: step.index }]),
    );
    // The classify step was taken, not asked again; the answer was.
    const replayCalls = llm.requests.slice(callsBefore).map(lastMessage);
    expect(replayCalls.some((text) => text.includes('HELPDESK-CLASSIFY'))).toBe(false);
    expect(replayCalls.some((text) => text.includes('HELPDESK-ANSWER') && text.includes('export my invoices'))).toBe(true);
    await shot('run-replayed');

    // A fork from the parent's page, with the question edited.
    await visit(`runs/${parentId}`);
    await page.getByLabel('from step').selectOption('2');
    await page.getByLabel('blackboard edit').fill('{"input": {"text": "How do I export my receipts?"}}');
    await page.getByRole('button', { name: 'Fork from step' }).click();
    await page.locator('.family-parent').waitFor({ timeout: 15_000 });
    await expect(page.locator('.family-parent').textContent()).resolves.toContain(`A fork of ${parentId} from step 2`);
    await page.locator('.facts .badge-completed').waitFor({ timeout: 20_000 });
    expect(llm.requests.slice(callsBefore).map(lastMessage).some((text) => text.includes('HELPDESK-ANSWER') && text.includes('export my receipts'))).toBe(true);

    // The parent lists both, each a link to its run; a fork breaking the state schema is refused on the page.
    await visit(`runs/${parentId}`);
    const rows = page.locator('table.family-children tbody tr');
    await rows.first().waitFor({ timeout: 15_000 });
    await expect(rows.locator('td:nth-child(2)').allTextContents()).resolves.toEqual(['replay', 'fork']);
    await expect(rows.first().locator('a').textContent()).resolves.toBe(replayId);
    await page.getByLabel('blackboard edit').fill('{"draft": 5}');
    await page.getByRole('button', { name: 'Fork from step' }).click();
    await page.getByText('UHLP_WORKFLOW_FORK_STATE_INVALID').waitFor({ timeout: 10_000 });
    await shot('run-family');
    await rows.first().locator('a').click();
    await page.locator('.family-parent a').waitFor({ timeout: 15_000 });
    expect((await api(`/runs/${parentId}`)).run.children).toHaveLength(2);
  });

  it('redrives a dead letter', async () => {
    const published = await fetch(`${core.url}/relay/enqueue`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ job: 7 }) });
    expect(published.status).toBe(200);
    await waitFor(async () => (await api('/queues')).queues.some((queue: any) => queue.name === 'jobs' && queue.deadLetters === 1), { timeoutMs: 20_000, what: 'a dead letter on relay/jobs' });
    await visit('queues');
    await page.getByRole('button', { name: 'Show dead letters of jobs' }).click();
    await page.locator('.dead-letter').first().waitFor();
    await expect(page.locator('.dead-letter').first().textContent()).resolves.toContain('failed');
    await shot('queues');
    await page.getByRole('button', { name: 'Redrive all' }).click();
    await page.getByText('1 redriven').waitFor({ timeout: 10_000 });
    // The message comes again, and is taken this time.
    await waitFor(async () => (await api('/queues')).queues.some((queue: any) => queue.name === 'jobs' && queue.deadLetters === 0 && queue.depth === 0), {
      timeoutMs: 20_000,
      what: 'relay/jobs drained',
    });
  });

  it('rolls back an optimized component', async () => {
    // Samples: each text twice (a fresh answer to a held input tells the outputs are stable).
    const stage = async (): Promise<string | undefined> => (await api('/oracle')).components.find((component: any) => component.component === 'shout')?.stage;
    for (let i = 0; i < 24 && (await stage()) !== 'shadow'; i++) {
      for (const text of [`word ${i}`, `word ${i}`]) {
        const response = await fetch(`${core.url}/shop/shout`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
        expect(await response.json()).toEqual(shout(text));
      }
    }
    await waitFor(async () => (await stage()) === 'shadow', { timeoutMs: 60_000, intervalMs: 200, what: `shop/shout promoted (shadow): ${JSON.stringify((await api('/oracle')).components)}` });
    // The promotion is a commit: the core serves it once it has reloaded the definitions.
    await waitFor(async () => (await api('/apps')).apps.find((app: any) => app.id === 'shop').components[0].handler === 'JIT', { timeoutMs: 20_000, what: 'shop/shout served as JIT' });
    await visit('optimizer');
    await page.locator('[data-component="shop/shout"]').click();
    await page.getByLabel('candidate code').waitFor();
    await expect(page.getByLabel('candidate code').textContent()).resolves.toContain('toUpperCase');
    await expect(page.getByLabel('candidate diff').textContent()).resolves.toContain('+ export default');
    await shot('optimizer');
    await page.getByRole('button', { name: 'Roll back' }).click();
    await page.locator('p.ok, p.error').first().waitFor({ timeout: 30_000 });
    expect(await page.locator('p.ok, p.error').first().textContent()).toBe('rollback: now rolled-back');
    expect((await api('/oracle/shop/shout')).stage).toBe('rolled-back');
  }, 180_000);

  it('shows an app held back with its error', async () => {
    // A new revision breaks notes: the core keeps serving notes at its last good revision.
    const file = path.join(repo, 'apps', 'notes', 'app.yaml');
    writeFileSync(file, `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: notes }
spec:
  pools:
    - { name: main, minWarm: 0, maxSize: 1, limits: { timeoutMs: 3000 } }
  components:
    - { id: echo, handler: JIT, pool: elsewhere, jit: { script: scripts/echo.mjs } }
  routes:
    - { http: { method: GET, path: /echo }, component: echo }
`);
    git(repo, 'commit', '-qam', 'notes: a pool that does not exist');
    await waitFor(async () => (await api('/apps')).heldBack.some((held: any) => held.app === 'notes'), { timeoutMs: 20_000, what: 'notes held back' });
    await visit('apps');
    const held = page.locator('.held[data-app="notes"]');
    await held.waitFor();
    await expect(held.locator('td.mono').first().textContent()).resolves.toBe('apps/notes/app.yaml');
    await expect(held.locator('td.mono').nth(1).textContent()).resolves.toBe('/spec/components/0/pool');
    await expect(held.locator('td.reason').first().textContent()).resolves.toContain('pool "elsewhere" is not declared');
  });

  it('renders an MCP Apps view that calls a tool, in a sandboxed double-nested iframe', async () => {
    await visit('apps');
    const args = page.locator('#args-helpdesk-ticket\\.show');
    await args.fill(JSON.stringify({ text: `Checkout is broken ${HOSTILE}` }));
    await page.locator('form.launcher', { has: args }).getByRole('button', { name: 'Open view' }).click();
    const view = page.frameLocator('.view-host[data-app="helpdesk"] iframe.view-frame').frameLocator('iframe');
    await view.locator('#title').waitFor({ timeout: 20_000 });
    // The tool's result, rendered by the view as text.
    await expect(view.locator('#title').textContent()).resolves.toBe(`Checkout is broken ${HOSTILE}`.slice(0, 60));
    await expect(view.locator('#priority').textContent()).resolves.toBe('normal');
    // The view calls ticket.escalate (visibility: app) through the console and the core.
    await view.getByRole('button', { name: 'Escalate' }).click();
    await view.locator('#status', { hasText: 'escalated' }).waitFor({ timeout: 20_000 });
    await expect(view.locator('#priority').textContent()).resolves.toBe('urgent');
    await shot('apps');
    // ticket.escalate is the view's alone: the console, acting as the agent, may not call it.
    const refused = await api('/views/helpdesk/tools/call', { method: 'POST', body: JSON.stringify({ name: 'ticket.escalate', arguments: { id: 'T-1' }, caller: 'host' }) });
    expect(refused).toMatchObject({ code: 'UHLP_CONSOLE_VIEW_REFUSED' });
  });

  it('keeps views in their sandboxes: iframe attributes, CSP, origins, cross-app messages, window.top', async () => {
    await visit('apps');
    for (const [app, tool, input] of [
      ['helpdesk', 'ticket.show', { text: 'Sandboxed' }],
      ['board', 'board.show', {}],
    ] as const) {
      const args = page.locator(`#args-${app}-${tool.replace('.', '\\.')}`);
      await args.fill(JSON.stringify(input));
      await page.locator('form.launcher', { has: args }).getByRole('button', { name: 'Open view' }).click();
    }
    const helpdesk = page.frameLocator('.view-host[data-app="helpdesk"] iframe.view-frame').frameLocator('iframe');
    const board = page.frameLocator('.view-host[data-app="board"] iframe.view-frame').frameLocator('iframe');
    await helpdesk.locator('#title', { hasText: 'Sandboxed' }).waitFor({ timeout: 20_000 });
    await board.locator('#notes', { hasText: 'first' }).waitFor({ timeout: 20_000 });

    // The outer frame is the sandbox proxy, on the sandbox origin; the view inside has an opaque origin and no more than scripts and forms.
    const outer = page.locator('.view-host[data-app="helpdesk"] iframe.view-frame');
    expect(await outer.getAttribute('sandbox')).toBe('allow-scripts allow-same-origin');
    const session = await api('/session');
    expect(new URL(session.sandboxOrigin).origin).not.toBe(new URL(core.url).origin);
    expect(await page.frameLocator('.view-host[data-app="helpdesk"] iframe.view-frame').locator('iframe').getAttribute('sandbox')).toBe('allow-scripts allow-forms');
    const frames = viewFrames(page);
    expect(frames.proxies.every((frame) => new URL(frame.url()).origin === session.sandboxOrigin)).toBe(true);
    expect(frames.views).toHaveLength(2);
    for (const frame of frames.views) expect(await frame.evaluate(() => window.origin)).toBe('null');

    // CSP: the console page's, and the sandbox page's (the restrictive default, the helpdesk resource declares none).
    const pageAnswer = await fetch(`${core.operatorUrl}/_uhlp/console/`);
    expect(pageAnswer.headers.get('content-security-policy')).toBe(
      `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; connect-src 'self'; frame-src ${session.sandboxOrigin}; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'`,
    );
    const sandboxAnswer = await fetch(`${session.sandboxOrigin}/sandbox/sandbox.html?app=helpdesk&uri=${encodeURIComponent('ui://helpdesk/ticket')}`);
    const sandboxCsp = sandboxAnswer.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'none'", "connect-src 'none'", "frame-src 'none'", "object-src 'none'", "base-uri 'none'"]) expect(sandboxCsp).toContain(directive);
    // The sandbox origin serves the sandbox page and its script, nothing of the console.
    expect((await fetch(`${session.sandboxOrigin}/_uhlp/console/api/session`)).status).toBe(404);
    // An inline script cannot run on the console page, and a view cannot reach the network (connect-src 'none').
    expect(await page.evaluate(() => {
      const script = document.createElement('script');
      script.textContent = 'window.__inline = 1';
      document.body.append(script);
      return (window as unknown as { __inline?: number }).__inline;
    })).toBeUndefined();
    const helpdeskView = frames.views[0]!;
    expect(await helpdeskView.evaluate((url) => fetch(url).then(() => 'reached', () => 'blocked'), `${core.url}/_uhlp/console/api/session`)).toBe('blocked');

    // window.top is out of reach from a view and from its proxy.
    for (const frame of [helpdeskView, frames.proxies[0]!]) {
      expect(await frame.evaluate(() => {
        try {
          return window.top!.document.title;
        } catch (error) {
          return `blocked: ${(error as Error).name}`;
        }
      })).toBe('blocked: SecurityError');
    }

    // From the board's view: a forged tool result to the helpdesk's view, a forged call to its proxy,
    // and a forged tools/call to the console itself. Each is refused where it lands.
    const boardView = frames.views[1]!;
    const rejectedBefore = Number((await page.evaluate(() => document.body.dataset['rejectedMessages'])) ?? 0);
    await boardView.evaluate(() => {
      const forged = { jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: { structuredContent: { id: 'FORGED', title: 'forged', priority: 'none', status: 'forged' } } };
      const top = window.top!;
      for (let i = 0; i < top.frames.length; i++) {
        top.frames[i]!.frames[0]?.postMessage(forged, '*');
        top.frames[i]!.postMessage({ jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'ticket.escalate', arguments: { id: 'FORGED' } } }, '*');
      }
      top.postMessage({ jsonrpc: '2.0', id: 78, method: 'tools/call', params: { name: 'ticket.escalate', arguments: { id: 'FORGED' } } }, '*');
    });
    await helpdesk.locator('body[data-rejected]').waitFor({ timeout: 5000 });
    await expect(helpdesk.locator('#title').textContent()).resolves.toBe('Sandboxed');
    await waitFor(async () => Number(await page.evaluate(() => document.body.dataset['rejectedMessages'] ?? 0)) > rejectedBefore, { what: 'the console rejecting the forged call' });
    await waitFor(async () => (await frames.proxies[0]!.evaluate(() => document.body.dataset['rejectedMessages'] ?? '0')) !== '0', { what: 'the proxy rejecting the forged call' });
    expect(browser.messages.some((line) => line.includes('[uhlp console] rejected a message from an unknown source'))).toBe(true);
    expect(browser.messages.some((line) => line.includes('[uhlp sandbox] rejected a message from an unknown source'))).toBe(true);
    await shot('views');
  });

  it('renders hostile run data inert', async () => {
    const answered = await ask(`How do I pay? ${HOSTILE}`);
    expect(answered.status).toBe(200);
    const runId = answered.headers.get('x-uhlp-run-id')!;
    await visit(`runs/${runId}`);
    await page.locator('.facts .badge-completed').waitFor({ timeout: 15_000 });
    for (const summary of await page.locator('.step summary').all()) await summary.click();
    // The text is on the page as text; nothing of it became an element or ran.
    await expect(page.locator('pre.json', { hasText: '<img src=x onerror=' }).first().isVisible()).resolves.toBe(true);
    expect(await page.locator('main img, main script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });

  it('passes axe-core (WCAG 2.1 A and AA) on every page', async () => {
    const runs = await api('/runs?limit=1');
    const routes = ['runs', `runs/${runs.runs[0].id}`, 'inbox', 'apps', 'pools', 'queues', 'optimizer', 'ledger'];
    for (const route of routes) {
      await visit(route);
      await page.locator('main .card, main .view-host').first().waitFor({ timeout: 15_000 });
      await page.waitForLoadState('networkidle');
      if (route === 'ledger') {
        await page.getByRole('button', { name: 'Verify now' }).click();
        await page.locator('[data-verified]').waitFor({ timeout: 30_000 });
        await shot('ledger');
      }
      if (route === 'pools') await shot('pools');
      expect(await axeViolations(page), `axe on #/${route}`).toEqual([]);
    }
  });
});

/** The sandbox proxies (frames of the console page) and the views (their child frames). */
function viewFrames(page: Page): { proxies: Frame[]; views: Frame[] } {
  const proxies = page.mainFrame().childFrames();
  return { proxies, views: proxies.flatMap((frame) => frame.childFrames()) };
}
