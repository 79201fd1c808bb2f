/**
 * Warm dispatch: the same JIT component called through the core (`uhlp dev`, HTTP
 * ingress -> pool -> runner), directly on runners (POST /execute on their Unix
 * sockets), and through a bare forwarder built on the core's own HTTP server and
 * sandbox client (the floor of the core's design), side by side, in each of
 * DISPATCH_SHAPES: every path gets the same sandboxes, so none queues for one.
 */
import type { ProcessDriver } from '../src/sandbox/process-driver.js';
import type { SandboxSpec } from '../src/sandbox/sandbox-driver.js';
import { makeProcessDriver } from '../test/helpers/process-driver.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { makeSuiteDefinitions, suitePool } from '../test/sandbox/driver-suite.js';
import { writeHelloApp } from './lib/bench-app.js';
import { loadDirect, loadForwarderProcess, loadThroughCore } from './lib/dispatch-load.js';
import { measureDispatch, type DispatchRow, type DispatchShape, type LoadResult } from './lib/load.js';

function benchApp(shape: DispatchShape): string {
  return writeHelloApp(`minWarm: ${shape.sandboxes}, maxSize: ${shape.sandboxes}, concurrency: ${shape.concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`);
}

async function throughCore(shape: DispatchShape, durationMs: number, env: Record<string, string> = {}): Promise<LoadResult> {
  const core = await startUhlpDev(benchApp(shape), ['--log-level', 'error'], 180_000, undefined, env);
  try {
    return await loadThroughCore(core.url, '/bench/hello/{{id}}', shape.connections, durationMs, core.child.pid);
  } finally {
    await core.stop();
  }
}

async function direct(shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return onProcessRunners((driver, spec) => loadDirect(driver, spec, shape, durationMs));
}

async function forwarded(shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return loadForwarderProcess(shape, durationMs);
}

async function onProcessRunners(use: (driver: ProcessDriver, spec: SandboxSpec) => Promise<LoadResult>): Promise<LoadResult> {
  const driver = await makeProcessDriver();
  const spec = { appId: 'suite', pool: suitePool({ limits: { memoryMb: 128, cpus: 1, timeoutMs: 5000 } }), definitionsRoot: makeSuiteDefinitions(), labels: {} };
  try {
    return await use(driver, spec);
  } finally {
    await driver.close();
  }
}

export function benchWarmDispatch(durationMs: number, rounds: number): Promise<DispatchRow[]> {
  return measureDispatch(
    {
      direct: (shape) => direct(shape, durationMs),
      forwarder: (shape) => forwarded(shape, durationMs),
      core: (shape) => throughCore(shape, durationMs),
      // No bubblewrap (dev mode then serves unisolated): the same core, without the namespaces and seccomp.
      'core-unisolated': (shape) => throughCore(shape, durationMs, { UHLP_BWRAP: '/nonexistent/bwrap' }),
    },
    rounds,
  );
}
