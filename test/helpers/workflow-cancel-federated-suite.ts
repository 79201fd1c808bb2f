/**
 * A cancel cuts a federated MCP server's call in flight, on the driver given
 * with Redis state: a workflow's tool node calls a remote (streamable HTTP)
 * server whose tool takes 30 s; cancelling the run closes the core's request
 * to that server — the server sees its connection closed before it answered —
 * within the bound docs/workflows.md states for a cancel (2 s), and the run
 * ends `cancelled`. The server listens on the host's loopback on every
 * driver: a sandbox reaches tools only through the core's MCP server, and the
 * core is what calls the federated one.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg } from 'node:os';
import path from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { createMcpHandler, McpServer } from '@modelcontextprotocol/server';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, uniqueKeyPrefix } from './redis-url.js';
import { copyFixture, startUhlpDev, type UhlpProcess } from './uhlp-process.js';
import { waitFor } from './wait-for.js';
import { sendToWorkflow } from './workflow-requests.js';
import { dropKeys } from '../sources/redis-keys.js';
import type { DriverSuiteOptions } from './driver-suite-options.js';

/** The bound docs/workflows.md states: from the cancel's request to the run ended and its calls closed. */
const CANCEL_BOUND_MS = 2_000;

export interface FederatedCancelSuiteOptions extends DriverSuiteOptions {
  /** The ids of the app's sandboxes that exist now (a Docker core's containers): the cut execution's must go. */
  readonly sandboxes?: (app: string) => Promise<ReadonlySet<string>>;
}

export function describeFederatedCancel(options: FederatedCancelSuiteOptions): void {
  const startTimeoutMs = options.startTimeoutMs ?? 180_000;
  describe(`a cancel cuts a federated server's call in flight (${options.driver} driver, Redis state)`, () => {
    let core: UhlpProcess;
    let server: http.Server;
    let redis: Redis;
    const prefix = uniqueKeyPrefix('wf-cancel-fed');
    /** The server's tools/call requests: when each came, and when its connection closed before the answer. */
    const calls: Array<{ at: number; closedEarly?: number; answered?: number }> = [];

    beforeAll(async () => {
      await options.before?.();
      const handler = createMcpHandler(() => {
        const mcp = new McpServer({ name: 'slow', version: '1.0.0' });
        mcp.registerTool('wait', { description: 'Answers after 30 s' }, async () => {
          await new Promise((resolve) => setTimeout(resolve, 30_000).unref());
          return { content: [{ type: 'text', text: 'waited' }] };
        });
        return mcp;
      });
      server = http.createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const body = req.method === 'POST' ? Buffer.concat(chunks) : undefined;
          if (body !== undefined && body.toString().includes('"tools/call"')) {
            const call: (typeof calls)[number] = { at: performance.now() };
            calls.push(call);
            res.on('close', () => {
              if (!res.writableFinished) call.closedEarly = performance.now();
              else call.answered = performance.now();
            });
          }
          const headers = new Headers();
          for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
          void handler.fetch(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, ...(body ? { body } : {}) })).then(async (response) => {
            if (res.destroyed) return;
            response.headers.forEach((value, name) => res.setHeader(name, value));
            res.writeHead(response.status);
            res.end(Buffer.from(await response.arrayBuffer()));
          }, () => res.destroy());
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const port = (server.address() as AddressInfo).port;
      const dir = copyFixture('workflow-cancel-federated');
      const appFile = path.join(dir, 'apps', 'fed', 'app.yaml');
      writeFileSync(appFile, readFileSync(appFile, 'utf8').replace('SLOW_PORT', String(port)));
      core = await startUhlpDev(dir, ['--driver', options.driver], startTimeoutMs, undefined, { UHLP_STATE: TEST_REDIS_URL, UHLP_STATE_PREFIX: prefix, UHLP_MCP_ALLOW_PRIVATE: `127.0.0.1:${port}` });
      redis = new Redis(TEST_REDIS_URL);
    }, startTimeoutMs + 70_000);

    afterAll(async () => {
      redis?.disconnect();
      await core?.stop();
      server?.closeAllConnections();
      server?.close();
      await dropKeys(prefix);
    });

    it("closes the server's request when the run is cancelled, within the cancel's bound", async () => {
      const answer = sendToWorkflow(`${core.url}/fed/flow`, {});
      let runId: string | undefined;
      await waitFor(
        async () => {
          runId = (await redis.zrange(`${prefix}runs:active`, '0', '-1'))[0];
          return runId !== undefined && calls.length === 1;
        },
        { timeoutMs: 60_000, what: "the tool node's call at the federated server" },
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(calls[0]!.closedEarly).toBeUndefined();
      const sandboxesBefore = await options.sandboxes?.('fed');

      const started = performance.now();
      const cancelled = await fetch(`${core.url}/_uhlp/runs/${runId}/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ by: 'tester' }) });
      expect(cancelled.status).toBe(200);
      expect(((await cancelled.json()) as Record<string, unknown>)['status']).toBe('cancelled');
      await waitFor(() => calls[0]!.closedEarly !== undefined, { timeoutMs: CANCEL_BOUND_MS, what: "the server's request closed" });
      const closedMs = calls[0]!.closedEarly! - started;
      console.log(`${options.driver} driver: cancel to the federated server's request closed: ${closedMs.toFixed(0)} ms (load average ${loadavg()[0]!.toFixed(1)})`);
      expect(closedMs).toBeLessThan(CANCEL_BOUND_MS);
      expect(calls[0]!.answered).toBeUndefined();
      expect((await answer).json).toMatchObject({ code: 'UHLP_WORKFLOW_CANCELLED', details: { by: 'tester', via: 'http' } });
      if (sandboxesBefore !== undefined) {
        expect(sandboxesBefore.size, 'the sandboxes of the app while its run waits on the tool').toBeGreaterThan(0);
        // The execution whose tool call was cut had its sandbox destroyed (warm ones for the pool are new).
        await waitFor(
          async () => {
            const now = await options.sandboxes!('fed');
            return [...sandboxesBefore].some((id) => !now.has(id));
          },
          { timeoutMs: 10_000, what: "the cut execution's sandbox removed" },
        );
      }
    }, 120_000);
  });
}
