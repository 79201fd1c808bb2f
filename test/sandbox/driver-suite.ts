/**
 * The behaviour every sandbox driver must have, as one suite each driver runs
 * (process, Docker, ...) for each runner (the jit-runner, the llm-orchestrator):
 * start a runner that answers /execute per the contract, report how a sandbox
 * died, destroy idempotently, and leave nothing behind on close.
 */
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateExecuteResponse, type ExecuteRequest } from '../../src/contract/execute-contract.js';
import type { PoolSpec } from '../../src/apps/schema/app-definition-schema.js';
import { poolSpec } from '../helpers/pool-spec.js';
import { waitFor } from '../helpers/wait-for.js';
import { SandboxClient } from '../../src/sandbox/sandbox-client.js';
import type { SandboxDriver, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import type { RunnerProfile, RunnerSetup } from './runner-profiles.js';

export const SUITE_REVISION = 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0';

/** The suite's behaviours as a Python script, for the python runner (behaviours.py beside behaviours.mjs). */
const PYTHON_BEHAVIOURS = [
  'import asyncio',
  'import os',
  '',
  'def hello(event, ctx):',
  '    return {"hello": event["triggerDetails"]["payload"]["name"], "pid": os.getpid(), "nice": os.getpriority(os.PRIO_PROCESS, 0)}',
  '',
  'def exit(event, ctx):',
  '    os._exit(7)',
  '',
  'def hog(event, ctx):',
  '    keep = []',
  '    while True:',
  '        keep.append([0.5] * 1_000_000)',
  '',
  'async def slow(event, ctx):',
  '    await asyncio.sleep(0.3)',
  '    return {"pid": os.getpid()}',
  '',
].join('\n');

/** A definitions root with one revision holding the suite's scripts (JavaScript and Python). */
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
  writeFileSync(path.join(scripts, 'behaviours.py'), PYTHON_BEHAVIOURS);
  return root;
}

export function suitePool(overrides: Partial<PoolSpec> = {}): PoolSpec {
  return poolSpec({ name: 'suite', minWarm: 0, maxSize: 8, maxQueue: 10, limits: { memoryMb: 64, cpus: 0.5, timeoutMs: 3000 }, ...overrides });
}

export function executeBody(requestId: string, fn: string, name = 'x', script = 'scripts/behaviours.mjs'): string {
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
      taskDetails: { handler: 'JIT', revision: SUITE_REVISION, script, function: fn },
    },
  };
  return JSON.stringify(request);
}

export interface DriverSuiteOptions {
  makeDriver(): SandboxDriver | Promise<SandboxDriver>;
  /** The runner the suite's sandboxes run (runner-profiles.ts). */
  runner: RunnerProfile;
  /** Labels the driver should attach. */
  labels?: Record<string, string>;
  /** The cause a runner that blows its V8 heap or memory limit is reported with. */
  memoryExhaustionCause: 'heap-limit' | 'oom';
  /** How soon destroy('timeout') must have stopped the sandbox: it never waits for a drain. @defaultValue 2000 */
  destroyWithinMs?: number;
}

