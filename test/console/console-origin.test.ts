/// <reference lib="dom" />
/**
 * The console's origin against pages it must not trust, in Debian's Chromium against a real `uhlp dev`
 * (docs/security.md, "Listeners and audiences"):
 *
 * - a page an app author wrote, and a page a model made through `respond: httpResponse`, run a script
 *   that tries the console's API, the dev token route, the oracle and a redrive, on its own origin (where
 *   no operator route exists) and on the operator origin (another origin: no answer is readable, and the
 *   core refuses the requests a page may send without a preflight);
 * - a DNS-rebinding page (Chromium resolves rebind.example to 127.0.0.1) is refused on every operator
 *   route docs/security.md lists, before any handler runs.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Response as PageResponse } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchConsoleBrowser, type ConsoleBrowser } from '../helpers/console-browser.js';
import { git } from '../helpers/git-repo.js';
import { reply, startOpenAiTestServer, type OpenAiTestServer } from '../helpers/openai-test-server.js';
import { copyFixture, REPO_ROOT, startUhlpDev, type UhlpProcess } from '../helpers/uhlp-process.js';

interface Attempt {
  readonly status?: number;
  readonly type?: string;
  readonly text?: string;
  readonly error?: string;
}

/** The operator routes of docs/security.md's route table, as `METHOD /path` with their parameters filled. */
function operatorRoutes(): Array<{ method: string; path: string }> {
  const text = readFileSync(path.join(REPO_ROOT, 'docs', 'security.md'), 'utf8');
  const routes: Array<{ method: string; path: string }> = [];
  for (const match of text.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) (\/\S*)` \| `operators` \|/gm)) {
    routes.push({ method: match[1]!, path: match[2]!.replace(/:[A-Za-z]+/g, 'nobody').replace(/\*$/, 'nowhere') });
  }
  return routes;
}

describe('the console origin in Chromium', () => {
  let core: UhlpProcess;
  let llm: OpenAiTestServer;
  let browser: ConsoleBrowser;
  let attack = '';

  beforeAll(async () => {
    // The model makes exactly the page the app author wrote: the same script, now a model's answer.
    const script = readFileSync(path.join(REPO_ROOT, 'test', 'fixtures', 'origins', 'apps', 'site', 'scripts', 'page.mjs'), 'utf8');
    attack = /export const ATTACK = `([\s\S]*?)`;/.exec(script)![1]!;
    llm = await startOpenAiTestServer();
    llm.handle(async () => reply.text(JSON.stringify({ statusCode: 200, headers: { 'content-type': 'text/html; charset=utf-8' }, body: attack })));
    const repo = copyFixture('origins');
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'apps');
    core = await startUhlpDev(repo, ['--driver', 'process'], 90_000, undefined, { UHLP_LLM_BASE_URL: llm.baseUrl, UHLP_LLM_MAX_RETRIES: '0' });
    browser = await launchConsoleBrowser({ args: ['--host-resolver-rules=MAP rebind.example 127.0.0.1'] });
  }, 150_000);

  afterAll(async () => {
    await browser?.close();
    await core?.stop();
    await llm?.close();
  });

  /** Loads an app page with the operator origin in its query; resolves with what its script got, and with what the core answered the requests whose answers the page could not read. */
  async function runPage(route: string): Promise<{ results: Record<string, Attempt>; answered: Map<string, number> }> {
    const answered = new Map<string, number>();
    const onResponse = (response: PageResponse): void => {
      if (response.url().startsWith(core.operatorUrl)) answered.set(`${response.request().method()} ${new URL(response.url()).pathname}`, response.status());
    };
    browser.page.on('response', onResponse);
    try {
      const loaded = await browser.page.goto(`${core.url}/site/${route}?op=${encodeURIComponent(core.operatorUrl)}`);
      expect(loaded?.status(), await loaded?.text()).toBe(200);
      await browser.page.waitForFunction(() => document.title === 'done', undefined, { timeout: 20_000 });
      const results = (await browser.page.evaluate(() => (window as unknown as { __results: Record<string, Attempt> }).__results));
      return { results, answered };
    } finally {
      browser.page.off('response', onResponse);
    }
  }

  it.each([
    ['an app author', 'page'],
    ["a model's httpResponse", 'made'],
  ])("the page of %s gets nothing from the console's API or any operator route", async (_who, route) => {
    const { results, answered } = await runPage(route);
    // On the app origin: no operator route exists, whatever headers the page adds.
    for (const name of ['session', 'devToken', 'oracle', 'redrive']) {
      expect(results[name], name).toMatchObject({ status: 404 });
      expect(results[name]!.text, name).toContain('UHLP_NOT_ON_THIS_LISTENER');
      expect(results[name]!.text, name).not.toMatch(/"role"|"token"|"components"|"redriven"/);
    }
    // On the operator origin: another origin, so no answer is readable (no CORS, a preflight is refused) ...
    expect(results['opSession']!.error).toMatch(/Failed to fetch/);
    expect(results['opSessionSimple']!.error).toMatch(/Failed to fetch/);
    expect(results['opDevToken']).toMatchObject({ status: 0, type: 'opaque', text: '' });
    expect(results['opOracle']).toMatchObject({ status: 0, type: 'opaque', text: '' });
    // ... and what a page may send without a preflight is refused by the core itself (Sec-Fetch-Site: same-site).
    expect(answered.get('POST /_uhlp/dev/mcp-token')).toBe(403);
    expect(answered.get('GET /_uhlp/oracle/status')).toBe(403);
  });

  it('refuses a DNS-rebinding Host on every operator route', async () => {
    const port = new URL(core.operatorUrl).port;
    const rebound = `http://rebind.example:${port}`;
    const page = await browser.context.newPage();
    try {
      // The page's own name now resolves to the core: same-origin with itself, Origin equal to Host, from loopback.
      const landing = await page.goto(`${rebound}/_uhlp/console/`);
      expect(landing?.status()).toBe(421);
      const routes = operatorRoutes();
      expect(routes.length).toBeGreaterThan(20);
      const answers = await page.evaluate(async (list) => {
        const out: Array<{ route: string; status: number; code: string }> = [];
        for (const { method, path: target } of list) {
          const response = await fetch(target, {
            method,
            headers: { 'x-uhlp-console': '1', 'content-type': 'application/json' },
            ...(method === 'GET' ? {} : { body: JSON.stringify({ appId: 'site', app: 'site', component: 'made' }) }),
          });
          const body = (await response.json().catch(() => ({}))) as { code?: string };
          out.push({ route: `${method} ${target}`, status: response.status, code: body.code ?? '' });
        }
        return out;
      }, routes);
      expect(answers.filter((answer) => answer.status !== 421 || answer.code !== 'UHLP_HOST_NOT_ALLOWED')).toEqual([]);
      // The same routes under the operator's own name answer as usual.
      expect((await page.request.get(`${core.operatorUrl}/_uhlp/console/api/session`, { headers: { 'x-uhlp-console': '1' } })).status()).toBe(200);
    } finally {
      await page.close();
    }
  });
});
