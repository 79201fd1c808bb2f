/**
 * The delivery sources suite, run through a real `uhlp dev` on the embedded
 * default (`--state memory`) and on Redis (test/sources/): cron slots, queues
 * (publish by tool and by the authenticated endpoint, dedup by invocation id,
 * poison messages to the dead letters with their last error and back, expiry), callbacks (valid,
 * expired, forged, replayed), internal events across apps (and refused where
 * `from` does not allow them, and a loop cut at its depth), async invocations,
 * the CLI, the metrics, and every delivery as a ledger turn.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSourcesKey, signToken } from '../../src/sources/signed-token.js';
import { copyFixture, startUhlpDev, UHLP_BIN, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

export interface SourcesSuiteOptions {
  /** Extra `uhlp dev` arguments (`--state redis://...`). */
  readonly args: readonly string[];
  /** Extra environment (UHLP_STATE_PREFIX). */
  readonly env: Record<string, string>;
  /** Runs after the core stopped (drops the test's Redis keys). */
  readonly cleanup?: () => Promise<void>;
}

export interface LogEntry {
  source?: string;
  invocationId: string;
  attempt: number;
  runs?: number;
  details?: any;
  app?: string;
  phase?: string;
  payload?: any;
  depth?: number;
  refused?: string;
}

/** The kv log the fixture's scripts write, read through the app's own route. */
export async function readLog(core: UhlpProcess, app: string, name: string): Promise<LogEntry[]> {
  const response = await fetch(`${core.url}/${app}/log/${name}`);
  return ((await response.json()) as { entries: LogEntry[] }).entries;
}

/** `uhlp queues ...` against a core; resolves with stdout (rejects on a non-zero exit). */
export async function queuesCli(core: UhlpProcess, args: string[]): Promise<string> {
  // `queues token` signs with the data directory's key and asks no core: it takes no --url.
  const target = args[0] === 'token' ? [] : ['--url', core.operatorUrl];
  const { stdout } = await run(process.execPath, [UHLP_BIN, 'queues', ...args, ...target, '--data-dir', core.dataDir]);
  return stdout;
}

/**
 * A token signed with the core's sources key (from its data directory), as the
 * CLI signs them; for the polls, which would start a CLI process each time.
 */
export async function signedBy(core: UhlpProcess, purpose: 'queue-publish' | 'queue-admin', app: string, name: string): Promise<string> {
  const key = await loadSourcesKey(core.dataDir, undefined);
  return signToken(key, { purpose, app, name, expiresAt: Math.floor(Date.now() / 1000) + 300 });
}

/** GET on a core's queue admin endpoints (what `uhlp queues ls|dlq --json` prints). */
export async function adminJson(core: UhlpProcess, target: string): Promise<any> {
  const response = await fetch(`${core.operatorUrl}${target}`, { headers: { authorization: `Bearer ${await signedBy(core, 'queue-admin', '*', '*')}` } });
  if (response.status !== 200) throw new Error(`GET ${target} answered ${response.status}`);
  return response.json();
}