export function describeSandboxDriver(name: string, options: DriverSuiteOptions): void {
  const { runner } = options;
  describe(`${name} driver, ${runner.runner} runner`, () => {
    let driver: SandboxDriver;
    let spec: SandboxSpec;
    let setup: RunnerSetup;

    beforeAll(async () => {
      driver = await options.makeDriver();
      setup = await runner.prepare();
      spec = {
        appId: 'suite',
        pool: suitePool({ runner: runner.runner }),
        definitionsRoot: setup.definitionsRoot,
        ...(setup.mcpSocket ? { mcpSocket: setup.mcpSocket } : {}),
        labels: options.labels ?? {},
      };
    });
    afterAll(async () => {
      await driver?.close();
      await setup?.close();
    });

    it('starts a sandbox whose runner answers /execute per the contract', async () => {
      const handle = await driver.create(spec);
      const client = new SandboxClient(handle.endpoint);
      expect(await client.probe(2000)).toBe(true);
      const response = await client.execute(setup.body('r-1', 'hello', 'ada'), 'r-1', 3000);
      expect(response.status).toBe(200);
      const answer = JSON.parse(response.body.toString()) as unknown;
      expect(validateExecuteResponse(answer)).toBeUndefined();
      expect(answer).toMatchObject({ requestId: 'r-1', resultType: 'generic', data: setup.hello('ada'), metrics: { execution_time_ms: expect.any(Number) } });
      client.close();
      await driver.destroy(handle, 'shutdown');
      expect(await handle.exited).toBe('shutdown');
    });

    it('answers a request it cannot run with an error result, and one that breaks the contract with 400', async () => {
      const handle = await driver.create(spec);
      const client = new SandboxClient(handle.endpoint);
      // A task for another runner: the contract holds, the answer is an error result.
      const foreign = JSON.parse(setup.body('f-1', 'hello')) as ExecuteRequest;
      const runsScripts = runner.runner === 'jit' || runner.runner === 'python';
      foreign.context.taskDetails = runsScripts ? { handler: 'LLM', revision: SUITE_REVISION, llm: { prompt: 'p.njk' } } : { handler: 'JIT', revision: SUITE_REVISION, script: 'scripts/behaviours.mjs' };
      const refused = await client.execute(JSON.stringify(foreign), 'f-1', 3000);
      expect(refused.status).toBe(200);
      const answer = JSON.parse(refused.body.toString()) as unknown;
      expect(validateExecuteResponse(answer)).toBeUndefined();
      expect(answer).toMatchObject({ requestId: 'f-1', resultType: 'error', data: { code: 'UHLP_EXECUTE_BAD_REQUEST' } });
      const mismatched = await client.execute(setup.body('f-2', 'hello'), 'f-3', 3000);
      expect(mismatched.status).toBe(400);
      expect(JSON.parse(mismatched.body.toString())).toMatchObject({ error: 'UHLP_EXECUTE_BAD_REQUEST' });
      const broken = await client.execute('{"requestId":"f-4"}', 'f-4', 3000);
      expect(broken.status).toBe(400);
      client.close();
      await driver.destroy(handle, 'shutdown');
    });

    if (runner.behaviours.has('exit')) {
      it('reports a sandbox whose script exits as a crash', async () => {
        const handle = await driver.create(spec);
        const client = new SandboxClient(handle.endpoint);
        await expect(client.execute(setup.body('r-2', 'exit'), 'r-2', 3000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
        expect(await handle.exited).toBe('crash');
        client.close();
        await driver.destroy(handle, 'crash');
      });
    }

    if (runner.behaviours.has('hog')) {
      it(`reports memory exhaustion as ${options.memoryExhaustionCause}`, async () => {
        const handle = await driver.create(spec);
        const client = new SandboxClient(handle.endpoint);
        await expect(client.execute(setup.body('r-3', 'hog'), 'r-3', 20_000)).rejects.toMatchObject({ name: 'SandboxTransportError' });
        expect(await handle.exited).toBe(options.memoryExhaustionCause);
        client.close();
        await driver.destroy(handle, options.memoryExhaustionCause);
      });
    }

    it('destroys a timed-out sandbox at once, and destroy is idempotent', async () => {
      const handle = await driver.create(spec);
      const started = Date.now();
      await driver.destroy(handle, 'timeout');
      expect(Date.now() - started).toBeLessThan(options.destroyWithinMs ?? 2000);
      expect(await handle.exited).toBe('timeout');
      await driver.destroy(handle, 'timeout');
      const client = new SandboxClient(handle.endpoint);
      expect(await client.probe(500)).toBe(false);
      client.close();
    });

    it("runs the pool's concurrency of executions at once on one sandbox, and refuses one more with 429", async () => {
      const handle = await driver.create({ ...spec, pool: suitePool({ runner: runner.runner, concurrency: 2 }) });
      const client = new SandboxClient(handle.endpoint);
      const both = Promise.all(['s-1', 's-2'].map((id) => client.execute(setup.body(id, 'slow'), id, 3000)));
      // Both running before the third arrives, however slow the machine is to start them.
      const health = new SandboxClient(handle.endpoint);
      await waitFor(async () => (await health.health(1000))?.running === 2, { timeoutMs: 2000, intervalMs: 5, what: 'two executions running' });
      health.close();
      const third = await client.execute(setup.body('s-3', 'slow'), 's-3', 3000);
      expect(third.status).toBe(429);
      expect(JSON.parse(third.body.toString())).toMatchObject({ error: 'UHLP_RUNNER_BUSY' });
      const answers = await both;
      expect(answers.map((a) => a.status)).toEqual([200, 200]);
      if (setup.pidOf) expect(new Set(answers.map((a) => setup.pidOf!(JSON.parse(a.body.toString()).data))).size).toBe(1);
      client.close();
      await driver.destroy(handle, 'shutdown');
    });

    it('starts sandboxes concurrently, each with its own endpoint', async () => {
      const handles = await Promise.all(Array.from({ length: 4 }, () => driver.create(spec)));
      expect(new Set(handles.map((h) => JSON.stringify(h.endpoint))).size).toBe(4);
      const answers = await Promise.all(
        handles.map(async (handle, i) => {
          const client = new SandboxClient(handle.endpoint);
          const response = await client.execute(setup.body(`c-${i}`, 'hello', `n${i}`), `c-${i}`, 3000);
          client.close();
          return JSON.parse(response.body.toString()).data as unknown;
        }),
      );
      answers.forEach((data, i) => expect(data).toMatchObject(setup.hello(`n${i}`)));
      await Promise.all(handles.map((h) => driver.destroy(h, 'shutdown')));
    });
  });
}
