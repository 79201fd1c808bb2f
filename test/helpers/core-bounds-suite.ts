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
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';

const MIB = 1024 * 1024;

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
