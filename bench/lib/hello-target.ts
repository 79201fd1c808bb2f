/**
 * The plain path's two sides under one load: the core (`uhlp dev` with
 * bench-app.ts's hello app) or the bare forwarder (bare-forwarder.ts, its own
 * process with the same sandboxes), each with `sandboxes` sandboxes of
 * `concurrency` executions; `env` joins the served process's environment.
 */
import { startUhlpDev } from '../../test/helpers/uhlp-process.js';
import { startBareForwarderProcess } from './bare-forwarder.js';
import { writeHelloApp } from './bench-app.js';

export interface HelloTarget {
  readonly url: string;
  /** The serving process (its threads and children are the side's CPU). */
  readonly pid: number;
  /** The load generator's path template. */
  readonly path: string;
  stop(): Promise<unknown>;
}

export function serveHello(target: 'core' | 'forwarder', sandboxes: number, concurrency: number, env: Record<string, string> = {}): Promise<HelloTarget> {
  if (target === 'forwarder') {
    return startBareForwarderProcess(sandboxes, concurrency, env).then((bare) => ({ url: bare.url, pid: bare.pid, path: '/hello/{{id}}', stop: () => bare.close() }));
  }
  const pool = `minWarm: ${sandboxes}, maxSize: ${sandboxes}, concurrency: ${concurrency}, maxUses: 100000000, limits: { timeoutMs: 5000 }`;
  return startUhlpDev(writeHelloApp(pool), ['--log-level', 'error'], 180_000, undefined, env).then((core) => ({ url: core.url, pid: core.child.pid!, path: '/bench/hello/{{id}}', stop: () => core.stop() }));
}