export function describeSources(name: string, options: SourcesSuiteOptions): void {
  describe(`delivery sources through uhlp dev: ${name}`, () => {
    let core: UhlpProcess;
    let publishToken: string;

    beforeAll(async () => {
      // At warn, whatever the test's environment: a failed delivery's line is asserted.
      core = await startUhlpDev(copyFixture('sources'), [...options.args], 60_000, undefined, { UHLP_LOG_LEVEL: 'warn', ...options.env });
      publishToken = (await queuesCli(core, ['token', 'shop', 'poison'])).trim();
    }, 90_000);
    afterAll(async () => {
      await core?.stop();
      await options.cleanup?.();
    });

    const publishEndpoint = (queue: string, body: string, headers: Record<string, string> = {}): Promise<Response> =>
      fetch(`${core.url}/_uhlp/queues/shop/${queue}`, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    const post = async (path: string, body: unknown): Promise<{ status: number; json: any }> => {
      const response = await fetch(`${core.url}${path}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: response.status, json: await response.json() };
    };
    const queueStats = async (queue: string): Promise<any> => {
      const listed = (await adminJson(core, '/_uhlp/queues')) as { queues: any[] };
      return listed.queues.find((q) => q.source === 'queue' && q.name === queue);
    };

    it('fires a cron slot every second, once each, with cronDetails and an invocation id', async () => {
      await waitFor(async () => (await readLog(core, 'shop', 'tick')).length >= 3, { timeoutMs: 15_000, what: 'three cron slots' });
      const entries = await readLog(core, 'shop', 'tick');
      const times = entries.map((e) => e.details.scheduledTime as string);
      expect(new Set(times).size).toBe(times.length);
      for (const entry of entries) {
        expect(entry.source).toBe('cron');
        expect(entry.details.jobId).toBe('tick');
        expect(entry.details.scheduledTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.000Z$/);
        expect(entry.invocationId).toBe(`tick@${entry.details.scheduledTime}`);
        expect(entry.runs).toBe(1);
      }
    });

    it('delivers a message published with core.queue.publish, with queueDetails, and refuses a queue the capability lacks', async () => {
      const published = await post('/shop/publish', { queue: 'orders', payload: { order: 1, items: ['a'] } });
      expect(published.status).toBe(200);
      await waitFor(async () => (await readLog(core, 'shop', 'orders')).some((e) => e.invocationId === published.json.invocationId), { timeoutMs: 10_000, what: 'the order' });
      const entry = (await readLog(core, 'shop', 'orders')).find((e) => e.invocationId === published.json.invocationId)!;
      expect(entry).toMatchObject({ source: 'queue', attempt: 1, runs: 1, details: { queueName: 'orders', payload: { order: 1, items: ['a'] }, messageId: published.json.messageId } });

      const refused = await post('/shop/publish', { queue: 'poison', payload: {} });
      expect(refused.status).toBe(403);
      expect(refused.json).toMatchObject({ code: 'UHLP_CAPABILITY_DENIED', details: { capability: 'queue', rule: 'publish' } });
    });

    it('publishes through POST /_uhlp/queues with a token, runs a repeated Idempotency-Key once, and refuses bad requests', async () => {
      const ordersToken = await signedBy(core, 'queue-publish', 'shop', 'orders');
      const auth = { authorization: `Bearer ${ordersToken}` };
      const first = await publishEndpoint('orders', '{"order":2}', { ...auth, 'idempotency-key': 'order-2' });
      expect(first.status).toBe(202);
      expect(await first.json()).toMatchObject({ invocationId: 'order-2' });
      expect((await publishEndpoint('orders', '{"order":2}', { ...auth, 'idempotency-key': 'order-2' })).status).toBe(202);
      await waitFor(async () => (await queueStats('orders'))?.depth === 0 && (await readLog(core, 'shop', 'orders')).some((e) => e.invocationId === 'order-2'), {
        timeoutMs: 10_000,
        what: 'both copies settled',
      });
      expect((await readLog(core, 'shop', 'orders')).filter((e) => e.invocationId === 'order-2')).toHaveLength(1);

      const codeOf = async (response: Response): Promise<[number, string]> => [response.status, ((await response.json()) as { code: string }).code];
      expect(await codeOf(await publishEndpoint('orders', '{}'))).toEqual([401, 'UHLP_SOURCE_UNAUTHORIZED']);
      expect(await codeOf(await publishEndpoint('orders', '{}', { authorization: `Bearer ${publishToken}` }))).toEqual([401, 'UHLP_SOURCE_UNAUTHORIZED']);
      expect(await codeOf(await publishEndpoint('orders', '{}', { authorization: `Bearer ${ordersToken.slice(0, -2)}xx` }))).toEqual([401, 'UHLP_SOURCE_UNAUTHORIZED']);
      expect(await codeOf(await publishEndpoint('orders', 'not json', auth))).toEqual([400, 'UHLP_BAD_REQUEST']);
      const unknownToken = await signedBy(core, 'queue-publish', 'shop', 'nope');
      expect(await codeOf(await publishEndpoint('nope', '{}', { authorization: `Bearer ${unknownToken}` }))).toEqual([404, 'UHLP_SOURCE_ROUTE_NOT_FOUND']);
    }, 120_000);

    it('retries a poison message with backoff, dead-letters it after maxAttempts, and redrives it', async () => {
      const published = await publishEndpoint('poison', '{"bad":true}', { authorization: `Bearer ${publishToken}` });
      expect(published.status).toBe(202);
      const { invocationId } = (await published.json()) as { invocationId: string };
      const deadLetters = async (queue: string): Promise<any[]> => (await adminJson(core, `/_uhlp/queues/shop/${queue}/dead`)).deadLetters;
      await waitFor(async () => (await deadLetters('poison')).length === 1, { timeoutMs: 15_000, what: 'a dead letter' });
      const attempts = (await readLog(core, 'shop', 'poison')).filter((e) => e.invocationId === invocationId).map((e) => e.attempt);
      expect(attempts).toEqual([1, 2, 3]);
      const dead = JSON.parse(await queuesCli(core, ['dlq', 'shop', 'poison', '--json'])).deadLetters[0];
      // The last error whole: its code, its message and where the script threw, relative to the app.
      expect(dead).toMatchObject({
        invocationId,
        attempts: 3,
        reason: 'failed',
        error: 'UHLP_SCRIPT_EXCEPTION',
        errorMessage: 'poison message',
        errorStack: 'at poison (scripts/sources.mjs:29:9)',
        payload: { bad: true },
      });
      const table = await queuesCli(core, ['dlq', 'shop', 'poison']);
      expect(table).toContain('UHLP_SCRIPT_EXCEPTION');
      expect(table).toContain('poison message');
      // Each failed delivery is a warn line with its code and message (and the turn's own, with the stack).
      const warned = core
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line['level'] === 40 && line['invocationId'] === invocationId);
      expect(warned.map((line) => [line['attempt'], line['code'], line['msg'], line['next']])).toEqual([
        [1, 'UHLP_SCRIPT_EXCEPTION', 'poison message', 'retry'],
        [2, 'UHLP_SCRIPT_EXCEPTION', 'poison message', 'retry'],
        [3, 'UHLP_SCRIPT_EXCEPTION', 'poison message', 'dead'],
      ]);

      expect(await queuesCli(core, ['redrive', 'shop', 'poison'])).toContain('redriven 1 message(s)');
      await waitFor(async () => (await readLog(core, 'shop', 'poison')).filter((e) => e.invocationId === invocationId).length === 6, { timeoutMs: 15_000, what: 'the redriven attempts' });
      await waitFor(async () => (await deadLetters('poison')).length === 1, { timeoutMs: 10_000, what: 'dead again' });
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      expect(metrics).toMatch(/uhlp_dead_letters_total\{app="shop",source="queue",reason="failed"\} 2/);
      expect(metrics).toMatch(/uhlp_deliveries_total\{app="shop",source="queue",outcome="retry"\} [1-9]/);
    }, 120_000);

    it('dead-letters a message older than maxAgeSeconds without running it', async () => {
      const token = await signedBy(core, 'queue-publish', 'shop', 'stale');
      const auth = { authorization: `Bearer ${token}` };
      // The first holds the route (concurrency 1) past the second's maxAgeSeconds.
      await publishEndpoint('stale', '{"n":1,"waitMs":1800}', auth);
      await publishEndpoint('stale', '{"n":2,"waitMs":10}', auth);
      const deadLetters = async (): Promise<any[]> => (await adminJson(core, '/_uhlp/queues/shop/stale/dead')).deadLetters;
      await waitFor(async () => (await deadLetters()).length === 1, { timeoutMs: 15_000, what: 'the expired message' });
      const dead = (await deadLetters())[0];
      expect(dead).toMatchObject({ reason: 'expired', attempts: 1, payload: { n: 2 } });
      const entries = await readLog(core, 'shop', 'stale');
      expect(entries.map((e) => [e.phase, e.payload.n])).toEqual([
        ['start', 1],
        ['done', 1],
      ]);
    });

    it('runs a callback once through its signed URL and refuses it replayed, forged or expired', async () => {
      const created = await post('/shop/callback', { name: 'payment-done', correlation: 'order-42' });
      expect(created.status).toBe(200);
      expect(created.json.url).toBe(`${core.url}${created.json.path}`);
      const hit = await fetch(created.json.url, { method: 'POST', body: '{"paid":true}', headers: { 'content-type': 'application/json', 'x-signature': 'abc' } });
      expect(hit.status).toBe(202);
      const { invocationId } = (await hit.json()) as { invocationId: string };
      await waitFor(async () => (await readLog(core, 'shop', 'payment-done')).length === 1, { timeoutMs: 10_000, what: 'the callback run' });
      const [entry] = await readLog(core, 'shop', 'payment-done');
      expect(entry).toMatchObject({ source: 'callback', invocationId, details: { name: 'payment-done', correlation: 'order-42', body: '{"paid":true}', bodyEncoding: 'utf8', callbackUrl: created.json.path } });
      expect(entry!.details.headers).toMatchObject({ 'x-signature': 'abc', 'content-type': 'application/json' });

      const codeOf = async (url: string): Promise<[number, string]> => {
        const response = await fetch(url, { method: 'POST', body: '{}' });
        return [response.status, ((await response.json()) as { code: string }).code];
      };
      expect(await codeOf(created.json.url)).toEqual([409, 'UHLP_CALLBACK_USED']);
      const fresh = await post('/shop/callback', { name: 'payment-done', correlation: 'order-43' });
      const token: string = fresh.json.path.split('/').pop();
      const [version, claims, mac] = token.split('.');
      const forgedClaims = Buffer.from(Buffer.from(claims!, 'base64url').toString().replace('order-43', 'order-44')).toString('base64url');
      expect(await codeOf(`${core.url}/_uhlp/callbacks/${version}.${forgedClaims}.${mac}`)).toEqual([403, 'UHLP_CALLBACK_INVALID']);
      expect(await codeOf(`${core.url}/_uhlp/callbacks/not-a-token`)).toEqual([403, 'UHLP_CALLBACK_INVALID']);
      expect(await codeOf(`${core.url}/_uhlp/callbacks/${'x'.repeat(5000)}`)).toEqual([403, 'UHLP_CALLBACK_INVALID']);

      const short = await post('/shop/callback', { name: 'short', correlation: 'late' });
      const expiresAt = Date.parse(short.json.expiresAt);
      await waitFor(() => Date.now() > expiresAt + 50, { timeoutMs: 5_000, what: 'the short callback to expire' });
      expect(await codeOf(short.json.url)).toEqual([410, 'UHLP_CALLBACK_EXPIRED']);
      // Nothing ran for any refused request: the forged one's correlation never reached the script.
      expect(await readLog(core, 'shop', 'payment-done')).toHaveLength(1);
      expect(await readLog(core, 'shop', 'short')).toHaveLength(0);
      // The fresh one still works: forging it did not use it up.
      expect((await fetch(fresh.json.url, { method: 'POST', body: 'x' })).status).toBe(202);
    });

    it('delivers an internal event to the routes whose from allows it, across apps, and cuts loops at their depth', async () => {
      const emitted = await post('/shop/emit', { event: 'order.created', payload: { order: 7 } });
      expect(emitted.json).toMatchObject({ delivered: 2 });
      await waitFor(async () => (await readLog(core, 'audit', 'order.created')).length === 1 && (await readLog(core, 'shop', 'order.created')).length === 1, {
        timeoutMs: 10_000,
        what: 'both deliveries',
      });
      const [audit] = await readLog(core, 'audit', 'order.created');
      expect(audit).toMatchObject({ source: 'trigger', app: 'audit', details: { sourceAppId: 'shop', triggerEvent: 'order.created', payload: { order: 7 }, depth: 1 } });

      // audit's order.secret routes take events of audit and of billing only.
      expect((await post('/shop/emit', { event: 'order.secret', payload: {} })).json).toMatchObject({ delivered: 0 });
      const denied = await post('/shop/emit', { event: 'order.other', payload: {} });
      expect(denied.status).toBe(403);
      expect(denied.json.code).toBe('UHLP_CAPABILITY_DENIED');

      expect((await post('/shop/emit', { event: 'loop.ping', payload: {} })).json).toMatchObject({ delivered: 1 });
      await waitFor(async () => (await readLog(core, 'shop', 'loop')).length === 8, { timeoutMs: 20_000, what: 'the loop to end' });
      const loop = await readLog(core, 'shop', 'loop');
      expect(loop.map((e) => e.depth)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect(loop.map((e) => e.refused ?? null)).toEqual([null, null, null, null, null, null, null, 'UHLP_TRIGGER_DEPTH_EXCEEDED']);
      expect(await readLog(core, 'audit', 'order.secret')).toHaveLength(0);
    });

    it('answers Prefer: respond-async with 202 and keeps the result at its Location', async () => {
      const accepted = await fetch(`${core.url}/shop/slow`, { headers: { prefer: 'respond-async, wait=0' } });
      expect(accepted.status).toBe(202);
      const location = accepted.headers.get('location')!;
      expect(location).toMatch(/^\/_uhlp\/invocations\/[A-Za-z0-9_-]{22}$/);
      expect(accepted.headers.get('preference-applied')).toBe('respond-async');
      let record: any;
      await waitFor(
        async () => {
          const response = await fetch(`${core.url}${location}`);
          record = await response.json();
          return response.status === 200;
        },
        { timeoutMs: 10_000, what: 'the result' },
      );
      expect(record).toMatchObject({ state: 'completed', response: { status: 200, body: '{"slow":true}', bodyEncoding: 'utf8' } });
      const missing = await fetch(`${core.url}/_uhlp/invocations/AAAAAAAAAAAAAAAAAAAAAA`);
      expect(missing.status).toBe(404);
      expect(((await missing.json()) as { code: string }).code).toBe('UHLP_INVOCATION_NOT_FOUND');
    });

    it('counts cron fires and deliveries, charts queue depth, and writes each delivery to the ledger', async () => {
      const metrics = await (await fetch(`${core.url}/metrics`)).text();
      expect(metrics).toMatch(/uhlp_cron_fires_total\{app="shop",job="tick"\} [1-9]/);
      expect(metrics).toMatch(/uhlp_cron_lateness_seconds_count\{app="shop"\} [1-9]/);
      expect(metrics).toMatch(/uhlp_deliveries_total\{app="shop",source="cron",outcome="ok"\} [1-9]/);
      expect(metrics).toMatch(/uhlp_queue_depth\{app="shop",source="queue",name="orders"\} \d/);
      expect(metrics).toMatch(/uhlp_queue_oldest_age_seconds\{app="shop",source="queue",name="poison"\} /);

      const [entry] = await readLog(core, 'shop', 'tick');
      const requestData = `{"cronDetails":{"jobId":"tick","scheduledTime":"${entry!.details.scheduledTime}"},"delivery":{"attempt":1,"invocationId":"${entry!.invocationId}"},"source":"cron"}`;
      const hash = `sha256:${createHash('sha256').update(requestData).digest('hex')}`;
      await waitFor(() => ledgerText(core.dataDir).includes(hash), { timeoutMs: 10_000, what: 'the cron turn in the ledger' });

      const listed = await queuesCli(core, ['ls']);
      expect(listed).toMatch(/^ROUTE\s+SOURCE\s+DEPTH\s+PENDING\s+RETRYING\s+OLDEST_S\s+DEAD/);
      expect(listed).toMatch(/shop\/poison\s+queue\s+\d+\s+\d+\s+\d+\s+[\d.]+\s+1/);
      expect(listed).toMatch(/shop\/tick\s+cron/);
    }, 120_000);
  });
}

/** Every exec ledger of a data directory, concatenated. */
function ledgerText(dataDir: string): string {
  const sessions = path.join(dataDir, 'planes', 'development', 'sessions');
  let text = '';
  for (const session of readdirSync(sessions)) {
    try {
      text += readFileSync(path.join(sessions, session, 'ledger', 'exec.jsonl'), 'utf8');
    } catch {
      // A session with no exec ledger yet.
    }
  }
  return text;
}
