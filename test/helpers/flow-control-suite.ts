/**
 * Flow control per key across two cores sharing one Redis (UHLP_TEST_REDIS_URL,
 * default redis://127.0.0.1:6379; it fails, never skips, without Redis), on the
 * driver given: a limit-1 key under concurrent requests spread over both
 * cores runs them one at a time and all of them; debounce runs only the last
 * of a burst; throttle spaces starts; priority orders waiting events (listed by
 * `uhlp queues waiting` and the console's queues page, in Chromium); a wait
 * past maxWaitMs is refused.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, launchConsoleBrowser } from './console-browser.js';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';
import { dropKeys, valuesUnder } from '../sources/redis-keys.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

interface Marked {
  readonly id: string;
  readonly start: number;
  readonly end: number;
}

export interface FlowControlSuiteOptions extends DriverSuiteOptions {
  /** How many concurrent events the limit-1 key gets (50 unless a driver makes that slow). */
  readonly events?: number;
}

export function describeFlowControl(options: FlowControlSuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 120_000;
  const events = options.events ?? 50;
  describe(`flow control on one Redis shared by two cores (${options.driver} driver)`, () => {
    const prefix = uniqueKeyPrefix('flow');
    // One installation: the same sources key on every core, which `uhlp queues waiting` signs its token with.
    const env = { UHLP_STATE_PREFIX: prefix, UHLP_SOURCES_KEY: 'k'.repeat(40) };
    const definitions = copyFixture('flow');
    let first: UhlpProcess;
    let second: UhlpProcess;

    beforeAll(async () => {
      await options.before?.();
      const args = ['--state', TEST_REDIS_URL, '--driver', options.driver];
      first = await startUhlpDev(definitions, args, startTimeoutMs, undefined, env);
      second = await startUhlpDev(definitions, args, startTimeoutMs, undefined, env);
    }, 2 * startTimeoutMs + 60_000);
    afterAll(async () => {
      await first?.stop();
      await second?.stop();
      await dropKeys(prefix);
    });

    const post = async (core: UhlpProcess, path: string, body: object, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown> }> => {
      const response = await fetch(`${core.url}/flow${path}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };

    it(`runs ${events} concurrent events of one key one at a time across both cores, and every one of them`, async () => {
      const started = performance.now();
      const answers = await Promise.all(Array.from({ length: events }, (_, i) => post(i % 2 === 0 ? first : second, '/tickets/T-1', { id: `c${i}`, holdMs: 15 })));
      console.log(`${events} events of one limit-1 key on the ${options.driver} driver: ${(performance.now() - started).toFixed(0)} ms`);
      const refused = answers.filter((a) => a.status !== 200).map((a) => a.json);
      expect(answers.map((a) => a.status), JSON.stringify(refused.slice(0, 3))).toEqual(Array.from({ length: events }, () => 200));
      const runs = answers.map((a) => a.json as unknown as Marked).sort((a, b) => a.start - b.start);
      for (let i = 1; i < runs.length; i++) {
        // Never two at once: each turn starts after the one before it ended.
        expect(runs[i]!.start, `${runs[i]!.id} started before ${runs[i - 1]!.id} ended`).toBeGreaterThanOrEqual(runs[i - 1]!.end);
      }
      // None lost: each left its start and end in the shared kv.
      const recorded = await valuesUnder(prefix, 'kv:app/flow/kv/run:c*');
      expect(recorded.size).toBe(2 * events);
      // Another key is not held behind this one.
      const [a, b] = await Promise.all([post(first, '/tickets/A', { id: 'a', holdMs: 800 }), post(second, '/tickets/B', { id: 'b', holdMs: 800 })]);
      const [x, y] = [a.json as unknown as Marked, b.json as unknown as Marked];
      expect(Math.max(x.start, y.start)).toBeLessThan(Math.min(x.end, y.end));
    }, 180_000);

    it('runs only the last event of a burst, and answers the earlier ones 202 UHLP_DEBOUNCED', async () => {
      const sent = [];
      for (let i = 0; i < 4; i++) {
        sent.push(post(i % 2 === 0 ? first : second, '/debounced/D-1', { id: `d${i}` }));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const answers = await Promise.all(sent);
      expect(answers.map((a) => a.status)).toEqual([202, 202, 202, 200]);
      expect(answers[0]!.json).toMatchObject({ code: 'UHLP_DEBOUNCED' });
      expect(answers[3]!.json).toMatchObject({ id: 'd3' });
      expect([...(await valuesUnder(prefix, 'kv:app/flow/kv/run:d*:start')).keys()]).toEqual(['kv:app/flow/kv/run:d3:start']);
    }, 60_000);

    it('starts at most the throttle limit per period per key; the rest wait and run', async () => {
      const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => post(i % 2 === 0 ? first : second, '/throttled', { id: `t${i}`, tenant: 'acme' })));
      expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 6 }, () => 200));
      const starts = answers.map((a) => (a.json as unknown as Marked).start).sort((a, b) => a - b);
      // Any three starts in a row span at least a period (minus the turns' own start-up slack).
      for (let i = 2; i < starts.length; i++) expect(starts[i]! - starts[i - 2]!).toBeGreaterThanOrEqual(900);
      // Another tenant has its own budget.
      const other = await post(first, '/throttled', { id: 'other', tenant: 'globex' });
      expect(other.status).toBe(200);
    }, 60_000);

    it('lets the highest priority of the waiting events go first, and lists the waiting key in the CLI and the console', async () => {
      // The other core's console: the gates are the shared store's, whichever core the events came to.
      const browser = await launchConsoleBrowser();
      try {
        await browser.page.goto(`${second.operatorUrl}/_uhlp/console/#/queues`);
        await browser.page.getByRole('heading', { name: 'Waiting at flow gates' }).waitFor({ timeout: 20_000 });
      } catch (error) {
        await browser.close();
        throw error;
      }
      // Held long enough for a loaded machine to queue the four, run the CLI and render the page before it ends.
      const holding = post(first, '/tickets/P-1', { id: 'p-hold', holdMs: 12_000 });
      await waitFor(async () => (await valuesUnder(prefix, 'kv:app/flow/kv/run:p-hold:start')).size === 1, { timeoutMs: 20_000, what: 'the holding turn' });
      const waiting = async (): Promise<number> => {
        const text = await (await fetch(`${first.url}/metrics`)).text();
        return Number(/uhlp_flow_waiting\{app="flow",route="http POST \/tickets\/:ticket",kind="concurrency"\} (\d+)/.exec(text)?.[1] ?? 0);
      };
      const sent = [];
      for (const [id, priority] of [['p-low', '-1'], ['p-plain', '0'], ['p-high', '7'], ['p-mid', '3']] as const) {
        sent.push(post(first, '/tickets/P-1', { id, holdMs: 10 }, { 'x-priority': priority }));
        const count = sent.length;
        await waitFor(async () => (await waiting()) === count, { timeoutMs: 10_000, what: `${count} waiting` });
      }
      // The waiting events are listed with their key.
      const listed = execFileSync(process.execPath, [UHLP_BIN, 'queues', 'waiting', '--json', '--url', first.operatorUrl, '--data-dir', first.dataDir], { env: { ...process.env, ...env } });
      expect(JSON.parse(listed.toString())).toMatchObject({ gates: [{ app: 'flow', scope: 'http POST /tickets/:ticket', kind: 'concurrency', key: 'P-1', waiting: 4, running: 1 }] });
      try {
        const row = browser.page.locator('tr[data-gate="flow|http POST /tickets/:ticket|concurrency|P-1"]');
        await row.waitFor({ timeout: 10_000 });
        expect(await row.locator('td').allTextContents()).toEqual(['flow', 'http POST /tickets/:ticket', 'concurrency', 'P-1', '4', '1']);
        expect(await axeViolations(browser.page), 'axe on the queues page').toEqual([]);
        // A key is the client's text: one that is markup is shown as text, never run.
        const hostile = '<img src=x onerror=window.__pwned=1>';
        const path = `/tickets/${encodeURIComponent(hostile)}`;
        const hostileHold = post(second, path, { id: 'h-hold', holdMs: 3000 });
        await waitFor(async () => (await valuesUnder(prefix, 'kv:app/flow/kv/run:h-hold:start')).size === 1, { timeoutMs: 20_000, what: 'the hostile key held' });
        const hostileWaiter = post(second, path, { id: 'h-wait', holdMs: 10 });
        const hostileRow = browser.page.locator('tr[data-gate]', { hasText: 'onerror' });
        await hostileRow.waitFor({ timeout: 10_000 });
        expect(await hostileRow.locator('td').nth(3).textContent()).toBe(hostile);
        expect(await browser.page.locator('main img').count()).toBe(0);
        expect(await browser.page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
        expect((await hostileHold).status).toBe(200);
        expect((await hostileWaiter).status).toBe(200);
      } finally {
        await browser.close();
      }
      await holding;
      const runs = (await Promise.all(sent)).map((a) => a.json as unknown as Marked).sort((a, b) => a.start - b.start);
      expect(runs.map((r) => r.id)).toEqual(['p-high', 'p-mid', 'p-plain', 'p-low']);
    }, 60_000);

    it('refuses an event that waited past maxWaitMs with 429 UHLP_FLOW_WAIT_TIMEOUT', async () => {
      const holding = post(first, '/impatient/I-1', { id: 'i-hold', holdMs: 2000 });
      await waitFor(async () => (await valuesUnder(prefix, 'kv:app/flow/kv/run:i-hold:start')).size === 1, { timeoutMs: 20_000, what: 'the holding turn' });
      const response = await fetch(`${second.url}/flow/impatient/I-1`, { method: 'POST', body: '{"id":"i-late"}' });
      expect(response.status).toBe(429);
      expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await response.json()).toMatchObject({ code: 'UHLP_FLOW_WAIT_TIMEOUT' });
      expect((await holding).status).toBe(200);
      expect((await valuesUnder(prefix, 'kv:app/flow/kv/run:i-late:*')).size).toBe(0);
    }, 60_000);
  });
}
