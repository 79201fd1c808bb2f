/**
 * What the core takes from its sandboxes, end to end through `uhlp dev` on
 * each driver (test/core-bounds.test.ts, test/docker/core-bounds-docker.test.ts):
 *
 * - The MCP endpoint reads what its tools accept, whatever the ingress limit:
 *   a queue payload just under 1 MiB is published and delivered, one just
 *   over it gets the tool's 413, and one far over the endpoint's own limit
 *   gets 413 as well (never a broken pipe and a 502).
 * - A workflow's checkpoints carry its blackboard: ~350 KiB of it completes at
 *   the default run cap (1 MiB), and a blackboard over the cap fails the run
 *   with UHLP_WORKFLOW_STATE_TOO_LARGE, whether the checkpoint is within the
 *   endpoint's limit (the run service refuses it) or past it (the endpoint
 *   does, and the orchestrator fails the run).
 * - A script's httpResponse cannot name a session, turn or run: its x-uhlp-*
 *   headers are dropped, on a turn of the ambient session too.
 * - JSON nested deeper than 512 levels gets 400 UHLP_JSON_TOO_DEEP from every
 *   source: an HTTP body that says it is JSON to every handler kind (JIT, LLM,
 *   WORKFLOW), synchronously or as an async invocation, the queue endpoint,
 *   core.queue.publish and core.trigger.emit, a callback URL's delivery.
 * - A script's tool name with CR or LF in it (a header or a request of its own
 *   on the way to the core's MCP endpoint) is refused, and nothing is written.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedBy } from './sources-suite.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

const MIB = 1024 * 1024;
/** The body: 300,000 arrays deep, as JSON text (V8 parses it; what comes after overflows the stack). */
const DEEP = '['.repeat(300_000) + ']'.repeat(300_000);

export interface CoreBoundsSuiteOptions {
  readonly driver: 'process' | 'docker';
  /** Called before the core starts (the Docker engine check). */
  readonly before?: () => Promise<void>;
  readonly startTimeoutMs?: number;
}

