/**
 * Both sides of a warm-dispatch comparison. Direct: the shape's sandboxes of a
 * driver, each started with the shape's concurrency, and one connection per
 * worker, spread over them; each sends POST /execute straight to the runner's
 * socket — the same request the core would send, minus the core.
 */
import { Client, Pool } from 'undici';
import type { SandboxDriver, SandboxHandle, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { executeBody } from '../../test/sandbox/driver-suite.js';
import { runLoad, type DispatchShape, type LoadResult } from './load.js';

/** Warm-up before the measured run, ms. */
const WARMUP_MS = 1500;

export async function loadDirect(driver: SandboxDriver, spec: SandboxSpec, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const sandboxSpec = { ...spec, pool: { ...spec.pool, concurrency: shape.concurrency } };
  const handles: SandboxHandle[] = await Promise.all(Array.from({ length: shape.sandboxes }, () => driver.create(sandboxSpec)));
  const clients = Array.from(
    { length: shape.connections },
    (_, worker) => new Client('http://sandbox', { socketPath: (handles[worker % handles.length]!.endpoint as { socketPath: string }).socketPath, pipelining: 1 }),
  );
  try {
    const send = async (worker: number, sequence: number): Promise<boolean> => {
      const requestId = `w${worker}-${sequence}`;
      const response = await clients[worker]!.request({
        method: 'POST',
        path: '/execute',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'x-request-id': requestId },
        body: executeBody(requestId, 'hello', requestId),
      });
      await response.body.text();
      return response.statusCode === 200;
    };
    await runLoad(send, shape.connections, WARMUP_MS);
    return await runLoad(send, shape.connections, durationMs);
  } finally {
    await Promise.all(clients.map((c) => c.close()));
    await Promise.all(handles.map((h) => driver.destroy(h, 'shutdown')));
  }
}

/** The "core" side: `connections` keep-alive connections to a running core, GET on an app route. */
export async function loadThroughCore(url: string, pathFor: (worker: number, sequence: number) => string, connections: number, durationMs: number): Promise<LoadResult> {
  const pool = new Pool(url, { connections, pipelining: 1 });
  try {
    const send = async (worker: number, sequence: number): Promise<boolean> => {
      const response = await pool.request({ method: 'GET', path: pathFor(worker, sequence) });
      await response.body.text();
      return response.statusCode === 200;
    };
    await runLoad(send, connections, WARMUP_MS);
    return await runLoad(send, connections, durationMs);
  } finally {
    await pool.close();
  }
}
