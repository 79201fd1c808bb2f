/**
 * The csjs runner through a driver (process sandbox or Docker container): a
 * bundle fetched over the core's MCP socket, verified and run with kv through
 * MCP; its execution-time refusals (a bundle that does not hash to its
 * address, a manifest the invoker refuses); a memory bomb and an endless loop
 * stopped with the same sandbox still serving; log lines written just before
 * the handler returns kept; the manifest's host allowlist sent with a fetch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecuteRequest, ExecuteResponse } from '../../src/contract/execute-contract.js';
import { sha256Hex, writeCanonicalTar } from '../../src/contract/cs-bundle/canonical-tar.js';
import { buildBundle } from '../../src/contract/cs-bundle/function-bundle.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxDriver, SandboxHandle } from '../../src/sandbox/sandbox-driver.js';
import { FAKE_MCP_TOKEN, FakeToolError, startFakeMcpServer, type FakeMcpServer } from '../helpers/fake-mcp-server.js';
import { makeSuiteDefinitions, suitePool } from './driver-suite.js';

export interface CsjsSuiteOptions {
  readonly makeDriver: () => Promise<SandboxDriver>;
  readonly labels?: Record<string, string>;
}

const manifest = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ schema: 'cs.function.script.v1', runtime: 'cs-js', entry: 'function.js', handler: 'default', ...extra });

export function describeCsjsRunner(name: string, options: CsjsSuiteOptions): void {
  describe(`csjs runner: ${name}`, () => {
    let mcp: FakeMcpServer;
    let driver: SandboxDriver;
    let handle: SandboxHandle;
    let client: SandboxClient;
    let sequence = 0;
    const bundles = new Map<string, Buffer>();
    const logged: unknown[] = [];
    const fetched: Array<Record<string, unknown>> = [];
    const publish = (bytes: Buffer, sha256 = sha256Hex(bytes)): string => {
      bundles.set(sha256, bytes);
      return sha256;
    };
    const counter = publish(
      buildBundle({
        functionJs: `export default async (event, ctx) => { const n = await cs.kv.get('ctr:n'); cs.log.info({ n }); return { statusCode: 200, body: JSON.stringify({ n, tenant: ctx.tenant, version: ctx.version }) } }`,
        manifestJson: manifest({ capabilities: { kv: { prefixes: ['ctr:'], ops: ['get'] } } }),
      }).bytes,
    );
    // Logs written synchronously just before returning, with no cs call pending: none may be lost.
    const quick = publish(
      buildBundle({
        functionJs: `export default (event, ctx) => { cs.log.info('started'); cs.log.warn({ at: 'end' }); return { statusCode: 200, body: 'quick' } }`,
        manifestJson: manifest(),
      }).bytes,
    );
    // A manifest that allows only 127.0.0.1: the core must apply that list to every redirect hop, so it goes with the call.
    const fetcher = publish(
      buildBundle({
        functionJs: `export default async () => { try { await cs.http.fetch('http://127.0.0.1:8080/away'); return 'followed' } catch (e) { return { code: e.code } } }`,
        manifestJson: manifest({ capabilities: { http: { allowHosts: ['127.0.0.1'], timeoutMs: 1000 } } }),
      }).bytes,
    );
    const bomb = publish(buildBundle({ functionJs: `export default async () => { const a = []; for (;;) a.push(new Array(1e5).fill(Math.random())) }`, manifestJson: manifest({ limits: { memoryMb: 16 } }) }).bytes);
    const loop = publish(buildBundle({ functionJs: `export default async () => { for (;;) {} }`, manifestJson: manifest({ limits: { timeoutMs: 200 } }) }).bytes);
    // Stored by other means than publish: the invoker checks the manifest again.
    const badManifest = publish(writeCanonicalTar({ functionJs: 'export default async () => 1', manifestJson: manifest({ limits: { memoryMb: 1 } }) }));
    const forged = publish(Buffer.from(bundles.get(counter)!), 'f'.repeat(64));

    beforeAll(async () => {
      mcp = await startFakeMcpServer({
        revision: 'r',
        tools: {
          'core.fn.bundle': (args) => ({ sha256: args['sha256'], bundle: bundles.get(String(args['sha256']))!.toString('base64') }),
          'core.kv.get': () => ({ value: 41 }),
          'core.fn.log': (args) => {
            logged.push(...(args['lines'] as unknown[]));
            return { kept: 1 };
          },
          // As the core answers a redirect to a host outside the list the call was narrowed to.
          'tool.web.fetch': (args) => {
            fetched.push(args);
            throw new FakeToolError('UHLP_CAPABILITY_DENIED', 'host localhost is not in the allowlist this fetch was narrowed to', 403, {
              capability: 'web',
              rule: 'allowHosts',
              refusal: 'UHLP_WEB_HOST_NOT_ALLOWED',
              host: 'localhost',
            });
          },
        },
      });
      driver = await options.makeDriver();
      handle = await driver.create({
        appId: 'suite',
        pool: suitePool({ runner: 'csjs', limits: { memoryMb: 256, cpus: 1, timeoutMs: 5000 } }),
        definitionsRoot: makeSuiteDefinitions(),
        mcpSocket: mcp.socketPath,
        labels: options.labels ?? {},
      });
      client = new SandboxClient(handle.endpoint);
    }, 120_000);

    afterAll(async () => {
      client?.close();
      if (handle) await driver.destroy(handle, 'shutdown');
      await driver?.close();
      await mcp?.close();
    });

    async function execute(sha256: string | undefined): Promise<ExecuteResponse> {
      const requestId = `cs-${++sequence}`;
      const request: ExecuteRequest = {
        requestId,
        requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'suite', payload: {} } },
        context: {
          appId: 'suite',
          componentId: 'c',
          mcp_endpoint: 'http://core/mcp',
          mcp_token: FAKE_MCP_TOKEN,
          stateConfig: { type: 'mcp_tool' },
          configuration: {},
          applicationInfo: { deploymentMode: 'production' },
          taskDetails: { handler: 'JIT', revision: 'r', timeoutMs: 4000, ...(sha256 ? { cs: { tenant: 'suite', namespace: 'n', function: 'f', version: 3, sha256 } } : {}) },
        },
      };
      const raw = await client.execute(JSON.stringify(request), requestId, 10_000);
      expect(raw.status).toBe(200);
      return JSON.parse(raw.body.toString('utf8')) as ExecuteResponse;
    }

    it('fetches, verifies and runs a bundle, kv and logs through MCP', async () => {
      const answer = await execute(counter);
      expect(answer).toMatchObject({ resultType: 'httpResponse', data: { statusCode: 200, body: '{"n":41,"tenant":"suite","version":3}' } });
      expect(logged).toEqual([expect.objectContaining({ level: 'info', msg: '{"n":41}' })]);
    });

    it('keeps the log lines written synchronously just before the handler returns, and sends them to the core', async () => {
      logged.length = 0;
      for (let i = 0; i < 5; i++) expect((await execute(quick)).data).toMatchObject({ statusCode: 200, body: 'quick' });
      expect(logged).toHaveLength(10);
      expect(logged.slice(0, 2)).toEqual([expect.objectContaining({ level: 'info', msg: 'started' }), expect.objectContaining({ level: 'warn', msg: '{"at":"end"}' })]);
    });

    it("sends the manifest's http.allowHosts with every fetch through the core, and hands the core's refusal of a redirect hop to the bundle", async () => {
      const answer = await execute(fetcher);
      expect(fetched).toEqual([expect.objectContaining({ url: 'http://127.0.0.1:8080/away', allowHosts: ['127.0.0.1'] })]);
      expect(answer.data).toMatchObject({ statusCode: 200, body: JSON.stringify({ code: 'UHLP_WEB_HOST_NOT_ALLOWED' }) });
    });

    it('refuses a bundle whose bytes do not hash to its address, and a manifest the invoker refuses', async () => {
      expect((await execute(forged)).data).toMatchObject({ code: 'UHLP_FN_BUNDLE_INTEGRITY' });
      expect((await execute(badManifest)).data).toMatchObject({ code: 'UHLP_FN_MANIFEST_INVALID', details: { field: 'limits.memoryMb' } });
      expect((await execute(undefined)).data).toMatchObject({ code: 'UHLP_EXECUTE_BAD_REQUEST' });
    });

    it('stops a memory bomb at its budget and an endless loop at its deadline, and keeps serving', async () => {
      expect((await execute(bomb)).data).toMatchObject({ code: 'UHLP_CS_MEMORY_LIMIT' });
      expect((await execute(loop)).data).toMatchObject({ code: 'UHLP_CS_TIMEOUT', status: 504 });
      expect((await execute(counter)).resultType).toBe('httpResponse');
    });
  });
}
