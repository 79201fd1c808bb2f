/**
 * Both sides of a warm-dispatch comparison. Direct: the shape's sandboxes of a
 * driver, each started with the shape's concurrency, and one connection per
 * worker, spread over them; each sends POST /execute straight to the runner's
 * socket — the same request the core would send, minus the core.
 */
import type { SandboxDriver, SandboxEndpoint, SandboxHandle, SandboxSpec } from '../../src/sandbox/sandbox-driver.js';
import { executeBody } from '../../test/sandbox/driver-suite.js';
import { startBareForwarder, startBareForwarderProcess } from './bare-forwarder.js';
import type { DispatchShape, LoadResult } from './load.js';
import { nativeLoad } from './native-load.js';
import { cpuPer, processTreeCpu, type ProcessTreeCpu } from './process-cpu.js';

export async function loadDirect(driver: SandboxDriver, spec: SandboxSpec, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return withSandboxes(driver, spec, shape, (handles) =>
    nativeLoad({
      targets: handles.map((h) => target(h.endpoint)),
      connections: shape.connections,
      method: 'POST',
      path: '/execute',
      headers: ['content-type: application/json', 'accept: application/json', 'x-request-id: {{id}}'],
      body: executeBody('{{id}}', 'hello', '{{id}}'),
      durationMs,
    }),
  );
}

/** The floor: the same sandboxes behind a bare forwarder (bare-forwarder.ts). */
export async function loadForwarded(driver: SandboxDriver, spec: SandboxSpec, shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  return withSandboxes(driver, spec, shape, async (handles) => {
    const forwarder = await startBareForwarder(handles.map((h) => h.endpoint));
    try {
      return await nativeLoad({ targets: [forwarder.target], connections: shape.connections, path: '/hello/{{id}}', durationMs });
    } finally {
      await forwarder.close();
    }
  });
}

/**
 * The floor as a process of its own with its sandboxes as its children (bare-forwarder.ts), like the core:
 * the result has the CPU the forwarder and its sandboxes used per request (cpuMsPerRequest).
 */
export async function loadForwarderProcess(shape: DispatchShape, durationMs: number): Promise<LoadResult> {
  const forwarder = await startBareForwarderProcess(shape.sandboxes, shape.concurrency);
  try {
    return await loadThroughCore(forwarder.url, '/hello/{{id}}', shape.connections, durationMs, forwarder.pid);
  } finally {
    await forwarder.close();
  }
}

/** Starts the shape's sandboxes, each with the shape's concurrency, for the length of `use`. */
async function withSandboxes<T>(driver: SandboxDriver, spec: SandboxSpec, shape: DispatchShape, use: (handles: SandboxHandle[]) => Promise<T>): Promise<T> {
  const sandboxSpec = { ...spec, pool: { ...spec.pool, concurrency: shape.concurrency } };
  const handles: SandboxHandle[] = await Promise.all(Array.from({ length: shape.sandboxes }, () => driver.create(sandboxSpec)));
  try {
    return await use(handles);
  } finally {
    await Promise.all(handles.map((h) => driver.destroy(h, 'shutdown')));
  }
}

/**
 * The "core" side: `connections` keep-alive connections to a running core, GET on an app route (`{{id}}` varies per request).
 * With the core's `pid`, the result has the CPU the core and its sandboxes used per request (cpuMsPerRequest);
 * `onPhase` is told as the measured time starts and ends (to read other figures over the same window).
 */
export async function loadThroughCore(url: string, pathTemplate: string, connections: number, durationMs: number, pid?: number, onPhase?: (phase: 'measuring' | 'measured') => void): Promise<LoadResult> {
  const { hostname, port } = new URL(url);
  let before: ProcessTreeCpu | undefined;
  let after: ProcessTreeCpu | undefined;
  const phase = (phase: 'measuring' | 'measured'): void => {
    onPhase?.(phase);
    if (pid === undefined) return;
    if (phase === 'measuring') before = processTreeCpu(pid);
    else after = processTreeCpu(pid);
  };
  const result = await nativeLoad({ targets: [`tcp:${hostname}:${port}`], connections, path: pathTemplate, durationMs, onPhase: phase });
  return before !== undefined && after !== undefined ? { ...result, cpuMsPerRequest: cpuPer(before, after, result.requests) } : result;
}

function target(endpoint: SandboxEndpoint): string {
  return endpoint.kind === 'unix' ? `unix:${endpoint.socketPath}` : `tcp:${endpoint.host}:${endpoint.port}`;
}