export function describeCoreBounds(options: CoreBoundsSuiteOptions): void {
  describe(`what the core takes from sandboxes, on the ${options.driver} driver`, () => {
    let core: UhlpProcess;

    beforeAll(async () => {
      await options.before?.();
      // The defaults are what is tested (1 MiB ingress body and run cap), whatever the test's own environment says.
      core = await startUhlpDev(copyFixture('core-bounds'), ['--driver', options.driver], options.startTimeoutMs ?? 60_000, undefined, {
        UHLP_BODY_LIMIT_BYTES: '',
        UHLP_RUN_MAX_BYTES: '',
      });
    }, (options.startTimeoutMs ?? 60_000) + 30_000);

    afterAll(async () => {
      await core?.stop();
    });

    async function post(pathname: string, body: unknown): Promise<{ status: number; json: any; headers: Headers }> {
      const response = await fetch(`${core.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      return { status: response.status, json: await response.json(), headers: response.headers };
    }

    it('publishes a queue payload just under 1 MiB and delivers it; answers 413 UHLP_BODY_TOO_LARGE just over it and far over the endpoint limit', async () => {
      const under = await post('/bounds/publish', { bytes: MIB - 16 });
      expect(under.status, JSON.stringify(under.json)).toBe(200);
      expect(under.json).toMatchObject({ messageId: expect.any(String), invocationId: expect.any(String), queue: 'bounds/orders' });
      let received: any;
      await waitFor(
        async () => {
          const response = await fetch(`${core.url}/bounds/received/${encodeURIComponent(under.json.invocationId)}`);
          received = await response.json();
          return received !== null;
        },
        { timeoutMs: 20_000, what: 'the delivery of the published message' },
      );
      expect(received).toEqual({ bytes: MIB - 16 });

      // Over the tool's limit: the tool's answer. Far over the endpoint's own: the endpoint's, with the same code.
      for (const bytes of [MIB + 16, 5 * MIB]) {
        const over = await post('/bounds/publish', { bytes });
        expect(over.status, `${bytes}: ${JSON.stringify(over.json)}`).toBe(413);
        expect(over.json).toMatchObject({ code: 'UHLP_BODY_TOO_LARGE' });
      }
    });

    it("reads a request to /mcp on the TCP port up to the endpoint's own limit, past the ingress limit, and answers 413 past it", async () => {
      const { token } = (await (await fetch(`${core.operatorUrl}/_uhlp/dev/mcp-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ appId: 'bounds' }) })).json()) as { token: string };
      const call = (bytes: number): Promise<Response> =>
        fetch(`${core.url}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'core.kv.set', arguments: { key: 'got:big', value: 'v'.repeat(bytes) } } }),
        });
      // Over the ingress limit (1 MiB): the tool reads it, and answers as the tool does.
      const read = await call(1.5 * MIB);
      expect(read.status).toBe(200);
      expect(JSON.stringify(await read.json())).toMatch(/UHLP_MCP_INVALID_ARGUMENTS.*value is over 1048576 bytes/);
      const refused = await call(5 * MIB);
      expect(refused.status).toBe(413);
      expect(await refused.json()).toMatchObject({ code: 'UHLP_BODY_TOO_LARGE', details: { field: 'body' } });
    });

    it("refuses a script's tool name that would start a header or a request of its own, and the next call on its client is answered", async () => {
      const { status, json } = await post('/bounds/inject', {});
      expect(status, JSON.stringify(json)).toBe(200);
      // Each refused by the core with nothing written, and the client's kept-alive connection still in step.
      expect(json).toEqual({ outcomes: ['UHLP_MCP_CALL_FAILED', 'UHLP_MCP_CALL_FAILED', 'UHLP_MCP_CALL_FAILED', null] });
    });

    it("drops the x-uhlp-* headers of a script's httpResponse on a session-less turn, and keeps the others", async () => {
      const response = await fetch(`${core.url}/bounds/forge`);
      expect(response.status).toBe(200);
      expect(await response.text()).toBe('forged');
      expect(response.headers.get('x-kept')).toBe('yes');
      for (const name of ['x-uhlp-session-id', 'x-uhlp-run-id', 'x-uhlp-turn']) expect(response.headers.get(name), name).toBeNull();
      // A stored session's turn gets the core's own, never the script's.
      const stored = await fetch(`${core.url}/bounds/forge`, { headers: { 'x-uhlp-session': 'new' } });
      expect(stored.headers.get('x-uhlp-session-id')).toMatch(/^SES-/);
      expect(stored.headers.get('x-uhlp-turn')).toBe('1');
      expect(stored.headers.get('x-uhlp-run-id')).toBeNull();
    });

    it('answers 400 UHLP_JSON_TOO_DEEP for a 300,000-deep JSON body to every handler kind, at once or as an async invocation', async () => {
      for (const pathname of ['/bounds/echo', '/bounds/ask', '/bounds/board']) {
        const response = await fetch(`${core.url}${pathname}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: DEEP });
        const json = (await response.json()) as any;
        expect(response.status, `${pathname}: ${JSON.stringify(json).slice(0, 300)}`).toBe(400);
        expect(json).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP', details: { field: 'body', maxDepth: 512 } });
      }
      const accepted = await fetch(`${core.url}/bounds/board`, { method: 'POST', headers: { 'content-type': 'application/json', prefer: 'respond-async' }, body: DEEP });
      expect(accepted.status).toBe(202);
      let record: any;
      await waitFor(
        async () => {
          record = await (await fetch(`${core.url}${accepted.headers.get('location')}`)).json();
          return record.state !== 'running';
        },
        { timeoutMs: 20_000, what: 'the async invocation to end' },
      );
      expect(record.response.status).toBe(400);
      expect(JSON.parse(record.response.body)).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP' });
      // Text that does not say it is JSON is a JIT script's to read, whatever it looks like; JSON at the limit passes.
      const text = await fetch(`${core.url}/bounds/echo`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: DEEP });
      expect(await text.json()).toEqual({ bytes: DEEP.length });
      const atLimit = await fetch(`${core.url}/bounds/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(512) + ']'.repeat(512) });
      expect(await atLimit.json()).toEqual({ bytes: 1024 });
    });

    it('answers 400 UHLP_JSON_TOO_DEEP for deep JSON from the queue endpoint, core.queue.publish and core.trigger.emit, and from a callback URL before its token is spent', async () => {
      const token = await signedBy(core, 'queue-publish', 'bounds', 'orders');
      for (const body of [DEEP, '['.repeat(600) + ']'.repeat(600)]) {
        const published = await fetch(`${core.url}/_uhlp/queues/bounds/orders`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body });
        expect(published.status).toBe(400);
        expect(await published.json()).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP' });
      }
      for (const tool of ['queue', 'trigger']) {
        const refused = await post(`/bounds/deep/${tool}`, { depth: 600 });
        expect(refused.status, `${tool}: ${JSON.stringify(refused.json)}`).toBe(400);
        expect(refused.json).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP' });
        const passed = await post(`/bounds/deep/${tool}`, { depth: 500 });
        expect(passed.status, `${tool}: ${JSON.stringify(passed.json)}`).toBe(200);
      }

      // A callback URL is the caller's to use once: a body too deep is refused before the token is spent,
      // so the same URL then takes a body that is not.
      const created = await post('/bounds/callback', {});
      expect(created.status, JSON.stringify(created.json)).toBe(200);
      const called = await fetch(`${core.url}${created.json.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: DEEP });
      expect(called.status).toBe(400);
      expect(await called.json()).toMatchObject({ code: 'UHLP_JSON_TOO_DEEP', details: { field: 'body' } });
      const again = await fetch(`${core.url}${created.json.path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
      expect(again.status).toBe(202);
    });

    it('completes a workflow whose blackboard holds ~350 KiB at the default run cap', async () => {
      const answer = await post('/bounds/board', { bytes: 350 * 1024, one: 1, two: 2 });
      expect(answer.status, JSON.stringify(answer.json)).toBe(200);
      expect(answer.json).toEqual({ one: { step: 1 }, two: { step: 2 } });
      const run = (await (await fetch(`${core.url}/_uhlp/runs/${answer.headers.get('x-uhlp-run-id')}`)).json()) as any;
      expect(run.status).toBe('completed');
    });

    it('fails a run whose checkpoint is over the run cap with UHLP_WORKFLOW_STATE_TOO_LARGE, within the endpoint limit or past it', async () => {
      for (const bytes of [Math.round(1.5 * MIB), 4 * MIB]) {
        const answer = await post('/bounds/board', { bytes, one: 1, two: 2 });
        expect(answer.status, `${bytes}: ${JSON.stringify(answer.json)}`).toBe(500);
        expect(answer.json).toMatchObject({ code: 'UHLP_WORKFLOW_STATE_TOO_LARGE' });
        const run = (await (await fetch(`${core.url}/_uhlp/runs/${answer.headers.get('x-uhlp-run-id')}`)).json()) as any;
        expect(run).toMatchObject({ status: 'failed', error: { code: 'UHLP_WORKFLOW_STATE_TOO_LARGE' } });
      }
    });
  });
}
