/**
 * Warm dispatch: the same JIT component called through the core (`uhlp dev`, HTTP
 * ingress -> pool -> runner) and directly on runners (POST /execute on their Unix
 * sockets), side by side, at 1 and 16 connections. Each side gets as many warm
 * sandboxes as it has connections, so neither queues for a sandbox.
 */
import { silentLogger } from '../src/logger.js';
import { ProcessDriver } from '../src/sandbox/process-driver.js';
import { startUhlpDev } from '../test/helpers/uhlp-process.js';
import { makeSuiteDefinitions, suitePool } from '../test/sandbox/driver-suite.js';
import { writeBenchApp } from './lib/bench-app.js';
import { loadDirect, loadThroughCore } from './lib/dispatch-load.js';
import type { LoadResult } from './lib/load.js';

/** The component both sides run: through the core it reads the path, directly the trigger payload. */
export const BENCH_SCRIPT =
  'export const hello = (event) => ({ hello: event.httpDetails?.pathParameters.name ?? event.triggerDetails.payload.name, pid: process.pid });\n';

export interface DispatchRow {
  path: 'core' | 'direct';
  connections: number;
  result: LoadResult;
}

function benchApp(connections: number): string {
  return writeBenchApp(
    `apiVersion: uhlp.dev/v1alpha1
kind: AppDefinition
metadata: { name: bench }
spec:
  pools: [{ name: p, minWarm: ${connections}, maxSize: ${connections}, maxUses: 100000000, limits: { timeoutMs: 5000 } }]
  components: [{ id: hello, handler: JIT, pool: p, jit: { script: scripts/behaviours.mjs, function: hello } }]
  routes: [{ http: { method: GET, path: /hello/:name }, component: hello }]
`,
    // The same script the direct runners execute.
    { 'scripts/behaviours.mjs': BENCH_SCRIPT },
  );
}

async function throughCore(connections: number, durationMs: number): Promise<LoadResult> {
  const core = await startUhlpDev(benchApp(connections), ['--log-level', 'error']);
  try {
    return await loadThroughCore(core.url, (worker, sequence) => `/bench/hello/w${worker}-${sequence}`, connections, durationMs);
  } finally {
    await core.stop();
  }
}

async function direct(connections: number, durationMs: number): Promise<LoadResult> {
  const driver = new ProcessDriver({ logger: silentLogger() });
  const spec = { appId: 'suite', pool: suitePool({ limits: { memoryMb: 128, cpus: 1, timeoutMs: 5000 } }), definitionsRoot: makeSuiteDefinitions(), labels: {} };
  try {
    return await loadDirect(driver, spec, connections, durationMs);
  } finally {
    await driver.close();
  }
}

export async function benchWarmDispatch(durationMs: number): Promise<DispatchRow[]> {
  const rows: DispatchRow[] = [];
  for (const connections of [1, 16]) {
    rows.push({ path: 'direct', connections, result: await direct(connections, durationMs) });
    rows.push({ path: 'core', connections, result: await throughCore(connections, durationMs) });
  }
  return rows;
}
