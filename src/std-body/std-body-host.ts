/**
 * The std-body endpoint host: a spine client serving the shell and web routes
 * of the body-endpoints document. It holds no policy of its own beyond hard
 * limits; the core checks an app's capabilities before it invokes a route and
 * passes the web policy along in the payload.
 */
import type { GuardedFetchDependencies } from '../net/guarded-fetch.js';
import { type SpineClient, createSpineClient } from '../spine/spine-client.js';
import { SHELL_AFFORDANCE, SHELL_CAPABILITY, type ShellExecOptions, handleShellExec } from './shell-exec.js';
import { WEB_AFFORDANCE, WEB_CAPABILITY, handleWebFetch } from './web-fetch.js';

export interface StdBodyHostOptions {
  /** The core's spine socket. */
  readonly socketPath: string;
  /** The core's secret, or how to read it on each registration (see SpineClientOptions.secret). */
  readonly secret: string | (() => string | undefined);
  /** Shell options (kill grace). @defaultValue {} */
  readonly shell?: ShellExecOptions;
  /** Web fetch dependencies (DNS lookup). @defaultValue {} */
  readonly web?: GuardedFetchDependencies;
  /** First reconnect delay. @defaultValue 100 */
  readonly initialReconnectDelayMs?: number;
  /** Ceiling of the reconnect delay. @defaultValue 5000 */
  readonly maxReconnectDelayMs?: number;
}

/** Builds the host with both routes; call `start()` to connect. */
export function createStdBodyHost(options: StdBodyHostOptions): SpineClient {
  const client = createSpineClient({
    socketPath: options.socketPath,
    secret: options.secret,
    ...(options.initialReconnectDelayMs !== undefined ? { initialReconnectDelayMs: options.initialReconnectDelayMs } : {}),
    ...(options.maxReconnectDelayMs !== undefined ? { maxReconnectDelayMs: options.maxReconnectDelayMs } : {}),
  });
  client.handle(SHELL_AFFORDANCE, SHELL_CAPABILITY, (payload) => handleShellExec(payload, options.shell));
  client.handle(WEB_AFFORDANCE, WEB_CAPABILITY, (payload) => handleWebFetch(payload, options.web));
  return client;
}
