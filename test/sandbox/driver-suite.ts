/**
 * The behaviour every sandbox driver must have, as one suite each driver runs
 * (process, Docker, ...): start a runner that answers /execute, report how a
 * sandbox died, destroy idempotently, and leave nothing behind on close.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecuteRequest } from '../../src/contract/execute-contract.js';
import type { PoolSpec } from '../../src/definitions/app-definition-schema.js';
import { poolSpec } from '../helpers/pool-spec.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxDriver, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';

export const SUITE_REVISION = 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0';

/** A definitions root with one revision holding the suite's scripts. */
export function makeSuiteDefinitions(): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'uhlp-driver-suite-'));
  // mkdtemp makes it private; container runners read it as a non-root uid of their own.
  chmodSync(root, 0o755);
  const scripts = path.join(root, SUITE_REVISION, 'scripts');
  mkdirSync(scripts, { recursive: true });
  writeFileSync(
    path.join(scripts, 'behaviours.mjs'),
    [
      "import os from 'node:os';",
      'export const hello = (event) => ({ hello: event.triggerDetails.payload.name, pid: process.pid, nice: os.getPriority() });',
      'export const exit = () => process.exit(7);',
      'export const hog = () => { const keep = []; for (;;) keep.push(new Array(1e6).fill(Math.random())); };',
      'export const slow = async () => { await new Promise((r) => setTimeout(r, 300)); return { pid: process.pid }; };',
    ].join('\n'),
  );
  return root;
}

export function suitePool(overrides: Partial<PoolSpec> = {}): PoolSpec {
  return poolSpec({ name: 'suite', minWarm: 0, maxSize: 8, maxQueue: 10, limits: { memoryMb: 64, cpus: 0.5, timeoutMs: 3000 }, ...overrides });
}

export function executeBody(requestId: string, fn: string, name = 'x'): string {
  const request: ExecuteRequest = {
    requestId,
    requestData: { source: 'trigger', triggerDetails: { sourceAppId: 'test', triggerEvent: 'suite', payload: { name } } },
    context: {
      appId: 'suite',
      componentId: fn,
      mcp_endpoint: 'http://127.0.0.1:1/mcp',
      stateConfig: { type: 'mcp_tool' },
      configuration: {},
      applicationInfo: { deploymentMode: 'development' },
      taskDetails: { handler: 'JIT', revision: SUITE_REVISION, script: 'scripts/behaviours.mjs', function: fn },
    },
  };
  return JSON.stringify(request);
}

export interface DriverSuiteOptions {
  makeDriver(): SandboxDriver | Promise<SandboxDriver>;
  /** Labels the driver should attach. */
  labels?: Record<string, string>;
  /** The cause a runner that blows its V8 heap or memory limit is reported with. */
  memoryExhaustionCause: 'heap-limit' | 'oom';
}

export function describeSandboxDriver(name: string, options: DriverSuiteOptions): void {
  describe(`${name} driver`, () => {
    let driver: SandboxDriver;
    let spec: SandboxSpec;

    beforeAll(async () => {
      driver = await options.makeDriver();
      spec = { appId: 'suite', pool: suitePool(), definitionsRoot: makeSuiteDefinitions(), labels: options.labels ?? {} };
    });
    afterAll(async () => {
      await driver?.close();
    });

    it('starts a sandbox whose runner answers /execute', async () => {
      const handle = await driver.create(spec);
      const client = new SandboxClient(handle.endpoint);
      expect(await client.probe(2000)).toBe(true);
      const response = await client.execute(executeBody('r-1', 'hello', 'ada'), 'r-1', 3000);
      expect(response.status).toBe(200);
      expect(JSON.parse(response.body.toString())).toMatchObject({ requestId: 'r-1', resultType: 'generic', data: { hello: 'ada' } });
      client.close();
      await driver.destroy(handle, 'shutdown');
      expect(await handle.exited).toBe('shutdown');
    });

    it('reports a sandbox whose script exits as a crash', async () => {
      const handle = await driver.create(spec);
      const client = new SandboxClient(handle.endpoint);
      await expect(client.execute(executeBody('r-2', 'exit'), 'r-2', 3000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
      expect(await handle.exited).toBe('crash');
      client.close();
      await driver.destroy(handle, 'crash');
    });

    it(`reports memory exhaustion as ${options.memoryExhaustionCause}`, async () => {
      const handle = await driver.create(spec);
      const client = new SandboxClient(handle.endpoint);
      await expect(client.execute(executeBody('r-3', 'hog'), 'r-3', 20_000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
      expect(await handle.exited).toBe(options.memoryExhaustionCause);
      client.close();
      await driver.destroy(handle, options.memoryExhaustionCause);
    });

    it('destroys a timed-out sandbox at once, and destroy is idempotent', async () => {
      const handle = await driver.create(spec);
      const started = Date.now();
      await driver.destroy(handle, 'timeout');
      expect(Date.now() - started).toBeLessThan(2000);
      expect(await handle.exited).toBe('timeout');
      await driver.destroy(handle, 'timeout');
      const client = new SandboxClient(handle.endpoint);
      expect(await client.probe(500)).toBe(false);
      client.close();
    });

    it("runs the pool's concurrency of executions at once on one sandbox, and refuses one more with 429", async () => {
      const handle = await driver.create({ ...spec, pool: suitePool({ concurrency: 2 }) });
      const client = new SandboxClient(handle.endpoint);
      const started = performance.now();
      const both = Promise.all(['s-1', 's-2'].map((id) => client.execute(executeBody(id, 'slow'), id, 3000)));
      await new Promise((r) => setTimeout(r, 100));
      const third = await client.execute(executeBody('s-3', 'slow'), 's-3', 3000);
      expect(third.status).toBe(429);
      expect(JSON.parse(third.body.toString())).toMatchObject({ error: 'UHLP_RUNNER_BUSY' });
      const answers = await both;
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      expect(new Set(answers.map((a) => JSON.parse(a.body.toString()).data.pid)).size).toBe(1);
      // Side by side, not one after the other.
      expect(performance.now() - started).toBeLessThan(580);
      client.close();
      await driver.destroy(handle, 'shutdown');
    });

    it('starts sandboxes concurrently, each with its own endpoint', async () => {
      const handles = await Promise.all(Array.from({ length: 4 }, () => driver.create(spec)));
      expect(new Set(handles.map((h) => JSON.stringify(h.endpoint))).size).toBe(4);
      const pids = await Promise.all(
        handles.map(async (handle, i) => {
          const client = new SandboxClient(handle.endpoint);
          const response = await client.execute(executeBody(`c-${i}`, 'hello'), `c-${i}`, 3000);
          client.close();
          return JSON.parse(response.body.toString()).data.pid as number;
        }),
      );
      expect(pids).toHaveLength(4);
      await Promise.all(handles.map((h) => driver.destroy(h, 'shutdown')));
    });
  });
}
